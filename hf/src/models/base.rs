//! `conversion/base.py`'s `TextModel`: the trait every model class implements, whose default
//! methods do what `TextModel` does (or, for a subclass, what its parent does), and the
//! helpers those defaults share with the families (`set_gguf_parameters`' keys, the RoPE
//! parameters, the vocabulary readers).

use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::model_dir::ModelDir;
use crate::tables::{ArchTable, Tensor};
use crate::vocab;
use ggufrw::quant::GgmlType;
use serde_json::{Map, Value};

/// What a conversion knows when it asks a model class something: the folder, the class's
/// architecture (its `model_arch`, which a parent's code uses as its own) and the plan's
/// facts.
pub(crate) struct Ctx<'a> {
    /// The model folder (config and tokenizer files, parsed once).
    pub dir: &'a ModelDir,
    /// The hyperparameters: the folder's, or a class's changed copy (`self.hparams[...] =`).
    pub hp: &'a Hparams,
    /// The converted class's architecture.
    pub arch: &'static ArchTable,
    /// `block_count`.
    pub block_count: u64,
    /// `general.file_type`.
    pub file_type: u32,
    /// `--tokenizer-pre` (beyond the reference).
    pub tokenizer_pre: Option<&'a str>,
    /// `--target-model-dir`, read: a draft model's target.
    pub target: Option<&'a ModelDir>,
    /// The checkpoint's tensor names, as stored (`self.model_tensors`' keys).
    pub names: &'a [String],
    /// `hf_arch`: the `architectures` class being converted.
    pub class: &'a str,
}

impl Ctx<'_> {
    /// The hyperparameters.
    pub fn hp(&self) -> &Hparams {
        self.hp
    }

    /// The same context with changed hyperparameters (a class that edits `self.hparams`).
    pub fn with_hparams<'b>(&'b self, hp: &'b Hparams) -> Ctx<'b> {
        Ctx {
            dir: self.dir,
            hp,
            arch: self.arch,
            block_count: self.block_count,
            file_type: self.file_type,
            tokenizer_pre: self.tokenizer_pre,
            target: self.target,
            names: self.names,
            class: self.class,
        }
    }

    /// The architecture's key `name` (`{arch}.{name}`).
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.arch.name)
    }

    /// `self.rope_parameters` of `TextModel.__init__`.
    pub fn rope(&self) -> Map<String, Value> {
        rope_parameters(self.hp())
    }
}

/// The tensor a name outside the blocks maps to (`map_tensor_name`'s answer, for the classes
/// that look at it in `modify_tensors`).
pub(crate) fn global_tensor(cx: &Ctx, name: &str) -> Option<crate::tables::Tensor> {
    crate::names::NameMap::new(cx.arch, 0)
        .get(name, &[".weight", ".bias"])
        .map(|(t, _)| t)
}

/// The tensor a block's checkpoint name maps to and its GGUF name (`map_tensor_name`'s
/// answer, for the classes that match it in `modify_tensors`).
pub(crate) fn block_tensor(cx: &Ctx, name: &str) -> Option<(crate::tables::Tensor, String)> {
    let bid = block_of(name)?;
    crate::names::NameMap::new(cx.arch, bid + 1).get(name, &[".weight", ".bias"])
}

/// A draft-to-target map (`d2t`, each entry a target id less its index) as absolute target
/// ids, each inside a vocabulary of `n_vocab` and none twice; `who` begins the reference's
/// messages otherwise.
pub(crate) fn absolute_ids(stored: &[i64], n_vocab: i64, who: &str) -> Result<Vec<i64>> {
    let ids: Vec<i64> = stored.iter().zip(0..).map(|(d, i)| d + i).collect();
    if ids.iter().any(|&id| id < 0 || id >= n_vocab) {
        return Err(Error::reference(format!(
            "ValueError: {who}d2t target ids out of range for target vocab size {n_vocab}"
        )));
    }
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::reference(format!(
            "ValueError: {who}d2t contains duplicate target ids"
        )));
    }
    Ok(ids)
}

/// `TextModel` itself, for the classes that override nothing but `model_arch`.
pub(crate) struct Text;

impl TextModel for Text {}

/// How a checkpoint tensor is changed before it is named (`modify_tensors`' arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Rearrange {
    /// The order the rows are written in.
    pub order: Order,
    /// Written transposed (a 2-D `Conv1D` weight, stored input-major).
    pub transpose: bool,
    /// Added to every element (Gemma's norms: the checkpoint stores weight - 1).
    pub add: f32,
    /// Only the stored rows `first..end` (a split of a fused tensor; Gemma 3's embeddings
    /// cut at the vocabulary). A permutation applies within them.
    pub rows: Option<(u64, u64)>,
    /// Dropped when every element is zero, refused otherwise (Cohere2's biases).
    pub drop_if_zero: bool,
    /// Within each head of this many rows, the upper half negated (Talkie's q and k, whose
    /// inverse rotation the weights absorb); 0: none.
    pub negate_upper_half: u64,
    /// A trailing axis of 1 added (`unsqueeze(-1)`).
    pub unsqueeze: bool,
    /// The name is the GGUF name already: the class yields it without `map_tensor_name`.
    pub named: bool,
    /// The order of each row's elements (its columns), as [`Order`] orders rows.
    pub cols: Order,
    /// Every element multiplied by this (JAIS's embedding and output scales), before `add`.
    pub scale: Option<f32>,
    /// Rows of zeros appended up to this many rows (Gemma 3n's embeddings padded to the
    /// vocabulary); 0 or fewer than stored: none.
    pub pad_to: u64,
    /// The output read through a strided view of the stored elements instead (a split along
    /// an inner axis, a batched transpose, every other row): alone, with no other change.
    pub view: Option<View>,
    /// Every element `x` becomes `-exp(x)` (a state-space model's `A_log`), after `scale` and
    /// before `add`. The exact value, rounded: torch's own `exp` is MKL's or SLEEF's by the
    /// machine, within one unit in the last place of it.
    pub neg_exp: bool,
    /// Every element `x` becomes `exp(x)` (`torch.exp`, as [`Rearrange::neg_exp`] but not
    /// negated).
    pub exp: bool,
    /// Every axis of length 1 dropped (`squeeze()`: a convolution's `[channels, 1, kernel]`).
    pub squeeze: bool,
    /// The output's shape, its first `.1` axes (`reshape(...)` of the stored elements in their
    /// order), after every other change of shape.
    pub reshape: Option<([u64; 4], usize)>,
    /// Each output row multiplied again, after `scale`, by the factor of the first part whose
    /// end row lies past it (Falcon-H1's `in_proj`, whose parts have their own multipliers);
    /// rows past the last end unchanged.
    pub row_scales: Option<[(u64, f32); 5]>,
    /// Dropped when it equals (`torch.equal`: shape and values) the token embeddings yielded
    /// before it (Mamba's output where it repeats them).
    pub drop_if_embeddings: bool,
}

/// Output element `(a, b, c)` is stored element `offset + a·s0 + b·s1 + c·s2` of the
/// tensor's elements in storage order, for `axes = [(n0, s0), (n1, s1), (n2, s2)]`: what a
/// chain of torch's `view`, `transpose` and slicing makes of a contiguous tensor, read
/// without copying it first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    /// The first element read.
    pub offset: u64,
    /// Each output axis, outermost first: its length and the stored elements between
    /// neighbours along it. The last is a row of the output.
    pub axes: [(u64, u64); 3],
    /// The output has three axes, or two (the first two merged: `n0 · n1` rows).
    pub three: bool,
}

impl View {
    /// The output's shape, outermost first.
    pub fn shape(&self) -> Vec<u64> {
        let [(n0, _), (n1, _), (n2, _)] = self.axes;
        match self.three {
            true => vec![n0, n1, n2],
            false => vec![n0 * n1, n2],
        }
    }

    /// The last stored element read, or `None` when the view is empty.
    pub fn last(&self) -> Option<u64> {
        self.axes.iter().try_fold(self.offset, |at, &(n, s)| {
            n.checked_sub(1).map(|k| at + k * s)
        })
    }

    /// Stored element `j` of output row `r`.
    pub fn element(&self, r: u64, j: u64) -> u64 {
        let [(_, s0), (n1, s1), (_, s2)] = self.axes;
        self.offset + (r / n1) * s0 + (r % n1) * s1 + j * s2
    }

    /// A contiguous `[n, rows, cols]` tensor with its last two axes swapped
    /// (`transpose(-1, -2)`): `[n, cols, rows]`.
    pub fn transposed(n: u64, rows: u64, cols: u64) -> View {
        View {
            offset: 0,
            axes: [(n, rows * cols), (cols, 1), (rows, cols)],
            three: true,
        }
    }

    /// The change that reads the tensor through this view and does nothing else.
    pub fn alone(self) -> Rearrange {
        Rearrange {
            view: Some(self),
            ..Rearrange::default()
        }
    }

    /// `[n, rows, cols]` of a contiguous `[n, 2 * part, cols]` tensor's half `half` (0, 1)
    /// along its middle axis: `split(part, dim=-2)`.
    pub fn middle_half(n: u64, part: u64, cols: u64, half: u64) -> View {
        View {
            offset: half * part * cols,
            axes: [(n, 2 * part * cols), (part, cols), (cols, 1)],
            three: true,
        }
    }
}

/// The order of a tensor's rows (along its first axis) in the output: each a reshape and a
/// transposition of some axes in `modify_tensors`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Order {
    /// As stored.
    #[default]
    Stored,
    /// `LlamaModel.permute` over this many heads: each head's two halves interleaved.
    LlamaHeads(u64),
    /// A fused q/k/v stored per head (`[n_head, 3, head_dim]`, GPT-NeoX and Bloom) written
    /// as all q, then all k, then all v.
    QkvPerHead(u64),
    /// A fused q/k/v stored per kv group (`[n_kv, q_per_kv + 2, head_dim]`: the group's
    /// queries, its key, its value; Falcon) written as all q, all k, all v.
    KvGroups {
        /// Kv heads (groups).
        kv: u64,
        /// Query heads per group.
        q_per_kv: u64,
    },
    /// One part of a fused q/k/v stored per kv group (InternLM2's `wqkv`): the queries
    /// (`part` 0) or the keys (1), each then permuted as Llama's over its heads, or the values
    /// (2). The output is the part's rows alone: the change's `rows` is `0..` their count,
    /// and the stored row of each is found in the whole tensor.
    KvGroupPart {
        /// Kv heads (groups).
        kv: u64,
        /// Query heads per group.
        q_per_kv: u64,
        /// Rows a head.
        head_dim: u64,
        /// 0, 1, 2: q, k, v.
        part: u8,
    },
    /// Parts of a tensor stored head by head, each head `sizes` rows one part after the other
    /// (Qwen3-Next's `in_proj_qkvz`: `[q, k, v, z]` a key head), written part by part, all heads'
    /// rows of each: the parts `from..to` alone, their stored rows found in the whole tensor
    /// (the change's `rows` is `0..` their count).
    Segments {
        /// Heads.
        heads: u64,
        /// The rows of each part in one head.
        sizes: [u64; 4],
        /// The first part written.
        from: u8,
        /// The part after the last written.
        to: u8,
    },
    /// Within each head of `head_dim` rows, the first `rotary` rows (pairs rotated together)
    /// written evens first, then odds; the rest as stored (GLM-4V's `normal_to_neox`, for
    /// M-RoPE's NeoX order).
    NeoxHeads {
        /// Rows a head.
        head_dim: u64,
        /// The rotated rows of each head, even.
        rotary: u64,
    },
    /// Every row the first stored one (`data[0]` repeated: Chameleon's per-head norms, head
    /// 0's for every head).
    First,
    /// The rows in five equal parts, output part `p` the stored part `.0[p]` (RWKV6-Qwen2's
    /// token-shift projections, stored r, k, v, w, g and written w, k, v, r, g).
    Parts([u8; 5]),
    /// [`Order::Swapped`] within each head of `outer · inner · block` rows, over the first
    /// `end` rows; the rest as stored (Kimi K2.5's tower: q and k of its fused `wqkv`, each
    /// head's rotated pairs from interleaved to split, v kept).
    HeadsSwapped {
        /// Rows permuted, whole heads.
        end: u64,
        /// Groups a head.
        outer: u64,
        /// Blocks a group.
        inner: u64,
        /// Rows a block.
        block: u64,
    },
    /// `reshape(outer, inner, block, …).permute(1, 0, 2, …)`: blocks of `block` rows in
    /// `outer` groups of `inner`, written group-major the other way round (PLaMo's q rows and
    /// attention-output columns), after the first `skip` rows, which stay (Qwen 3.5's value
    /// heads, after the queries and keys of the same tensor).
    Swapped {
        /// Rows kept where they are, before the swapped ones.
        skip: u64,
        /// Groups.
        outer: u64,
        /// Blocks a group.
        inner: u64,
        /// Rows a block.
        block: u64,
    },
}

impl Order {
    /// Why `rows` rows cannot take this order, if they cannot.
    pub fn check(self, rows: u64) -> std::result::Result<(), String> {
        let (parts, what) = match self {
            Order::Stored | Order::First => return Ok(()),
            Order::LlamaHeads(h) => (2 * h, format!("{h} heads of two halves")),
            Order::Parts(_) => (5, "five parts".to_owned()),
            Order::QkvPerHead(h) => (3 * h, format!("{h} heads of q, k and v")),
            Order::KvGroups { kv, q_per_kv } => (
                kv * (q_per_kv + 2),
                format!("{kv} groups of {q_per_kv} queries, a key and a value"),
            ),
            Order::Swapped {
                skip,
                outer,
                inner,
                block,
            } => {
                if rows != skip + outer * inner * block {
                    return Err(format!(
                        "{rows} rows are not {skip} and {outer} × {inner} blocks of {block}"
                    ));
                }
                return Ok(());
            }
            Order::HeadsSwapped {
                end,
                outer,
                inner,
                block,
            } => {
                let head = outer * inner * block;
                if head == 0 || end % head != 0 || end > rows {
                    return Err(format!(
                        "{rows} rows do not begin with {end} rows of heads of {outer} × \
                         {inner} blocks of {block}"
                    ));
                }
                return Ok(());
            }
            Order::NeoxHeads { head_dim, rotary } => {
                if head_dim == 0 || rows % head_dim != 0 || rotary % 2 != 0 || rotary > head_dim {
                    return Err(format!(
                        "{rows} rows are not heads of {head_dim} with {rotary} rotated (even)"
                    ));
                }
                return Ok(());
            }
            Order::Segments {
                heads,
                sizes,
                from,
                to,
            } => {
                let stored: u64 = sizes.iter().sum::<u64>() * heads;
                let want: u64 = sizes[from as usize..to as usize].iter().sum::<u64>() * heads;
                if rows != want || stored == 0 {
                    return Err(format!(
                        "{rows} rows are not {heads} heads of parts {sizes:?} \
                         (parts {from}..{to}: {want} rows)"
                    ));
                }
                return Ok(());
            }
            Order::KvGroupPart {
                kv,
                q_per_kv,
                head_dim,
                part,
            } => {
                let heads = if part == 0 { kv * q_per_kv } else { kv };
                if rows != heads * head_dim || (part < 2 && head_dim % 2 != 0) {
                    return Err(format!(
                        "{rows} rows are not {heads} heads of {head_dim} (of two halves)"
                    ));
                }
                return Ok(());
            }
        };
        if parts == 0 || rows % parts != 0 {
            return Err(format!("{rows} rows cannot be split into {what}"));
        }
        Ok(())
    }

    /// The stored row of output row `r` of `rows`.
    pub fn source(self, r: u64, rows: u64) -> u64 {
        match self {
            Order::Stored => r,
            Order::First => 0,
            Order::Parts(parts) => {
                let part = rows / 5;
                u64::from(parts[(r / part) as usize]) * part + r % part
            }
            Order::LlamaHeads(heads) => {
                let half = rows / heads / 2;
                let (h, rest) = (r / (2 * half), r % (2 * half));
                let (i, j) = (rest / 2, rest % 2);
                h * 2 * half + j * half + i
            }
            Order::QkvPerHead(heads) => {
                let hd = rows / heads / 3;
                let (which, within) = (r / (heads * hd), r % (heads * hd));
                let (h, d) = (within / hd, within % hd);
                (h * 3 + which) * hd + d
            }
            Order::KvGroups { kv, q_per_kv } => {
                let hd = rows / kv / (q_per_kv + 2);
                let group = (q_per_kv + 2) * hd;
                let q_rows = kv * q_per_kv * hd;
                if r < q_rows {
                    (r / (q_per_kv * hd)) * group + r % (q_per_kv * hd)
                } else {
                    let r = r - q_rows;
                    let (which, within) = (r / (kv * hd), r % (kv * hd));
                    (within / hd) * group + (q_per_kv + which) * hd + within % hd
                }
            }
            Order::Swapped {
                skip,
                outer,
                inner,
                block,
            } => {
                if r < skip {
                    return r;
                }
                let r = r - skip;
                let (b, a, c) = (r / (outer * block), (r / block) % outer, r % block);
                skip + (a * inner + b) * block + c
            }
            Order::HeadsSwapped {
                end,
                outer,
                inner,
                block,
            } => {
                if r >= end {
                    return r;
                }
                let head = outer * inner * block;
                let within = Order::Swapped {
                    skip: 0,
                    outer,
                    inner,
                    block,
                };
                (r / head) * head + within.source(r % head, head)
            }
            Order::NeoxHeads { head_dim, rotary } => {
                let (h, i) = (r / head_dim, r % head_dim);
                let half = rotary / 2;
                let j = match i {
                    i if i < half => 2 * i,
                    i if i < rotary => 2 * (i - half) + 1,
                    i => i,
                };
                h * head_dim + j
            }
            Order::Segments {
                heads,
                sizes,
                from,
                to,
            } => {
                let per_head: u64 = sizes.iter().sum();
                let mut r = r;
                for p in from as usize..to as usize {
                    let part = sizes[p] * heads;
                    if r < part {
                        let before: u64 = sizes[..p].iter().sum();
                        return (r / sizes[p]) * per_head + before + r % sizes[p];
                    }
                    r -= part;
                }
                unreachable!("checked: the rows are the parts' rows")
            }
            Order::KvGroupPart {
                kv,
                q_per_kv,
                head_dim: hd,
                part,
            } => {
                let group = (q_per_kv + 2) * hd;
                match part {
                    0 => {
                        let r = Order::LlamaHeads(kv * q_per_kv).source(r, rows);
                        (r / (q_per_kv * hd)) * group + r % (q_per_kv * hd)
                    }
                    1 => {
                        let r = Order::LlamaHeads(kv).source(r, rows);
                        (r / hd) * group + q_per_kv * hd + r % hd
                    }
                    _ => (r / hd) * group + (q_per_kv + 1) * hd + r % hd,
                }
            }
        }
    }
}

/// A tensor `modify_tensors` holds back until the others of its group are in, then yields
/// them as one under another name (Gemma 3n's AltUp projections, RuGPT3XL's q, k and v).
#[derive(Clone, Debug)]
pub(crate) struct Gather {
    /// The name the group is yielded under (then mapped as any other).
    pub into: String,
    /// This tensor's place in the group.
    pub part: usize,
    /// `into` is the GGUF name already: the class yields it without `map_tensor_name`.
    pub named: bool,
    /// The group's size.
    pub of: usize,
    /// Stacked along a new first axis (`torch.stack`); otherwise joined along the first
    /// axis (`torch.cat`). Either way the stored bytes follow one another.
    pub stack: bool,
    /// Instead of either, the 1-D tensors computed from the group's values (each part's, in
    /// the group's order) in the stored type's arithmetic: their names and values, yielded in
    /// that order and written F32 (Granite Speech's batch norms folded into a scale and a
    /// shift).
    pub fold: Option<Fold>,
}

/// A [`Gather::fold`]: the group's name, the parts' stored type and their values, to the
/// tensors yielded.
pub(crate) type Fold =
    fn(&str, crate::safetensors::Dtype, &[Vec<f32>]) -> Result<Vec<(String, Vec<f32>)>>;

/// An integer tensor the class writes as I64 after every other tensor (EAGLE-3's `d2t`):
/// its name and its values from the stored ones.
pub(crate) struct LateInt {
    /// The GGUF name.
    pub name: String,
    /// The values written, from the stored ones (read as torch reads them, through f32).
    pub values: fn(&Ctx, Vec<i64>) -> Result<Vec<i64>>,
}

/// A tensor taken from another safetensors file of the folder ([`TextModel::extra_file_tensor`]).
#[derive(Clone, Debug)]
pub(crate) struct ExtraFileTensor {
    /// The file.
    pub path: std::path::PathBuf,
    /// The tensor's name in it.
    pub from: &'static str,
    /// The name it is yielded under.
    pub into: &'static str,
    /// The key its first dimension is written as when it is loaded (`{arch}.` and this), if any.
    pub width_key: Option<&'static str>,
}

/// Task adapters written beside the model: each task's file holds its slice of every
/// checkpoint tensor named `….0.lora_A` or `….0.lora_B` (`[tasks, …]`).
#[derive(Clone, Debug)]
pub(crate) struct TaskAdapters {
    /// The tasks, in the order of the stored slices.
    pub names: Vec<String>,
    /// `adapter.lora.alpha`.
    pub alpha: f64,
    /// Each task's `adapter.lora.prompt_prefix`, where the config has them.
    pub prefixes: Option<Vec<String>>,
}

/// A key made of one-value tensors.
#[derive(Clone, Debug)]
pub(crate) enum ScalarKey {
    /// One value a block, written as an array once every block's is in.
    PerBlock(&'static str),
    /// The value itself, as a float.
    One(String),
    /// A float computed from all the tensor's values (JAIS's ALiBi bias from its slopes).
    Derived(String, fn(&Ctx, &[f32]) -> Result<f64>),
}

/// A checkpoint's MXFP4 experts written as they are, repacked into ggml's blocks, before
/// every other tensor: rows `offset`, `offset + step`, … of each expert of `blocks` (`[experts,
/// rows, blocks, 16]` bytes of codes) and `scales` (`[experts, rows, blocks]` exponents).
#[derive(Clone, Debug)]
pub(crate) struct Mxfp4 {
    /// The name it is mapped from.
    pub name: String,
    /// The checkpoint's codes.
    pub blocks: String,
    /// The checkpoint's exponents.
    pub scales: String,
    /// The first row taken.
    pub offset: u64,
    /// Rows from one taken to the next.
    pub step: u64,
}

/// How a family gathers per-expert tensors into one 3-D tensor per block.
pub(crate) struct Experts {
    /// The hparams that give the expert count.
    pub count_keys: &'static [&'static str],
    /// What marks an expert tensor's checkpoint name.
    pub marker: &'static str,
    /// What unmarks it again (Dots1's `shared_experts`, which contains `experts`); empty for
    /// nothing.
    pub unless: &'static str,
    /// Name endings of a block's experts stored packed in one tensor, which `modify_tensors`
    /// takes instead (Qwen's `mlp.experts.gate_up_proj`).
    pub packed: &'static [&'static str],
    /// Expert `{xid}`'s weight `{w}` in block `{bid}`.
    pub expert: &'static str,
    /// The merged tensor's checkpoint name.
    pub merged: &'static str,
    /// The weights, in the order the merged tensors are written.
    pub weights: &'static [&'static str],
}

impl Experts {
    /// Whether checkpoint tensor `name` is one expert's, of this layout.
    pub fn holds(&self, name: &str) -> bool {
        name.contains(self.marker)
            && (self.unless.is_empty() || !name.contains(self.unless))
            && !self.packed.iter().any(|p| name.ends_with(p))
    }
}

/// `tensor_force_quant`'s answer other than `False`.
// `Type` is for the classes that force one (granite.py, glm.py, nemotron.py): none yet.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Force {
    /// `True`: the outtype's type, whatever the always-F32 rules say.
    Quantize,
    /// This type.
    Type(GgmlType),
}

/// A reference model class's behaviour. Each method is the Python method of the same name; the
/// defaults are the parent's (when [`TextModel::parent`] names one) or `TextModel`'s. The
/// class's `model_arch` is its registry line's, handed to every method in [`Ctx::arch`]: a
/// Python subclass that changes only `model_arch` is its parent's behaviour on another line.
pub(crate) trait TextModel: Sync {
    /// The Python class this one derives from, when it is not `TextModel` itself.
    fn parent(&self) -> Option<&'static dyn TextModel> {
        None
    }

    /// The published name of a checkpoint tensor saved under another one the reference
    /// cannot map (transformers 5's renames), read under it from the start; `None`: as stored.
    fn published_name(&self, name: &str) -> Option<String> {
        self.parent().and_then(|p| p.published_name(name))
    }

    /// `__init__`'s edits of `self.hparams` for class `class`, made before anything reads them.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        if let Some(p) = self.parent() {
            p.init_hparams(class, hp);
        }
    }

    /// `model_arch`: the registry line's, unless `__init__` switches it on the config (a
    /// Llama that is an EAGLE-3 draft).
    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        match self.parent() {
            Some(p) => p.arch(hp, line),
            None => line,
        }
    }

    /// Keys `__init__` writes, right after `general.architecture` (before the tensors' own
    /// and every other key; also with `--vocab-only`).
    fn init_keys(&self, cx: &Ctx, early: &mut Kv) -> Result<()> {
        match self.parent() {
            Some(p) => p.init_keys(cx, early),
            None => Ok(()),
        }
    }

    /// An integer tensor written as I64 after all the others, if `name` is one.
    fn late_int64(&self, cx: &Ctx, name: &str) -> Option<LateInt> {
        self.parent().and_then(|p| p.late_int64(cx, name))
    }

    /// `self.block_count`: the config's layer count, unless `__init__` (or `find_hparam`, or
    /// what indexing the checkpoint's tensor `names` found) says otherwise.
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        match self.parent() {
            Some(p) => p.block_count(hp, names),
            None => hp.int(&["n_layers", "num_hidden_layers", "n_layer", "num_layers"]),
        }
    }

    /// `filter_tensors`: the checkpoint name under which the tensor is kept, or `None` when
    /// it is dropped.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match self.parent() {
            Some(p) => p.filter_tensors(cx, name),
            None => filter_tensors(name),
        }
    }

    /// `set_gguf_parameters`.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        match self.parent() {
            Some(p) => p.set_gguf_parameters(cx, kv),
            None => set_gguf_parameters(cx, kv),
        }
    }

    /// `modify_tensors` for one checkpoint tensor (experts aside: [`TextModel::experts`]):
    /// the names it yields the tensor under (before `map_tensor_name`), each with its change;
    /// none when it drops the tensor.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        match self.parent() {
            Some(p) => p.modify_tensors(cx, name, _shape),
            None => Ok(vec![(name.to_owned(), Rearrange::default())]),
        }
    }

    /// A one-value tensor `modify_tensors` writes as a key instead of a tensor (Apertus's
    /// xIELU parameters, Talkie's logit gain): the key, right after `general.architecture`
    /// (tensors are prepared before the other keys).
    fn scalar_key(&self, cx: &Ctx, name: &str) -> Option<ScalarKey> {
        self.parent().and_then(|p| p.scalar_key(cx, name))
    }

    /// A tensor `generate_extra_tensors` loads from another safetensors file of the folder,
    /// where that file exists (yielded before the checkpoint's own tensors, through
    /// `modify_tensors` as they go).
    fn extra_file_tensor(&self, dir: &ModelDir) -> Option<ExtraFileTensor> {
        self.parent().and_then(|p| p.extra_file_tensor(dir))
    }

    /// The task adapters the class writes beside the model, one LoRA file a task
    /// (jina-embeddings-v3's `lora_adaptations`), if it has them.
    fn task_adapters(&self, cx: &Ctx) -> Result<Option<TaskAdapters>> {
        match self.parent() {
            Some(p) => p.task_adapters(cx),
            None => Ok(None),
        }
    }

    /// Keys `prepare_tensors` writes once every tensor is prepared (after the tensors' own
    /// keys: [`TextModel::scalar_key`]).
    fn after_tensors(&self, cx: &Ctx, early: &mut Kv) -> Result<()> {
        match self.parent() {
            Some(p) => p.after_tensors(cx, early),
            None => Ok(()),
        }
    }

    /// The group `modify_tensors` holds tensor `name` back for, if it does.
    fn gather(&self, cx: &Ctx, name: &str) -> Option<Gather> {
        self.parent().and_then(|p| p.gather(cx, name))
    }

    /// The expert layout `modify_tensors` stacks, if the class has experts.
    fn experts(&self) -> Option<Experts> {
        self.parent().and_then(|p| p.experts())
    }

    /// A second expert layout, matched before [`TextModel::experts`] (GroveMoE's chunk
    /// experts, whose names contain the first's marker), and what its count is divided by.
    fn adjugate_experts(&self) -> Option<(Experts, u64)> {
        self.parent().and_then(|p| p.adjugate_experts())
    }

    /// The MXFP4 tensors written as they are, found among the checkpoint's (kept) `names` in
    /// their order (`generate_extra_tensors` writing them straight to the file).
    fn mxfp4_tensors(&self, cx: &Ctx, names: &[&str]) -> Vec<Mxfp4> {
        self.parent()
            .map(|p| p.mxfp4_tensors(cx, names))
            .unwrap_or_default()
    }

    /// Whether the class writes an `mxfp4` checkpoint's experts as MXFP4 instead of
    /// dequantizing the checkpoint (`dequant_model` overridden to do nothing).
    fn keeps_mxfp4(&self) -> bool {
        self.parent().is_some_and(|p| p.keeps_mxfp4())
    }

    /// `generate_extra_tensors`: computed tensors, as f32 values (1-D).
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        match self.parent() {
            Some(p) => p.generate_extra_tensors(cx),
            None => Ok(Vec::new()),
        }
    }

    /// `tensor_force_quant(name, new_name, bid, n_dims)`: `None` is Python's `False`.
    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        self.parent()
            .and_then(|p| p.tensor_force_quant(cx, name, new_name, bid, n_dims))
    }

    /// `set_vocab`.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        match self.parent() {
            Some(p) => p.set_vocab(cx, kv),
            None => gpt2(cx, kv),
        }
    }
}

/// `tie_word_embeddings` of a configuration transformers reads (`AutoConfig`'s `to_dict`
/// always has it; `save_pretrained` leaves it out when it is the default, true).
pub(crate) fn tied(hp: &Hparams) -> bool {
    hp.map.get("tie_word_embeddings").is_none_or(vocab::truthy)
}

/// `ModelBase.filter_tensors`.
pub(crate) fn filter_tensors(name: &str) -> Option<String> {
    const SKIP_PREFIX: [&str; 10] = [
        "mlp",
        "vit.",
        "vpm.",
        "siglip2.",
        "conformer.",
        "merger.",
        "resampler.",
        "sound_encoder.",
        "sound_projection.",
        "speech_embeddings.",
    ];
    const SKIP_PART: [&str; 17] = [
        "visual.",
        "vision.",
        "audio.",
        "talker.",
        "vision_",
        "audio_",
        "token2wav.",
        "code2wav.",
        "projector.",
        "pre_mm_projector_norm",
        "image_newline",
        "view_seperator",
        "patch_embed",
        "patch_embedding",
        "patch_merger.",
        "patch_merge_mlp.",
        "model.connector.",
    ];
    if SKIP_PREFIX.iter().any(|p| name.starts_with(p)) || SKIP_PART.iter().any(|p| name.contains(p))
    {
        return None;
    }
    let mut name = name.to_owned();
    if name.ends_with("e_score_correction_bias") {
        name = name.replace("e_score_correction_bias", "e_score_correction.bias");
    }
    if name.contains("language_model.") {
        name = name.replace("language_model.", "");
    }
    Some(name)
}

/// `self.rope_parameters.get("full_attention", self.rope_parameters)`.
pub(crate) fn rope_params(rope: &Map<String, Value>) -> Map<String, Value> {
    match rope.get("full_attention") {
        Some(Value::Object(o)) => o.clone(),
        _ => rope.clone(),
    }
}

/// `TextModel.__init__`'s `rope_parameters`: `rope_parameters` or `rope_scaling`, with the
/// global values mirrored into it.
pub(crate) fn rope_parameters(hp: &Hparams) -> Map<String, Value> {
    let mut rope = match hp
        .map
        .get("rope_parameters")
        .or_else(|| hp.map.get("rope_scaling"))
    {
        Some(Value::Object(o)) if !o.is_empty() => o.clone(),
        _ => Map::new(),
    };
    let found = |keys: &[&str]| hp.find(keys).filter(|v| !v.is_null()).cloned();
    let theta = found(&[
        "global_rope_theta",
        "rope_global_theta",
        "rope_theta_global",
        "rope_theta",
        "rotary_emb_base",
    ]);
    let local = found(&[
        "local_rope_theta",
        "rope_local_theta",
        "rope_theta_local",
        "swa_rope_theta",
        "rope_local_base_freq",
    ]);
    let partial = found(&["partial_rotary_factor", "rope_pct", "rope_percent"]);
    let orig = found(&["original_max_position_embeddings"]);
    if !rope.contains_key("full_attention") && !rope.contains_key("sliding_attention") {
        if let Some(l) = local {
            let mut m = Map::new();
            m.insert("rope_theta".into(), l);
            rope.insert("sliding_attention".into(), Value::Object(m));
        }
        let typ = rope_type_alias(&rope);
        let mut mirror = |key: &str, v: Option<Value>| {
            if !rope.contains_key(key) {
                if let Some(v) = v {
                    rope.insert(key.into(), v);
                }
            }
        };
        mirror("rope_theta", theta);
        mirror("rope_type", typ);
        mirror("partial_rotary_factor", partial);
        mirror("original_max_position_embeddings", orig);
    }
    rope
}

fn rope_type_alias(rope: &Map<String, Value>) -> Option<Value> {
    rope.get("type").filter(|v| !v.is_null()).cloned()
}

/// A count of the config as a 32-bit value, the field named when it is not one.
pub(crate) fn u32_of(hp: &Hparams, key: &str, v: &Value) -> Result<u32> {
    match v.as_u64() {
        Some(n) => count32(hp, key, n),
        None => Err(Error::field(
            &hp.path,
            key,
            format!("{v} is not a 32-bit count"),
        )),
    }
}

/// `n`, read from the config's `key` (or derived from it), as a 32-bit count.
pub(crate) fn count32(hp: &Hparams, key: &str, n: u64) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::field(&hp.path, key, format!("{n} is not a 32-bit count")))
}

/// The config's count under the first of `keys` it has, as a 32-bit count.
pub(crate) fn int32(hp: &Hparams, keys: &[&str]) -> Result<u32> {
    count32(hp, keys[0], hp.int(keys)?)
}

/// `TextModel.set_gguf_parameters`.
pub(crate) fn set_gguf_parameters(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    let k = |s: &str| cx.key(s);
    kv.u32(&k("block_count"), cx.block_count as u32);
    let lists: [(&[&str], &str); 5] = [
        (
            &[
                "max_position_embeddings",
                "n_ctx",
                "n_positions",
                "max_length",
                "max_sequence_length",
                "model_max_length",
            ],
            "context_length",
        ),
        (&["hidden_size", "n_embd", "dim"], "embedding_length"),
        (
            &[
                "prefix_dense_intermediate_size",
                "dense_intermediate_size",
                "intermediate_size",
                "n_inner",
                "hidden_dim",
            ],
            "feed_forward_length",
        ),
        (
            &["num_attention_heads", "n_head", "n_heads"],
            "attention.head_count",
        ),
        (
            &["num_key_value_heads", "n_kv_heads"],
            "attention.head_count_kv",
        ),
    ];
    for (i, (keys, gguf)) in lists.into_iter().enumerate() {
        match hp.find(keys) {
            None | Some(Value::Null) => {}
            // The feed-forward width and the head counts may be per layer (an int32 array).
            Some(Value::Array(a)) if i >= 2 => {
                let values = a
                    .iter()
                    .map(|v| {
                        v.as_i64()
                            .and_then(|n| i32::try_from(n).ok())
                            .ok_or_else(|| Error::field(&hp.path, keys[0], "not 32-bit counts"))
                    })
                    .collect::<Result<Vec<i32>>>()?;
                kv.i32s(&k(gguf), values);
            }
            Some(v) => kv.u32(&k(gguf), u32_of(hp, keys[0], v)?),
        }
    }
    if hp.map.get("is_causal") == Some(&Value::Bool(false)) {
        kv.bool(&k("attention.causal"), false);
    }
    let rope = cx.rope();
    let params = rope_params(&rope);
    if let Some(t) = params.get("rope_type").filter(|v| !v.is_null()) {
        let t = t.as_str().unwrap_or_default();
        let factor = params.get("factor").and_then(Value::as_f64);
        match (t, factor) {
            ("linear", Some(f)) => {
                kv.string(&k("rope.scaling.type"), "linear");
                kv.f32(&k("rope.scaling.factor"), f);
            }
            ("yarn", Some(f)) => {
                kv.string(&k("rope.scaling.type"), "yarn");
                kv.f32(&k("rope.scaling.factor"), f);
                let orig = params
                    .get("original_max_position_embeddings")
                    .filter(|v| !v.is_null())
                    .ok_or_else(|| {
                        Error::reference(
                            "KeyError: 'original_max_position_embeddings' (yarn RoPE scaling)",
                        )
                    })?;
                kv.u32(
                    &k("rope.scaling.original_context_length"),
                    u32_of(hp, "original_max_position_embeddings", orig)?,
                );
                let float = |keys: &[&str]| keys.iter().find_map(|key| params.get(*key));
                let yarn = [
                    (
                        &["extrapolation_factor"][..],
                        "rope.scaling.yarn_ext_factor",
                    ),
                    (
                        &["attention_factor", "attn_factor"][..],
                        "rope.scaling.yarn_attn_factor",
                    ),
                    (&["beta_fast"][..], "rope.scaling.yarn_beta_fast"),
                    (&["beta_slow"][..], "rope.scaling.yarn_beta_slow"),
                ];
                for (keys, key) in yarn {
                    // `params.get(a, params.get(b))`: the first key present, null or not.
                    match float(keys) {
                        None | Some(Value::Null) => {}
                        Some(v) => {
                            let v = v.as_f64().ok_or_else(|| {
                                Error::field(&hp.path, keys[0], format!("{v} is not a number"))
                            })?;
                            kv.f32(&k(key), v);
                        }
                    }
                }
            }
            ("su" | "longrope", _) => kv.string(&k("rope.scaling.type"), "longrope"),
            _ => {}
        }
    }
    if let Some(sections) = rope.get("mrope_section") {
        let mut dims: Vec<i32> = sections
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_i64().and_then(|n| i32::try_from(n).ok()))
                    .collect()
            })
            .ok_or_else(|| Error::field(&hp.path, "mrope_section", "not a list of counts"))?;
        dims.resize(dims.len().max(4), 0);
        dims.truncate(4);
        kv.i32s(&k("rope.dimension_sections"), dims);
    }
    if let Some(theta) = params.get("rope_theta").filter(|v| !v.is_null()) {
        let t = theta
            .as_f64()
            .ok_or_else(|| Error::field(&hp.path, "rope_theta", "not a number"))?;
        kv.f32(&k("rope.freq_base"), t);
    }
    if let Some(Value::Object(swa)) = rope.get("sliding_attention") {
        if let Some(t) = swa.get("rope_theta").and_then(Value::as_f64) {
            kv.f32(&k("rope.freq_base_swa"), t);
        }
    }
    if let Some(e) = hp.opt_float(&["rms_norm_eps", "norm_eps"])? {
        kv.f32(&k("attention.layer_norm_rms_epsilon"), e);
    }
    if let Some(e) = hp.opt_float(&["layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"])? {
        kv.f32(&k("attention.layer_norm_epsilon"), e);
    }
    let count = |keys: &[&str], key: &str, kv: &mut Kv| -> Result<()> {
        if let Some(v) = hp.find(keys).filter(|v| !v.is_null()) {
            kv.u32(&k(key), u32_of(hp, keys[0], v)?);
        }
        Ok(())
    };
    count(
        &["num_local_experts", "num_experts", "n_routed_experts"],
        "expert_count",
        kv,
    )?;
    count(
        &[
            "num_experts_per_tok",
            "num_experts_per_token",
            "top_k_experts",
        ],
        "expert_used_count",
        kv,
    )?;
    count(&["n_group"], "expert_group_count", kv)?;
    count(&["topk_group"], "expert_group_used_count", kv)?;
    let score_keys = [
        "score_function",
        "scoring_func",
        "score_func",
        "moe_router_activation",
        "moe_router_activation_func",
        "expert_selection_fn",
    ];
    if let Some(v) = hp.find(&score_keys).filter(|v| !v.is_null()) {
        let f = match v.as_str() {
            Some("softmax") => 1,
            Some("sigmoid") => 2,
            Some("sqrtsoftplus") => 4,
            _ => {
                return Err(Error::field(
                    &hp.path,
                    score_keys[0],
                    format!("Unsupported expert score gating function value: {v}"),
                ))
            }
        };
        kv.u32(&k("expert_gating_func"), f);
    }
    if let Some(h) = hp.map.get("head_dim").filter(|v| !v.is_null()) {
        let h = u32_of(hp, "head_dim", h)?;
        kv.u32(&k("attention.key_length"), h);
        kv.u32(&k("attention.value_length"), h);
    }
    kv.u32("general.file_type", cx.file_type);
    Ok(())
}

/// `_set_vocab_sentencepiece`, if there is a `tokenizer.model`.
pub(crate) fn sentencepiece(cx: &Ctx, kv: &mut Kv) -> Result<bool> {
    let size = cx
        .hp()
        .opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
    let Some(v) = vocab::sentencepiece(cx.dir, size)? else {
        return Ok(false);
    };
    llama_vocab(cx, kv, v)?;
    Ok(true)
}

/// `try: _set_vocab_sentencepiece() except FileNotFoundError: _set_vocab_gpt2()`.
pub(crate) fn sentencepiece_or_gpt2(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    if sentencepiece(cx, kv)? {
        return Ok(());
    }
    gpt2(cx, kv)
}

/// `_set_vocab_sentencepiece`'s refusal without a `tokenizer.model` (the reference's
/// `FileNotFoundError`).
pub(crate) fn sentencepiece_required(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    if !sentencepiece(cx, kv)? {
        return Err(no_tokenizer_model(cx));
    }
    Ok(())
}

/// The reference's error for a SentencePiece reading without `tokenizer.model`.
pub(crate) fn no_tokenizer_model(cx: &Ctx) -> Error {
    Error::reference(format!(
        "File not found: {}",
        cx.dir.file("tokenizer.model").display()
    ))
}

/// The q or k projection a tensor is, by name (their biases too where `biases`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proj {
    Q,
    K,
}

/// Whether `name` is the q or the k projection's weight (or bias, where `biases`).
pub(crate) fn qk_projection(name: &str, biases: bool) -> Option<Proj> {
    let is = |proj: &str| {
        name.ends_with(&format!("{proj}.weight"))
            || (biases && name.ends_with(&format!("{proj}.bias")))
    };
    if is("q_proj") {
        Some(Proj::Q)
    } else if is("k_proj") {
        Some(Proj::K)
    } else {
        None
    }
}

/// `LlamaModel.permute` of the q and k projections (their biases too where `biases`), over
/// `num_attention_heads` and, for k, `num_key_value_heads` where given.
pub(crate) fn qk_permuted(cx: &Ctx, name: &str, biases: bool) -> Yields {
    qk_permuted_by(
        cx,
        name,
        biases,
        &["num_attention_heads"],
        &["num_key_value_heads"],
    )
}

/// [`qk_permuted`] with the head counts read from the first of `heads` and `kv_heads` the
/// config has.
pub(crate) fn qk_permuted_by(
    cx: &Ctx,
    name: &str,
    biases: bool,
    heads: &[&str],
    kv_heads: &[&str],
) -> Yields {
    let hp = cx.hp();
    let n_head = hp.int(heads)?;
    let heads = match qk_projection(name, biases) {
        Some(Proj::Q) => Some(n_head),
        Some(Proj::K) => Some(hp.opt_int(kv_heads)?.unwrap_or(n_head)),
        None => None,
    };
    permuted(name, heads)
}

/// The block of a checkpoint name: its first all-digit part (as the reference finds it).
pub(crate) fn block_of(name: &str) -> Option<u64> {
    name.split('.')
        .find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse::<u64>().ok())
}

/// `modify_tensors` yielding the tensor with `LlamaModel.permute` over `heads` heads, or as
/// stored.
pub(crate) fn permuted(name: &str, heads: Option<u64>) -> Yields {
    let change = Rearrange {
        order: heads.map_or(Order::Stored, Order::LlamaHeads),
        ..Rearrange::default()
    };
    yield_as(name, change)
}

/// The vocabulary size and a head's width as the rotated width, after `TextModel`'s keys
/// (`LlamaModel`'s, and classes written like it).
pub(crate) fn vocab_and_rope_keys(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
    kv.u32(&cx.key("rope.dimension_count"), head_dim(hp)? as u32);
    Ok(())
}

/// `tokenizer.get_added_vocab()[token]`: the reference's `KeyError` where it is missing.
pub(crate) fn added_id(added: &[(String, u64)], token: &str) -> Result<u64> {
    added
        .iter()
        .find(|(c, _)| c == token)
        .map(|(_, i)| *i)
        .ok_or_else(|| Error::reference(format!("KeyError: '{token}' (not an added token)")))
}

/// `_set_vocab_llama_hf`.
pub(crate) fn llama_hf(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    llama_vocab(cx, kv, crate::bpe::llama_hf(cx.dir)?)
}

/// A vocabulary of the `llama` tokenizer model (tokens, scores, types), then the special
/// vocabulary, as each of the reference's SentencePiece readings writes them.
pub(crate) fn llama_vocab(cx: &Ctx, kv: &mut Kv, v: vocab::Vocab) -> Result<()> {
    let n = llama_tokens(kv, v);
    vocab::SpecialVocab::load(cx.dir, Some(n), false)?.add_to(kv)
}

/// The `llama` tokenizer model's tokens, scores and types; their count.
pub(crate) fn llama_tokens(kv: &mut Kv, v: vocab::Vocab) -> u64 {
    tokens_as(kv, "llama", v)
}

/// [`llama_tokens`] for another tokenizer model (PLaMo's `plamo2`).
pub(crate) fn tokens_as(kv: &mut Kv, model: &str, v: vocab::Vocab) -> u64 {
    let n = v.tokens.len() as u64;
    kv.string("tokenizer.ggml.model", model);
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.f32s("tokenizer.ggml.scores", v.scores);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    n
}

/// `_set_vocab_gpt2`.
pub(crate) fn gpt2(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    gpt2_tokens(cx, kv)?;
    vocab::SpecialVocab::load(cx.dir, None, true)?.add_to(kv)
}

/// `_set_vocab_gpt2` before its special vocabulary: `get_vocab_base`'s tokens, types and
/// pre-tokenizer.
pub(crate) fn gpt2_tokens(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    bpe_tokens(kv, crate::bpe::vocab(cx.dir, cx.hp(), cx.tokenizer_pre)?);
    Ok(())
}

/// `_set_vocab_gpt2` of a class whose `get_vocab_base` gives `v`.
pub(crate) fn gpt2_with(cx: &Ctx, kv: &mut Kv, v: crate::bpe::BpeVocab) -> Result<()> {
    bpe_tokens(kv, v);
    vocab::SpecialVocab::load(cx.dir, None, true)?.add_to(kv)
}

fn bpe_tokens(kv: &mut Kv, v: crate::bpe::BpeVocab) {
    kv.string("tokenizer.ggml.model", "gpt2");
    kv.string("tokenizer.ggml.pre", &v.pre);
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.i32s("tokenizer.ggml.token_type", v.types);
}

/// `_try_set_pooling_type`: the pooling of sentence-transformers' `Pooling` module (its
/// `config.json`, through `modules.json`) and a classification head's `classifier_pooling`.
pub(crate) fn pooling(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    const MODES: [(&str, u32); 3] = [("mean", 1), ("cls", 2), ("lasttoken", 3)];
    if let Some(modules) = cx.dir.json("modules.json")? {
        let path = cx.dir.file("modules.json");
        let list = modules
            .as_array()
            .ok_or_else(|| Error::field(&path, "(root)", "not a list"))?;
        let pooling = list.iter().find(|m| {
            m.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("Pooling"))
        });
        if let Some(m) = pooling {
            let dir = m
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::field(&path, "path", "missing from the Pooling module"))?;
            let name = format!("{dir}/config.json");
            let config = cx.dir.json(&name)?.ok_or_else(|| {
                Error::io(&cx.dir.file(&name), std::io::ErrorKind::NotFound.into())
            })?;
            let flag = |k: &str| config.get(k).is_some_and(crate::vocab::truthy);
            let mode = config.get("pooling_mode").and_then(Value::as_str);
            let ty = if flag("pooling_mode_mean_tokens") {
                1
            } else if flag("pooling_mode_cls_token") {
                2
            } else if flag("pooling_mode_lasttoken") {
                3
            } else if let Some((_, t)) = MODES.iter().find(|(m, _)| Some(*m) == mode) {
                *t
            } else {
                return Err(Error::reference(
                    "Only MEAN, CLS, and LAST pooling types supported",
                ));
            };
            kv.u32(&cx.key("pooling_type"), ty);
        }
    }
    if let Some(v) = cx
        .hp()
        .map
        .get("classifier_pooling")
        .filter(|v| !v.is_null())
    {
        let ty = match v.as_str() {
            Some("cls") => 2,
            Some("mean") => 1,
            _ => {
                return Err(Error::reference(format!(
                    "Unsupported classifier_pooling: {v}"
                )))
            }
        };
        kv.u32(&cx.key("classifier.pooling_type"), ty);
    }
    Ok(())
}

/// The keys the older decoders' own `set_gguf_parameters` write after the context length:
/// the embedding width, a feed-forward of four widths, the blocks, the heads, the kv heads,
/// the LayerNorm epsilon (`layer_norm_epsilon`) and the file type.
pub(crate) fn wide_ffn_keys(
    cx: &Ctx,
    kv: &mut Kv,
    n_embd: u64,
    n_head: u64,
    n_kv: u64,
) -> Result<()> {
    kv.u32(&cx.key("embedding_length"), n_embd as u32);
    kv.u32(&cx.key("feed_forward_length"), 4 * n_embd as u32);
    kv.u32(&cx.key("block_count"), cx.block_count as u32);
    kv.u32(&cx.key("attention.head_count"), n_head as u32);
    kv.u32(&cx.key("attention.head_count_kv"), n_kv as u32);
    let eps = cx.hp().float(&["layer_norm_epsilon"])?;
    kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
    kv.u32("general.file_type", cx.file_type);
    Ok(())
}

/// `add_sliding_window_pattern` over `layer_types`, which the class requires (a `KeyError`
/// without it).
pub(crate) fn sliding_window_pattern(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    let types = hp
        .map
        .get("layer_types")
        .ok_or_else(|| Error::reference("KeyError: 'layer_types'"))?;
    kv.bools(
        &cx.key("attention.sliding_window_pattern"),
        sliding_layers(hp, types)?,
    );
    Ok(())
}

/// `num_nextn_predict_layers`, 0 where the config has none: the prediction layers the classes
/// that keep them count as blocks.
pub(crate) fn nextn_layers(hp: &Hparams) -> Result<u64> {
    Ok(hp.opt_int(&["num_nextn_predict_layers"])?.unwrap_or(0))
}

/// `[t == "sliding_attention" for t in layer_types]`.
pub(crate) fn sliding_layers(hp: &Hparams, types: &Value) -> Result<Vec<bool>> {
    types
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t.as_str() == Some("sliding_attention"))
                .collect()
        })
        .ok_or_else(|| Error::field(&hp.path, "layer_types", "not a list"))
}

/// `rope_parameters["partial_rotary_factor"]`, which the class requires.
pub(crate) fn partial_rotary(cx: &Ctx) -> Result<f64> {
    cx.rope()
        .get("partial_rotary_factor")
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::field(&cx.hp().path, "partial_rotary_factor", "missing"))
}

/// A prediction layer's own tensors as Qwen3-Next's and EXAONE's checkpoints store them
/// (`mtp.{part}`), the block part each is written as (`model.layers.{n}.{part}`), and its GGUF
/// tensor.
pub(crate) const MTP_SHARED: [(&str, &str, Tensor); 4] = [
    ("mtp.fc", "eh_proj", Tensor::NEXTN_EH_PROJ),
    ("mtp.pre_fc_norm_embedding", "enorm", Tensor::NEXTN_ENORM),
    ("mtp.pre_fc_norm_hidden", "hnorm", Tensor::NEXTN_HNORM),
    (
        "mtp.norm",
        "shared_head.norm",
        Tensor::NEXTN_SHARED_HEAD_NORM,
    ),
];

/// Whether `name` is in a block past `num_hidden_layers` (`model.layers.{n}.`, a prediction
/// layer stored after the trunk).
pub(crate) fn past_trunk(hp: &Hparams, name: &str) -> bool {
    let layers = hp.map.get("num_hidden_layers").and_then(Value::as_u64);
    let block = name
        .strip_prefix("model.layers.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|b| b.parse::<u64>().ok());
    matches!((block, layers), (Some(b), Some(n)) if b >= n)
}

/// `self.rope_parameters.get("partial_rotary_factor", default)`.
pub(crate) fn partial_rotary_or(cx: &Ctx, default: f64) -> f64 {
    cx.rope()
        .get("partial_rotary_factor")
        .and_then(Value::as_f64)
        .unwrap_or(default)
}

/// The head dimension: `head_dim`, else `hidden_size / num_attention_heads`.
pub(crate) fn head_dim(hp: &Hparams) -> Result<u64> {
    match hp.opt_int(&["head_dim"])? {
        Some(d) => Ok(d),
        None => {
            let heads = hp.int(&["num_attention_heads"])?;
            if heads == 0 {
                return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
            }
            Ok(hp.int(&["hidden_size"])? / heads)
        }
    }
}

/// What `modify_tensors` yields for one tensor: each name with its change.
pub(crate) type Yields = Result<Vec<(String, Rearrange)>>;

/// A fused tensor's rows cut into equal parts, part `i` yielded as `names[i]` (a fused q/k/v,
/// a fused k/v); rows that do not divide evenly are refused as the reference's assertion
/// refuses them.
pub(crate) fn equal_parts(name: &str, shape: &[u64], names: &[String]) -> Yields {
    let rows = shape.first().copied().unwrap_or(0);
    let n = names.len() as u64;
    if n == 0 || rows % n != 0 {
        return Err(Error::reference(format!(
            "AssertionError: {name}: {rows} rows are not {n} equal parts"
        )));
    }
    let c = rows / n;
    Ok(names
        .iter()
        .zip(0..)
        .map(|(part, i)| {
            let change = Rearrange {
                rows: Some((i * c, (i + 1) * c)),
                ..Rearrange::default()
            };
            (part.clone(), change)
        })
        .collect())
}

/// `modify_tensors` yielding the tensor once, under its own name, with `change`.
pub(crate) fn yield_as(name: &str, change: Rearrange) -> Yields {
    Ok(vec![(name.to_owned(), change)])
}

/// `modify_tensors` of the classes whose norms are stored as `weight - 1` (Gemma's,
/// LayerNorm1p): one added to every `*norm.weight`.
pub(crate) fn norms_plus_one(name: &str) -> Yields {
    let change = Rearrange {
        add: norm_offset(name),
        ..Rearrange::default()
    };
    yield_as(name, change)
}

/// What is added to a tensor whose norms are stored as `weight - 1`: one to a norm's weight.
pub(crate) fn norm_offset(name: &str) -> f32 {
    if name.ends_with("norm.weight") {
        1.0
    } else {
        0.0
    }
}

/// The name of a computed tensor outside the blocks (`format_tensor_name(key)` + `.weight`).
pub(crate) fn extra_name(tensor: Tensor) -> String {
    crate::names::format_name(tensor, None, ".weight")
}

/// A per-layer list of SwiGLU clamps (null as 0) cut or padded with 0 to the blocks, where
/// the config has one (Step 3.5's and Ling 3's `clamp_limits`).
pub(crate) fn clamp_list(hp: &Hparams, key: &str, blocks: u64) -> Result<Option<Vec<f32>>> {
    let values = match hp.map.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(Error::field(&hp.path, key, "not a list")),
    };
    let mut out = values
        .iter()
        .take(blocks as usize)
        .map(|v| match v {
            Value::Null => Ok(0.0),
            v => v
                .as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| Error::field(&hp.path, key, format!("{v} is not a number"))),
        })
        .collect::<Result<Vec<f32>>>()?;
    out.resize(blocks as usize, 0.0);
    Ok(Some(out))
}

/// `tokenizer.get_added_vocab()`: the added tokens of `tokenizer.json` with the ids the
/// tokenizer gives them on load (one saved past a gap in the ids is given the next free id,
/// as transformers' fast tokenizer gives it), then those only `tokenizer_config.json`'s
/// `added_tokens_decoder` names, by content.
pub(crate) fn added_vocab(cx: &Ctx) -> Result<Vec<(String, u64)>> {
    let mut out: Vec<(String, u64)> = Vec::new();
    if cx.dir.file("tokenizer.json").is_file() {
        let mut added: Vec<(u32, String)> = crate::bpe::engine(cx.dir)?
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, t)| (id, t.content))
            .collect();
        added.sort();
        out.extend(added.into_iter().map(|(id, c)| (c, u64::from(id))));
    }
    if let Some(c) = cx.dir.json("tokenizer_config.json")? {
        for (i, a) in c
            .get("added_tokens_decoder")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let (Some(content), Ok(i)) = (a.get("content").and_then(Value::as_str), i.parse()) {
                if !out.iter().any(|(c, _)| c == content) {
                    out.push((content.to_owned(), i));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::Order;

    /// The rows `order` writes, by their stored index.
    fn written(order: Order, rows: u64) -> Vec<u64> {
        (0..rows).map(|r| order.source(r, rows)).collect()
    }

    #[test]
    fn llama_interleaves_the_halves_of_each_head() {
        // 2 heads of 4 rows: head rows [0 1 | 2 3] become [0 2 1 3].
        assert_eq!(
            written(Order::LlamaHeads(2), 8),
            vec![0, 2, 1, 3, 4, 6, 5, 7]
        );
    }

    #[test]
    fn rotated_pairs_become_halves_within_each_head() {
        // 2 heads of 6 rows, 4 rotated: [a0 b0 a1 b1 x y] becomes [a0 a1 b0 b1 x y].
        let order = Order::NeoxHeads {
            head_dim: 6,
            rotary: 4,
        };
        assert!(order.check(12).is_ok() && order.check(10).is_err());
        assert_eq!(
            written(order, 12),
            vec![0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11]
        );
    }

    #[test]
    fn parts_stored_a_head_are_written_part_by_part() {
        // 2 heads of [q, k, v v, z z]: q/k/v of both heads, then z of both.
        let stored = [
            "q0", "k0", "v0", "v0", "z0", "z0", "q1", "k1", "v1", "v1", "z1", "z1",
        ];
        let part = |from, to, rows| -> Vec<&str> {
            let order = Order::Segments {
                heads: 2,
                sizes: [1, 1, 2, 2],
                from,
                to,
            };
            assert!(order.check(rows).is_ok());
            assert!(order.check(rows + 1).is_err());
            written(order, rows)
                .into_iter()
                .map(|i| stored[i as usize])
                .collect()
        };
        assert_eq!(
            part(0, 3, 8),
            ["q0", "q1", "k0", "k1", "v0", "v0", "v1", "v1"]
        );
        assert_eq!(part(3, 4, 4), ["z0", "z0", "z1", "z1"]);
    }

    #[test]
    fn value_heads_grouped_by_key_head_become_tiled_after_the_kept_rows() {
        // 2 rows kept, then 2 key heads of 3 value heads of 1 row: [a0 a1 a2 b0 b1 b2]
        // becomes [a0 b0 a1 b1 a2 b2].
        let order = Order::Swapped {
            skip: 2,
            outer: 2,
            inner: 3,
            block: 1,
        };
        assert!(order.check(8).is_ok() && order.check(6).is_err());
        assert_eq!(written(order, 8), vec![0, 1, 2, 5, 3, 6, 4, 7]);
    }

    #[test]
    fn each_heads_interleaved_pairs_become_split_before_the_kept_rows() {
        // 2 heads of 4 rows (2 groups of 2 one-row blocks), then 2 rows kept: each head's
        // [a b c d] becomes [a c b d]; the last two stay.
        let order = Order::HeadsSwapped {
            end: 8,
            outer: 2,
            inner: 2,
            block: 1,
        };
        assert!(order.check(10).is_ok() && order.check(6).is_err());
        assert_eq!(written(order, 10), vec![0, 2, 1, 3, 4, 6, 5, 7, 8, 9]);
    }

    #[test]
    fn fused_qkv_per_head_becomes_q_then_k_then_v() {
        // 2 heads of 2 rows, stored [h0: q q k k v v | h1: q q k k v v].
        let stored = [
            "q0", "q0", "k0", "k0", "v0", "v0", "q1", "q1", "k1", "k1", "v1", "v1",
        ];
        let out: Vec<&str> = written(Order::QkvPerHead(2), 12)
            .into_iter()
            .map(|i| stored[i as usize])
            .collect();
        assert_eq!(
            out,
            ["q0", "q0", "q1", "q1", "k0", "k0", "k1", "k1", "v0", "v0", "v1", "v1"]
        );
    }

    #[test]
    fn kv_groups_become_queries_then_keys_then_values() {
        // 2 groups of 2 queries (1 row each), stored [qa qb k v | qc qd k' v'].
        let stored = ["qa", "qb", "k", "v", "qc", "qd", "k'", "v'"];
        let order = Order::KvGroups { kv: 2, q_per_kv: 2 };
        let out: Vec<&str> = written(order, 8)
            .into_iter()
            .map(|i| stored[i as usize])
            .collect();
        assert_eq!(out, ["qa", "qb", "qc", "qd", "k", "k'", "v", "v'"]);
        assert!(order.check(9).is_err());
    }
}
