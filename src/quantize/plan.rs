//! The plan: which tensors llama-quantize quantizes, to which type, in which order, and the
//! metadata it writes, computed from the headers alone (no tensor data is read).

use super::arch::Hparams;
use super::cnum::stoi;
use super::options::{Options, TensorType};
use super::preset::default_type;
use super::QuantizeError;
use crate::keys::FileType;
use crate::quant::GgmlType;
use crate::schema::{GgufString, Header, KeyValue, Value};
use std::collections::BTreeMap;

/// One tensor of the output, in output order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedTensor {
    /// The name written (layers renumbered by `--prune-layers`).
    pub name: GgufString,
    /// The name in the input.
    pub source_name: GgufString,
    /// Which input shard holds it (0 for a single file).
    pub shard: usize,
    /// Its index among that shard's tensors.
    pub index: usize,
    /// The dimensions written: the input's with trailing 1s dropped, as ggml writes them.
    pub dims: Vec<u64>,
    /// The input type.
    pub from: GgmlType,
    /// The output type (`from` when copied).
    pub to: GgmlType,
    /// Whether llama.cpp's rules let it be quantized at all.
    pub quantizable: bool,
    /// Whether its type needs an importance matrix.
    pub requires_imatrix: bool,
    /// Whether its rows are not whole blocks of the chosen type and it falls back.
    pub fallback: bool,
}

impl PlannedTensor {
    /// Whether its data changes (dequantized and quantized again).
    pub fn converts(&self) -> bool {
        self.from != self.to
    }

    /// Bytes of its data in the input.
    pub fn input_bytes(&self) -> u64 {
        self.from.ggml_nbytes(&self.dims)
    }

    /// Bytes of its data in the output.
    pub fn output_bytes(&self) -> u64 {
        self.to.ggml_nbytes(&self.dims)
    }
}

/// What llama-quantize will write for a model and options: the tensors in order with their
/// types, and each output file's metadata.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The hyperparameters the rules read.
    pub hparams: Hparams,
    /// `general.file_type` written.
    pub file_type: u32,
    /// The tensors, in output order.
    pub tensors: Vec<PlannedTensor>,
    /// The metadata of each output file (one unless `--keep-split`), in key order.
    pub metadata: Vec<Vec<KeyValue>>,
    /// Which output file each tensor goes to (all 0 unless `--keep-split`).
    pub output_of: Vec<usize>,
    /// How many tensors fell back to another type.
    pub fallbacks: usize,
}

impl Plan {
    /// The tensors that need an importance matrix and would be quantized.
    pub fn needing_imatrix(&self) -> impl Iterator<Item = &PlannedTensor> {
        self.tensors
            .iter()
            .filter(|t| t.quantizable && t.requires_imatrix)
    }

    /// Bytes of tensor data in the input and the output.
    pub fn sizes(&self) -> (u64, u64) {
        self.tensors.iter().fold((0, 0), |(a, b), t| {
            (a + t.input_bytes(), b + t.output_bytes())
        })
    }

    /// Elements of all tensors (for bits per weight).
    pub fn elements(&self) -> u64 {
        self.tensors
            .iter()
            .map(|t| t.dims.iter().product::<u64>())
            .sum()
    }
}

/// Broad tensor categories llama.cpp's type rules use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

fn has(name: &[u8], needle: &str) -> bool {
    name.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn is_token_embd(name: &[u8]) -> bool {
    name == b"token_embd.weight" || name == b"per_layer_token_embd.weight"
}

fn category(name: &[u8]) -> Category {
    use Category::*;
    if name == b"output.weight" {
        return Output;
    }
    if is_token_embd(name) {
        return TokenEmbd;
    }
    for (needle, c) in [
        ("attn_qkv.weight", AttnQkv),
        ("attn_kv_b.weight", AttnKvB),
        ("attn_v.weight", AttnV),
        ("attn_k.weight", AttnK),
        ("attn_q.weight", AttnQ),
        ("attn_output.weight", AttnOutput),
        ("ffn_up", FfnUp),
        ("ffn_gate", FfnGate),
        ("ffn_down", FfnDown),
    ] {
        if has(name, needle) {
            return c;
        }
    }
    Other
}

fn is_attn_v(c: Category) -> bool {
    matches!(c, Category::AttnV | Category::AttnQkv | Category::AttnKvB)
}

/// Names no preset quantizes (llama.cpp's `tensor_allows_quantization`), beyond the shape
/// and `weight` suffix checks.
const NEVER_QUANTIZED: &[&str] = &[
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
];

/// More names glm5-next keeps as they are.
const GLM5_NEXT_KEPT: &[&str] = &[
    "hc_",
    "indexer.attn_q_b",
    "indexer.attn_k",
    "indexer.proj",
    "indexer_compressor_gate",
    "indexer_compressor_ape",
    "ssm_f_a.weight",
    "ssm_f_b.weight",
    "ssm_g_a.weight",
    "ssm_g_b.weight",
    "ssm_beta.weight",
    "attn_kv_a_mqa.weight",
    "attn_k_b.weight",
    "attn_v_b.weight",
];

/// ggml's `ggml_n_dims`: dimensions up to the last one above 1 (at least one).
fn n_dims(dims: &[u64]) -> usize {
    dims.iter().rposition(|&d| d > 1).map_or(1, |i| i + 1)
}

fn allows_quantization(opts: &Options, arch: &str, name: &[u8], dims: &[u64]) -> bool {
    if opts.preset.is_copy() || n_dims(dims) < 2 {
        return false;
    }
    let kept = (opts.leave_output_tensor && name == b"output.weight")
        || NEVER_QUANTIZED.iter().any(|n| has(name, n))
        || (arch == "glm5-next" && GLM5_NEXT_KEPT.iter().any(|n| has(name, n)))
        || name == b"position_embd.weight"
        || name == b"token_types.weight";
    name.ends_with(b"weight") && !kept
}

/// C's `sscanf(name, "blk.%d.", &layer) == 1`, with `%d`'s reading (blanks, a sign, digits;
/// a value past `long` saturates and is then cut to `int`, as glibc does).
pub(crate) fn scan_layer(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(b"blk.")?;
    let rest = match rest.iter().position(|b| !b" \t\n\x0b\x0c\r".contains(b)) {
        Some(i) => &rest[i..],
        None => return None,
    };
    let (neg, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    let mut v: i64 = 0;
    let mut saturated = false;
    for &b in &digits[..n] {
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add(i64::from(b - b'0')))
        {
            Some(x) => v = x,
            None => {
                saturated = true;
                break;
            }
        }
    }
    let v = match (saturated, neg) {
        (true, false) => i64::MAX,
        (true, true) => i64::MIN,
        (false, true) => -v,
        (false, false) => v,
    };
    Some(v as i32)
}

/// The position of the first `blk.N.` in a name and N's digits (`std::regex_search` of
/// `blk\.(\d+)\.`).
fn find_block(name: &[u8]) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = name[from..].windows(4).position(|w| w == b"blk.") {
        let start = from + i + 4;
        let n = name[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if n > 0 && name.get(start + n) == Some(&b'.') {
            return Some((start, n));
        }
        from = from + i + 1;
    }
    None
}

/// A pruned model's tensor name with its layer number as it was before pruning: the name its
/// importance weights have (llama-quantize's `remap_imatrix`).
pub(crate) fn unpruned_name(t: &PlannedTensor) -> String {
    let (Some((at, len)), Some((src_at, src_len))) = (
        find_block(t.name.as_bytes()),
        find_block(t.source_name.as_bytes()),
    ) else {
        return t.name.to_string();
    };
    let src = &t.source_name.as_bytes()[src_at..src_at + src_len];
    let original: u64 = std::str::from_utf8(src)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let mut name = t.name.as_bytes().to_vec();
    name.splice(at..at + len, original.to_string().into_bytes());
    String::from_utf8_lossy(&name).into_owned()
}

/// The state llama.cpp's type rules keep across tensors.
struct Counters {
    n_attention_wv: i64,
    n_ffn: i64,
    i_attention_wv: i64,
    i_ffn_down: i64,
    i_ffn_gate: i64,
    i_ffn_up: i64,
    tied_embeddings: bool,
    fallbacks: usize,
}

fn use_more_bits(i: i64, n: i64) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

struct Rules<'a> {
    opts: &'a Options,
    hp: &'a Hparams,
    ftype: FileType,
    c: Counters,
}

impl<'a> Rules<'a> {
    /// The layer a counted tensor is in: the counter, or for mixtures of experts the number
    /// in its name (llama.cpp: experts are not stored in layer order).
    fn layer(&self, counter: i64, name: &[u8]) -> Result<(i64, i64), QuantizeError> {
        let n = self.c.n_ffn;
        if self.hp.n_expert > 1 {
            let shown = String::from_utf8_lossy(name).into_owned();
            let Some(i) = scan_layer(name) else {
                return Err(QuantizeError::Plan(format!(
                    "Failed to determine layer for tensor {shown}"
                )));
            };
            let i = i64::from(i);
            if i < 0 || i >= n {
                return Err(QuantizeError::Plan(format!(
                    "Bad layer {i} for tensor {shown}. Must be in [0, {n})"
                )));
            }
            return Ok((i, n));
        }
        Ok((counter, n))
    }

    /// llama.cpp's `llama_tensor_get_type_impl`: the mixture's choice for one tensor. The
    /// chain follows llama.cpp's branch for branch (some give the same type), so that each
    /// can be read against it.
    #[allow(clippy::if_same_then_else)]
    fn mixture(
        &mut self,
        mut ty: GgmlType,
        name: &[u8],
        dims: &[u64],
        cat: Category,
    ) -> Result<GgmlType, QuantizeError> {
        use Category as C;
        use FileType as F;
        use GgmlType as G;
        let ft = self.ftype;
        let arch = self.hp.arch.as_str();
        let falcon = arch == "falcon";
        let n_expert = self.hp.n_expert;
        let gqa = self.hp.n_gqa();
        let is = |list: &[F]| list.contains(&ft);
        if arch == "glm5-next"
            && (has(name, "attn_q_a") || has(name, "attn_q_b") || has(name, "nextn.eh_proj"))
            && !matches!(ty, G::F32 | G::BF16 | G::F16)
        {
            return Ok(G::Q8_0);
        }
        if cat == C::Output || (self.c.tied_embeddings && cat == C::TokenEmbd) {
            if let Some(t) = self.opts.output_tensor_type {
                ty = t;
            } else {
                let nx = dims.first().copied().unwrap_or(1);
                if ft == F::MOSTLY_MXFP4_MOE || falcon || nx % ty.block_size() != 0 {
                    ty = G::Q8_0;
                } else if is(&[
                    F::MOSTLY_IQ2_XXS,
                    F::MOSTLY_IQ2_XS,
                    F::MOSTLY_IQ3_XXS,
                    F::MOSTLY_IQ1_S,
                    F::MOSTLY_IQ2_S,
                    F::MOSTLY_IQ2_M,
                    F::MOSTLY_IQ1_M,
                ]) {
                    ty = G::Q5_K;
                } else if ty != G::Q8_0 {
                    ty = G::Q6_K;
                }
            }
        } else if ft == F::MOSTLY_MXFP4_MOE {
            let ffn = matches!(cat, C::FfnUp | C::FfnGate | C::FfnDown);
            let experts = dims.get(2).copied().unwrap_or(1) > 1;
            ty = if experts && (arch != "bailingmoe3" || ffn) {
                G::MXFP4
            } else {
                G::Q8_0
            };
        } else if cat == C::TokenEmbd {
            if let Some(t) = self.opts.token_embedding_type {
                ty = t;
            } else if is(&[
                F::MOSTLY_IQ2_XXS,
                F::MOSTLY_IQ2_XS,
                F::MOSTLY_IQ1_S,
                F::MOSTLY_IQ1_M,
            ]) {
                ty = G::Q2_K;
            } else if is(&[F::MOSTLY_IQ2_S, F::MOSTLY_IQ2_M, F::MOSTLY_IQ3_XXS]) {
                ty = G::IQ3_S;
            } else if is(&[F::MOSTLY_TQ1_0, F::MOSTLY_TQ2_0, F::MOSTLY_Q2_0]) {
                ty = G::Q4_K;
            }
        } else if is(&[
            F::MOSTLY_IQ2_XXS,
            F::MOSTLY_IQ2_XS,
            F::MOSTLY_IQ1_S,
            F::MOSTLY_IQ2_S,
            F::MOSTLY_IQ2_M,
            F::MOSTLY_IQ1_M,
        ]) {
            let s_or_m = is(&[F::MOSTLY_IQ2_S, F::MOSTLY_IQ2_M]);
            if is_attn_v(cat) {
                ty = if gqa >= 4 || n_expert >= 4 {
                    G::Q4_K
                } else if s_or_m {
                    G::IQ3_S
                } else {
                    G::Q2_K
                };
                self.c.i_attention_wv += 1;
            } else if n_expert == 8 && cat == C::AttnK {
                ty = G::Q4_K;
            } else if cat == C::FfnDown {
                if self.c.i_ffn_down < self.c.n_ffn / 8 {
                    ty = if s_or_m { G::IQ3_S } else { G::Q2_K };
                }
                self.c.i_ffn_down += 1;
            } else if cat == C::AttnOutput {
                if n_expert == 8 {
                    ty = G::Q5_K;
                } else if is(&[F::MOSTLY_IQ1_S, F::MOSTLY_IQ1_M]) {
                    ty = G::IQ2_XXS;
                } else if s_or_m {
                    ty = G::IQ3_S;
                }
            }
        } else if is_attn_v(cat) {
            let (i, n) = (self.c.i_attention_wv, self.c.n_attention_wv);
            if ft == F::MOSTLY_Q2_K {
                ty = if gqa >= 4 { G::Q4_K } else { G::Q3_K };
            } else if ft == F::MOSTLY_Q2_K_S && gqa >= 4 {
                ty = G::Q4_K;
            } else if ft == F::MOSTLY_IQ3_XXS {
                ty = if gqa >= 4 {
                    G::Q4_K
                } else if !self.opts.has_imatrix {
                    G::IQ3_S
                } else {
                    G::IQ3_XXS
                };
            } else if is(&[F::MOSTLY_IQ3_XS, F::MOSTLY_IQ3_S]) && gqa >= 4 {
                ty = G::Q4_K;
            } else if ft == F::MOSTLY_IQ3_M {
                ty = G::Q4_K;
            } else if ft == F::MOSTLY_Q3_K_M {
                ty = if i < 2 { G::Q5_K } else { G::Q4_K };
            } else if ft == F::MOSTLY_Q3_K_L {
                ty = G::Q5_K;
            } else if is(&[F::MOSTLY_IQ4_NL, F::MOSTLY_IQ4_XS]) && gqa >= 4 {
                ty = G::Q5_K;
            } else if is(&[F::MOSTLY_Q4_K_M, F::MOSTLY_Q5_K_M]) && use_more_bits(i, n) {
                ty = G::Q6_K;
            } else if ft == F::MOSTLY_Q4_K_S && i < 4 {
                ty = G::Q5_K;
            }
            if self.hp.is_70b && matches!(ty, G::Q3_K | G::Q4_K) {
                ty = G::Q5_K;
            }
            if n_expert == 8 {
                ty = G::Q8_0;
            }
            self.c.i_attention_wv += 1;
        } else if cat == C::AttnK {
            if n_expert == 8 {
                ty = G::Q8_0;
            } else if ft == F::MOSTLY_IQ3_XS {
                ty = G::IQ3_XXS;
            } else if ft == F::MOSTLY_IQ3_XXS {
                ty = G::IQ2_S;
            }
        } else if cat == C::AttnQ {
            if ft == F::MOSTLY_IQ3_XS {
                ty = G::IQ3_XXS;
            } else if ft == F::MOSTLY_IQ3_XXS {
                ty = G::IQ2_S;
            }
        } else if cat == C::FfnDown {
            let (i, n) = self.layer(self.c.i_ffn_down, name)?;
            let imatrix = self.opts.has_imatrix;
            if ft == F::MOSTLY_Q2_K {
                ty = G::Q3_K;
            } else if ft == F::MOSTLY_Q2_K_S {
                if i < n / 8 {
                    ty = G::Q4_K;
                }
            } else if ft == F::MOSTLY_IQ3_XXS && !imatrix {
                ty = if i < n / 8 { G::Q4_K } else { G::Q3_K };
            } else if ft == F::MOSTLY_Q3_K_M {
                ty = if i < n / 16 {
                    G::Q5_K
                } else if !falcon || use_more_bits(i, n) {
                    G::Q4_K
                } else {
                    G::Q3_K
                };
            } else if ft == F::MOSTLY_IQ3_M && (i < n / 8 || (n_expert == 8 && use_more_bits(i, n)))
            {
                ty = G::Q4_K;
            } else if ft == F::MOSTLY_Q3_K_L {
                ty = if falcon { G::Q4_K } else { G::Q5_K };
            } else if ft == F::MOSTLY_Q4_K_M {
                if falcon {
                    ty = if i < n / 16 {
                        G::Q6_K
                    } else if use_more_bits(i, n) {
                        G::Q5_K
                    } else {
                        G::Q4_K
                    };
                } else if use_more_bits(i, n) {
                    ty = G::Q6_K;
                }
            } else if i < n / 8 && is(&[F::MOSTLY_IQ4_NL, F::MOSTLY_IQ4_XS]) && !imatrix {
                ty = G::Q5_K;
            } else if ft == F::MOSTLY_Q5_K_M && use_more_bits(i, n) {
                ty = G::Q6_K;
            } else if ft == F::MOSTLY_Q4_K_S && !falcon && i < n / 8 {
                ty = G::Q5_K;
            } else if is(&[F::MOSTLY_Q4_0, F::MOSTLY_Q5_0]) && imatrix && i < n / 8 {
                ty = if ft == F::MOSTLY_Q4_0 {
                    G::Q4_1
                } else {
                    G::Q5_1
                };
            }
            self.c.i_ffn_down += 1;
        } else if cat == C::AttnOutput {
            if !falcon {
                if n_expert == 8 {
                    if is(&[
                        F::MOSTLY_Q2_K,
                        F::MOSTLY_IQ3_XS,
                        F::MOSTLY_IQ3_XXS,
                        F::MOSTLY_Q3_K_S,
                        F::MOSTLY_Q3_K_M,
                        F::MOSTLY_IQ4_NL,
                        F::MOSTLY_Q4_K_S,
                        F::MOSTLY_Q4_K_M,
                        F::MOSTLY_IQ3_S,
                        F::MOSTLY_IQ3_M,
                        F::MOSTLY_IQ4_XS,
                    ]) {
                        ty = G::Q5_K;
                    }
                } else if ft == F::MOSTLY_Q2_K {
                    ty = G::Q3_K;
                } else if ft == F::MOSTLY_IQ3_XXS {
                    ty = G::IQ3_S;
                } else if ft == F::MOSTLY_Q3_K_M || ft == F::MOSTLY_IQ3_M {
                    ty = G::Q4_K;
                } else if ft == F::MOSTLY_Q3_K_L {
                    ty = G::Q5_K;
                }
            } else if ft == F::MOSTLY_Q3_K_L {
                ty = G::Q4_K;
            }
        } else if cat == C::AttnQkv {
            if is(&[F::MOSTLY_Q3_K_M, F::MOSTLY_Q3_K_L, F::MOSTLY_IQ3_M]) {
                ty = G::Q4_K;
            } else if ft == F::MOSTLY_Q4_K_M {
                ty = G::Q5_K;
            } else if ft == F::MOSTLY_Q5_K_M {
                ty = G::Q6_K;
            }
        } else if cat == C::FfnGate || cat == C::FfnUp {
            let counter = if cat == C::FfnGate {
                self.c.i_ffn_gate
            } else {
                self.c.i_ffn_up
            };
            let (i, n) = self.layer(counter, name)?;
            if ft == F::MOSTLY_IQ3_XS && i >= n / 8 && i < 7 * n / 8 {
                ty = G::IQ3_XXS;
            }
            if cat == C::FfnGate {
                self.c.i_ffn_gate += 1;
            } else {
                self.c.i_ffn_up += 1;
            }
        }
        Ok(ty)
    }

    /// llama.cpp's `tensor_type_fallback`: a type whose blocks fit the rows.
    fn fallback(
        &mut self,
        name: &[u8],
        dims: &[u64],
        ty: GgmlType,
    ) -> Result<(GgmlType, bool), QuantizeError> {
        use GgmlType as G;
        let ncols = dims.first().copied().unwrap_or(1);
        if ncols % ty.block_size() == 0 {
            return Ok((ty, false));
        }
        self.c.fallbacks += 1;
        let mut to = match ty {
            G::IQ1_S
            | G::IQ1_M
            | G::IQ2_XXS
            | G::IQ2_XS
            | G::IQ2_S
            | G::IQ3_XXS
            | G::IQ3_S
            | G::IQ4_XS => G::IQ4_NL,
            G::Q2_0 | G::Q2_K | G::Q3_K | G::TQ1_0 | G::TQ2_0 => G::Q4_0,
            G::Q4_K => G::Q5_0,
            G::Q5_K => G::Q5_1,
            G::Q6_K => G::Q8_0,
            _ if ty.block_size() <= 32 => ty,
            _ => {
                return Err(QuantizeError::Plan(format!(
                    "no tensor type fallback is defined for type {ty} (tensor {})",
                    String::from_utf8_lossy(name)
                )))
            }
        };
        if ncols % to.block_size() != 0 {
            to = G::F16;
        }
        Ok((to, true))
    }

    /// llama.cpp's `llama_tensor_get_type` for a tensor it may quantize.
    fn choose(
        &mut self,
        name: &[u8],
        dims: &[u64],
        default: GgmlType,
    ) -> Result<(GgmlType, bool), QuantizeError> {
        let cat = category(name);
        let text = String::from_utf8_lossy(name);
        let named = |types: &'a [TensorType]| types.iter().find(|t| (t.matches)(&text));
        if let Some(t) = self.opts.token_embedding_type {
            // per_layer_token_embd follows --token-embedding-type unless a --tensor-type names it.
            let overridden =
                name == b"per_layer_token_embd.weight" && named(&self.opts.tensor_types).is_some();
            if cat == Category::TokenEmbd && !overridden {
                return Ok((t, false));
            }
        }
        if let (Some(t), Category::Output) = (self.opts.output_tensor_type, cat) {
            return Ok((t, false));
        }
        if !default.is_quantized() {
            return Ok((default, false));
        }
        let mut ty = default;
        let manual = named(&self.opts.tensor_types);
        if let Some(m) = manual {
            ty = m.ty;
        }
        if manual.is_none() && !self.opts.pure {
            ty = self.mixture(ty, name, dims, cat)?;
        }
        self.fallback(name, dims, ty)
    }
}

/// llama.cpp's `tensor_requires_imatrix`.
fn requires_imatrix(name: &[u8], to: GgmlType, ft: FileType) -> bool {
    use GgmlType as G;
    if is_token_embd(name) || name == b"output.weight" {
        return false;
    }
    match to {
        G::IQ3_XXS | G::IQ2_XXS | G::IQ2_XS | G::IQ2_S | G::IQ1_M | G::IQ1_S => true,
        G::Q2_K => ft == FileType::MOSTLY_Q2_K_S,
        _ => false,
    }
}

/// The file type llama.cpp's loader gives a file: `general.file_type` if it is a UINT32,
/// else the type most tensors have, marked as guessed (`| 1024`).
fn loaded_file_type(metadata: &[KeyValue], types: &[GgmlType]) -> u32 {
    if let Some(Value::Uint32(ft)) = metadata
        .iter()
        .find(|kv| kv.key == *"general.file_type")
        .map(|kv| &kv.value)
    {
        return *ft;
    }
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    let (mut best, mut most) = (GgmlType::F32, 0);
    for &t in types {
        let n = counts.entry(t.id()).or_default();
        *n += 1;
        if *n > most {
            (best, most) = (t, *n);
        }
    }
    use FileType as F;
    use GgmlType as G;
    let ft = match best {
        G::F16 => F::MOSTLY_F16,
        G::BF16 => F::MOSTLY_BF16,
        G::Q4_0 => F::MOSTLY_Q4_0,
        G::Q4_1 => F::MOSTLY_Q4_1,
        G::Q5_0 => F::MOSTLY_Q5_0,
        G::Q5_1 => F::MOSTLY_Q5_1,
        G::Q8_0 => F::MOSTLY_Q8_0,
        G::Q2_K => F::MOSTLY_Q2_K,
        G::Q3_K => F::MOSTLY_Q3_K_M,
        G::Q4_K => F::MOSTLY_Q4_K_M,
        G::Q5_K => F::MOSTLY_Q5_K_M,
        G::Q6_K => F::MOSTLY_Q6_K,
        G::TQ1_0 => F::MOSTLY_TQ1_0,
        G::TQ2_0 => F::MOSTLY_TQ2_0,
        G::IQ2_XXS => F::MOSTLY_IQ2_XXS,
        G::IQ2_XS => F::MOSTLY_IQ2_XS,
        G::IQ2_S => F::MOSTLY_IQ2_S,
        G::IQ3_XXS => F::MOSTLY_IQ3_XXS,
        G::IQ1_S => F::MOSTLY_IQ1_S,
        G::IQ1_M => F::MOSTLY_IQ1_M,
        G::IQ4_NL => F::MOSTLY_IQ4_NL,
        G::IQ4_XS => F::MOSTLY_IQ4_XS,
        G::IQ3_S => F::MOSTLY_IQ3_S,
        G::NVFP4 => F::MOSTLY_NVFP4,
        G::Q1_0 => F::MOSTLY_Q1_0,
        G::Q2_0 => F::MOSTLY_Q2_0,
        _ => F::ALL_F32,
    };
    ft as u32 | FileType::GUESSED as u32
}

/// Sets a key as ggml's `gguf_set_val_*` does: removed where it was, appended at the end.
pub(crate) fn set(kvs: &mut Vec<KeyValue>, key: &str, value: Value) {
    kvs.retain(|kv| kv.key != *key);
    kvs.push(KeyValue {
        key: key.into(),
        value,
    });
}

/// One input tensor, as the plan sees it.
struct Weight<'a> {
    name: &'a [u8],
    shard: usize,
    index: usize,
    offset: u64,
    dims: &'a [u64],
    ty: GgmlType,
}

impl Plan {
    /// The plan for a model whose shards' headers are `shards` (one for a single file), in
    /// shard order, quantized with `opts`.
    pub fn new(shards: &[&Header], opts: &Options) -> Result<Plan, QuantizeError> {
        let first = shards
            .first()
            .ok_or_else(|| QuantizeError::Plan("no input".into()))?;
        let hp = Hparams::read(first, &opts.kv_overrides, opts.any_architecture)?;
        // Every tensor of every shard, ordered as the loader's map orders them: by the layer
        // number its name starts with (none first), then by name.
        let mut weights = Vec::new();
        for (shard, header) in shards.iter().enumerate() {
            for (index, info) in header.tensor_infos.iter().enumerate() {
                let ty = GgmlType::from_id(info.ggml_type).ok_or_else(|| {
                    QuantizeError::Plan(format!(
                        "tensor '{}' has an unknown type {}",
                        info.name, info.ggml_type
                    ))
                })?;
                weights.push(Weight {
                    name: info.name.as_bytes(),
                    shard,
                    index,
                    offset: info.offset,
                    dims: &info.dimensions,
                    ty,
                });
            }
        }
        weights.sort_by(|a, b| {
            let key = |w: &Weight| scan_layer(w.name).unwrap_or(-1);
            key(a).cmp(&key(b)).then_with(|| a.name.cmp(b.name))
        });
        if let Some(w) = weights.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(QuantizeError::Plan(format!(
                "invalid model: tensor '{}' is duplicated",
                String::from_utf8_lossy(w[0].name)
            )));
        }
        let all_types: Vec<GgmlType> = weights.iter().map(|w| w.ty).collect();

        let ftype_written = if opts.preset.is_copy() {
            loaded_file_type(&first.metadata, &all_types)
        } else {
            opts.preset.file_type as u32
        };
        // The rules compare with the preset's file type (COPY quantizes nothing).
        let ftype = FileType::from_repr(ftype_written).unwrap_or(FileType::ALL_F32);
        let default = if opts.preset.is_copy() {
            GgmlType::F32
        } else {
            default_type(opts.preset.file_type).expect("presets have default types")
        };

        // Metadata: the input's, then llama-quantize's changes in its order.
        let mut kvs = first.metadata.clone();
        set(&mut kvs, "general.quantization_version", Value::Uint32(2));
        set(&mut kvs, "general.file_type", Value::Uint32(ftype_written));
        kvs.retain(|kv| !crate::shards::is_split_key(kv.key.as_bytes()));
        for (key, o) in &opts.kv_overrides {
            set(&mut kvs, key, o.value());
        }

        // Pruning renames layers in map order.
        let mut prune = opts.prune_layers.clone();
        prune.sort_unstable();
        prune.dedup();
        let mut mapped: BTreeMap<u64, Option<u64>> = BTreeMap::new();
        let mut next_id: u64 = 0;
        let mut kept = Vec::new();
        for w in weights {
            let mut name = w.name.to_vec();
            if !prune.is_empty() {
                if let Some((at, len)) = find_block(w.name) {
                    let digits = std::str::from_utf8(&w.name[at..at + len]).expect("ASCII");
                    let blk = (stoi(digits).and_then(|b| u64::try_from(b).ok()))
                        .ok_or_else(|| QuantizeError::Plan(format!("stoi: {digits}")))?;
                    let to = *mapped.entry(blk).or_insert_with(|| {
                        if prune.iter().any(|&p| u64::from(p) == blk) {
                            None
                        } else if blk < u64::from(prune[0]) {
                            next_id = blk + 1;
                            Some(blk)
                        } else {
                            next_id += 1;
                            Some(next_id - 1)
                        }
                    });
                    match to {
                        None => continue,
                        Some(to) => {
                            name.splice(at..at + len, to.to_string().into_bytes());
                        }
                    }
                }
            }
            kept.push((name, w));
        }
        if !prune.is_empty() {
            let key = format!("{}.block_count", hp.arch);
            set(&mut kvs, &key, Value::Uint32(next_id as u32));
        }
        if opts.keep_split {
            kept.sort_by_key(|(_, a)| (a.shard, a.offset));
        }

        let n_attention_wv = kept.iter().filter(|(n, _)| is_attn_v(category(n))).count() as i64;
        let tied_embeddings = !kept.iter().any(|(n, _)| n == b"output.weight");
        let mut rules = Rules {
            opts,
            hp: &hp,
            ftype,
            c: Counters {
                n_attention_wv,
                n_ffn: i64::from(hp.n_layer),
                i_attention_wv: 0,
                i_ffn_down: 0,
                i_ffn_gate: 0,
                i_ffn_up: 0,
                tied_embeddings,
                fallbacks: 0,
            },
        };
        let mut tensors = Vec::with_capacity(kept.len());
        for (name, w) in &kept {
            let quantizable = allows_quantization(opts, &hp.arch, name, w.dims);
            let (to, fallback) = if quantizable {
                rules.choose(name, w.dims, default)?
            } else {
                (w.ty, false)
            };
            tensors.push(PlannedTensor {
                name: GgufString::from_bytes(name.clone()),
                source_name: GgufString::from_bytes(w.name.to_vec()),
                shard: w.shard,
                index: w.index,
                dims: w.dims[..n_dims(w.dims).min(w.dims.len())].to_vec(),
                from: w.ty,
                to,
                quantizable,
                requires_imatrix: requires_imatrix(name, to, ftype),
                fallback,
            });
        }

        let n_split = if opts.keep_split {
            kept.iter().map(|(_, w)| w.shard + 1).max().unwrap_or(1)
        } else {
            1
        };
        let output_of: Vec<usize> = kept
            .iter()
            .map(|(_, w)| if opts.keep_split { w.shard } else { 0 })
            .collect();
        let metadata = (0..n_split)
            .map(|i| {
                if n_split == 1 {
                    return kvs.clone();
                }
                // Shards after the first start empty, as llama-quantize makes them.
                let mut m = if i == 0 { kvs.clone() } else { Vec::new() };
                set(&mut m, "split.no", Value::Uint16(i as u16));
                set(&mut m, "split.count", Value::Uint16(n_split as u16));
                set(
                    &mut m,
                    "split.tensors.count",
                    Value::Int32(tensors.len() as i32),
                );
                m
            })
            .collect();
        let fallbacks = rules.c.fallbacks;
        Ok(Plan {
            hparams: hp,
            file_type: ftype_written,
            tensors,
            metadata,
            output_of,
            fallbacks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_scan_is_sscanf() {
        assert_eq!(scan_layer(b"blk.12.attn_q.weight"), Some(12));
        assert_eq!(scan_layer(b"blk.-3.x"), Some(-3));
        assert_eq!(scan_layer(b"blk. 7x"), Some(7));
        assert_eq!(scan_layer(b"blk.x"), None);
        assert_eq!(scan_layer(b"output.weight"), None);
        assert_eq!(scan_layer(b"blk.99999999999999999999."), Some(-1));
    }

    #[test]
    fn block_search_is_the_regex() {
        assert_eq!(find_block(b"v.blk.3.attn"), Some((6, 1)));
        assert_eq!(find_block(b"blk.x.blk.12.y"), Some((10, 2)));
        assert_eq!(find_block(b"blk.12"), None);
        assert_eq!(find_block(b"token_embd.weight"), None);
    }

    #[test]
    fn categories() {
        assert_eq!(category(b"blk.0.attn_v.weight"), Category::AttnV);
        assert_eq!(category(b"blk.0.attn_qkv.weight"), Category::AttnQkv);
        assert_eq!(category(b"blk.0.ffn_down_exps.weight"), Category::FfnDown);
        assert_eq!(
            category(b"per_layer_token_embd.weight"),
            Category::TokenEmbd
        );
        assert_eq!(category(b"output.weight"), Category::Output);
        assert_eq!(category(b"output_norm.weight"), Category::Other);
    }
}
