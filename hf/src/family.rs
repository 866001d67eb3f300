//! Model families: what each of the reference's model classes adds to `TextModel` (its
//! metadata, its tensor renames and rearrangements, its vocabulary). A family is a value of
//! [`Family`]; adding one is a module's worth of these functions plus its table entries.

use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::ArchTable;
use crate::tables::{self, Tensor};
use crate::vocab;
use serde_json::Value;
use std::path::Path;

/// A reference model class this converter implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `conversion/llama.py`'s `LlamaModel`.
    Llama,
    /// `conversion/qwen.py`'s `Qwen2Model`.
    Qwen2,
    /// `conversion/qwen.py`'s `Qwen3Model`.
    Qwen3,
    /// `conversion/qwen.py`'s `Qwen2MoeModel`.
    Qwen2Moe,
    /// `conversion/qwen.py`'s `Qwen3MoeModel`.
    Qwen3Moe,
    /// `conversion/gemma.py`'s `Gemma2Model`.
    Gemma2,
    /// `conversion/gemma.py`'s `Gemma3Model` (text; also the text of
    /// `Gemma3ForConditionalGeneration`).
    Gemma3,
    /// `conversion/phi.py`'s `Phi3MiniModel`.
    Phi3,
}

/// How a checkpoint tensor is changed before it is named (`modify_tensors`' arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rearrange {
    /// The head count of Llama's q/k permutation.
    pub permute_heads: Option<u64>,
    /// Added to every element (Gemma's norms: the checkpoint stores weight - 1).
    pub add: f32,
    /// Only the first rows (Gemma 3's embeddings past the vocabulary).
    pub rows: Option<u64>,
}

/// How a family gathers per-expert tensors into one 3-D tensor per block.
pub struct Experts {
    /// The hparams that give the expert count.
    pub count_keys: &'static [&'static str],
    /// What marks an expert tensor's checkpoint name.
    pub marker: &'static str,
    /// Expert `{xid}`'s weight `{w}` in block `{bid}`.
    pub expert: &'static str,
    /// The merged tensor's checkpoint name.
    pub merged: &'static str,
    /// The weights, in the order the merged tensors are written.
    pub weights: [&'static str; 3],
}

/// Model classes the reference registers for each family.
const CLASSES: &[(&str, Family)] = &[
    ("LLaMAForCausalLM", Family::Llama),
    ("LlamaForCausalLM", Family::Llama),
    ("MistralForCausalLM", Family::Llama),
    ("Qwen2ForCausalLM", Family::Qwen2),
    ("Qwen3ForCausalLM", Family::Qwen3),
    ("Qwen2MoeForCausalLM", Family::Qwen2Moe),
    ("Qwen3MoeForCausalLM", Family::Qwen3Moe),
    ("Gemma2ForCausalLM", Family::Gemma2),
    ("Gemma3ForCausalLM", Family::Gemma3),
    ("Gemma3ForConditionalGeneration", Family::Gemma3),
    ("Phi3ForCausalLM", Family::Phi3),
];

/// The family of an `architectures` class name.
pub fn for_class(class: &str) -> Result<Family> {
    CLASSES
        .iter()
        .find(|(c, _)| *c == class)
        .map(|(_, f)| *f)
        .ok_or_else(|| {
            Error::Unsupported(format!(
                "Model {class} is not supported (ggufrw converts: {})",
                CLASSES
                    .iter()
                    .map(|(c, _)| *c)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

impl Family {
    /// The architecture's tables.
    pub fn arch(self) -> &'static ArchTable {
        match self {
            Family::Llama => &tables::LLAMA,
            Family::Qwen2 => &tables::QWEN2,
            Family::Qwen3 => &tables::QWEN3,
            Family::Qwen2Moe => &tables::QWEN2MOE,
            Family::Qwen3Moe => &tables::QWEN3MOE,
            Family::Gemma2 => &tables::GEMMA2,
            Family::Gemma3 => &tables::GEMMA3,
            Family::Phi3 => &tables::PHI3,
        }
    }

    /// The family's expert layout, for those that merge experts.
    pub fn experts(self) -> Option<Experts> {
        match self {
            Family::Qwen2Moe | Family::Qwen3Moe => Some(Experts {
                count_keys: &["num_local_experts", "num_experts"],
                marker: "experts",
                expert: "model.layers.{bid}.mlp.experts.{xid}.{w}.weight",
                merged: "model.layers.{bid}.mlp.experts.{w}.weight",
                weights: ["down_proj", "gate_proj", "up_proj"],
            }),
            _ => None,
        }
    }

    /// `filter_tensors`, from `ModelBase` through the family's class: the checkpoint name
    /// under which the reference keeps a tensor, or `None` for one it drops.
    pub fn filter(self, name: &str) -> Option<String> {
        let mut name = name.to_owned();
        if self == Family::Llama && name.contains("text_model.") {
            name = name.replace("text_model.", "");
        }
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
        const SKIP_PART: [&str; 19] = [
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
            "",
            "",
        ];
        if SKIP_PREFIX.iter().any(|p| name.starts_with(p))
            || SKIP_PART
                .iter()
                .filter(|p| !p.is_empty())
                .any(|p| name.contains(p))
        {
            return None;
        }
        if self == Family::Gemma2 && name == "lm_head.weight" {
            return None;
        }
        if name.ends_with("e_score_correction_bias") {
            name = name.replace("e_score_correction_bias", "e_score_correction.bias");
        }
        if name.contains("language_model.") {
            name = name.replace("language_model.", "");
        }
        Some(name)
    }

    /// `set_gguf_parameters`: `TextModel`'s keys, then the family's.
    pub fn parameters(
        self,
        hp: &Hparams,
        arch: &str,
        block_count: u64,
        file_type: u32,
        kv: &mut Kv,
    ) -> Result<()> {
        let k = |s: &str| format!("{arch}.{s}");
        match self {
            Family::Gemma2 => return gemma2_parameters(hp, arch, block_count, file_type, kv),
            Family::Phi3 => return phi3_parameters(hp, arch, block_count, file_type, kv),
            _ => {}
        }
        text_parameters(hp, arch, block_count, file_type, kv)?;
        match self {
            Family::Gemma2 | Family::Phi3 => {}
            Family::Gemma3 => gemma3_parameters(hp, arch, kv)?,
            Family::Qwen2 => pooling(hp)?,
            Family::Qwen3 => {
                if qwen3_reranker(hp)? {
                    return Err(Error::Unsupported(
                        "Qwen3 rerankers are not converted yet".into(),
                    ));
                }
                pooling(hp)?
            }
            Family::Qwen2Moe | Family::Qwen3Moe => {
                if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
                    kv.u32(&k("expert_feed_forward_length"), n as u32);
                }
                if let Some(n) = hp.opt_int(&["shared_expert_intermediate_size"])? {
                    kv.u32(&k("expert_shared_feed_forward_length"), n as u32);
                }
            }
            Family::Llama => {
                kv.u32(
                    &format!("{arch}.vocab_size"),
                    hp.int(&["vocab_size"])? as u32,
                );
                let rope_dim = match hp.opt_int(&["head_dim"])? {
                    Some(d) => d,
                    None => {
                        let heads = hp.int(&["num_attention_heads"])?;
                        if heads == 0 {
                            return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
                        }
                        hp.int(&["hidden_size"])? / heads
                    }
                };
                kv.u32(&format!("{arch}.rope.dimension_count"), rope_dim as u32);
            }
        }
        Ok(())
    }

    /// How the family changes a tensor before naming it (`modify_tensors`).
    pub fn rearrange(self, hp: &Hparams, dir: &Path, name: &str) -> Result<Rearrange> {
        let norm = name.ends_with("norm.weight");
        match self {
            Family::Gemma2 => Ok(Rearrange {
                add: if norm { 1.0 } else { 0.0 },
                ..Rearrange::default()
            }),
            Family::Gemma3 => {
                let mut r = Rearrange {
                    add: if norm { 1.0 } else { 0.0 },
                    ..Rearrange::default()
                };
                if name.contains("embed_tokens.weight") {
                    r.rows = Some(gemma3_vocab_rows(dir, hp)?);
                }
                Ok(r)
            }
            _ => Ok(Rearrange {
                permute_heads: self.permutation(hp, name)?,
                ..Rearrange::default()
            }),
        }
    }

    /// The head count of Llama's q/k permutation, if the tensor takes it (`LlamaModel.permute`).
    fn permutation(self, hp: &Hparams, name: &str) -> Result<Option<u64>> {
        if self != Family::Llama {
            return Ok(None);
        }
        if name.contains("block_sparse_moe.experts") {
            return Err(Error::Unsupported(format!(
                "{name}: Mixtral's experts are not converted yet"
            )));
        }
        let n_head = hp.int(&["n_heads", "num_attention_heads"])?;
        let n_kv = hp.int(&["n_kv_heads", "num_key_value_heads"])?;
        if name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias") {
            return Ok(Some(n_head));
        }
        if name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias") {
            return Ok(Some(if n_kv != n_head { n_kv } else { n_head }));
        }
        Ok(None)
    }

    /// `generate_extra_tensors`: tensors the family computes (Llama 3's RoPE factors), as
    /// f32 values and their torch shape.
    pub fn extra_tensors(
        self,
        hp: &Hparams,
        rope: &serde_json::Map<String, Value>,
    ) -> Result<Vec<(String, Vec<f32>)>> {
        match self {
            Family::Phi3 => phi3_rope_factors(hp, rope),
            Family::Qwen2
            | Family::Qwen3
            | Family::Qwen2Moe
            | Family::Qwen3Moe
            | Family::Gemma2
            | Family::Gemma3 => Ok(Vec::new()),
            Family::Llama => {
                let params = rope_params(rope);
                let is_llama3 = params
                    .get("rope_type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.to_lowercase() == "llama3");
                if params.is_empty() || !is_llama3 {
                    return Ok(Vec::new());
                }
                let f = |k: &str, d: f64| params.get(k).and_then(Value::as_f64).unwrap_or(d);
                let base = f("rope_theta", 10000.0);
                let dim = match hp.opt_int(&["head_dim"])? {
                    Some(d) => d,
                    None => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
                };
                let out = llama3_factors(
                    base,
                    dim,
                    f("factor", 8.0),
                    f("low_freq_factor", 1.0),
                    f("high_freq_factor", 4.0),
                    f("original_max_position_embeddings", 8192.0),
                );
                Ok(vec![(
                    crate::names::format_name(Tensor::ROPE_FREQS, None, ".weight"),
                    out,
                )])
            }
        }
    }

    /// `set_vocab`.
    pub fn vocab(self, dir: &Path, hp: &Hparams, kv: &mut Kv, pre: Option<&str>) -> Result<()> {
        match self {
            Family::Qwen2 | Family::Qwen3 => {
                if !sentencepiece(dir, hp, kv)? {
                    gpt2(dir, hp, kv, pre)?;
                }
                Ok(())
            }
            // TextModel.set_vocab: BPE only.
            Family::Qwen2Moe | Family::Qwen3Moe => gpt2(dir, hp, kv, pre),
            Family::Gemma2 => {
                if !sentencepiece(dir, hp, kv)? {
                    return Err(Error::Unsupported(format!(
                        "File not found: {}",
                        dir.join("tokenizer.model").display()
                    )));
                }
                kv.bool("tokenizer.ggml.add_space_prefix", false);
                Ok(())
            }
            Family::Gemma3 => {
                if sentencepiece(dir, hp, kv)? {
                    kv.bool("tokenizer.ggml.add_space_prefix", false);
                } else {
                    gpt2(dir, hp, kv, pre)?;
                }
                Ok(())
            }
            Family::Phi3 => phi3_vocab(dir, hp, kv, pre),
            Family::Llama => {
                let tc_path = dir.join("tokenizer_config.json");
                if tc_path.is_file() {
                    let tc = crate::read_json(&tc_path)?;
                    if let Some(v) = tc.get("add_prefix_space").filter(|v| !v.is_null()) {
                        kv.bool("tokenizer.ggml.add_space_prefix", vocab::truthy(v));
                    }
                    if tc.get("tokenizer_class").and_then(Value::as_str)
                        == Some("HybridDNATokenizer")
                    {
                        return Err(Error::Unsupported(
                            "HybridDNATokenizer vocabularies are not converted yet".into(),
                        ));
                    }
                }
                if dir.join("tekken.json").is_file() && !dir.join("tokenizer.json").is_file() {
                    return Err(Error::Unsupported(
                        "Mistral tekken vocabularies are not converted yet".into(),
                    ));
                }
                if !sentencepiece(dir, hp, kv)? {
                    if llama_hf_style(dir)? {
                        llama_hf(dir, hp, kv)?;
                    } else {
                        gpt2(dir, hp, kv, pre)?;
                    }
                }
                let vocab_size = hp.opt_int(&["vocab_size"])?.unwrap_or(32000);
                if vocab_size == 32016 {
                    return Err(Error::Unsupported(
                        "CodeLlama's infill tokens are not written yet".into(),
                    ));
                }
                if vocab_size == 49152 {
                    kv.bool("tokenizer.ggml.add_bos_token", false);
                }
                Ok(())
            }
        }
    }
}

/// `_set_vocab_sentencepiece`, if there is a `tokenizer.model`.
fn sentencepiece(dir: &Path, hp: &Hparams, kv: &mut Kv) -> Result<bool> {
    let size = hp.opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
    let Some(v) = vocab::sentencepiece(dir, size)? else {
        return Ok(false);
    };
    let n = v.tokens.len() as u64;
    kv.string("tokenizer.ggml.model", "llama");
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.f32s("tokenizer.ggml.scores", v.scores);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    vocab::SpecialVocab::load(dir, Some(n), false)?.add_to(kv)?;
    Ok(true)
}

/// `_set_vocab_llama_hf`.
fn llama_hf(dir: &Path, hp: &Hparams, kv: &mut Kv) -> Result<()> {
    let v = crate::bpe::llama_hf(dir, hp)?;
    let n = v.tokens.len() as u64;
    kv.string("tokenizer.ggml.model", "llama");
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.f32s("tokenizer.ggml.scores", v.scores);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    vocab::SpecialVocab::load(dir, Some(n), false)?.add_to(kv)
}

/// `_set_vocab_gpt2`.
fn gpt2(dir: &Path, hp: &Hparams, kv: &mut Kv, pre: Option<&str>) -> Result<()> {
    let v = crate::bpe::vocab(dir, hp, pre)?;
    kv.string("tokenizer.ggml.model", "gpt2");
    kv.string("tokenizer.ggml.pre", &v.pre);
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    vocab::SpecialVocab::load(dir, None, true)?.add_to(kv)
}

/// Whether `LlamaHfVocab` takes the tokenizer (a BPE model with byte fallback and a sequence
/// decoder, not Llama 3's).
fn llama_hf_style(dir: &Path) -> Result<bool> {
    let path = dir.join("tokenizer.json");
    if !path.is_file() {
        return Ok(false);
    }
    let t = crate::read_json(&path)?;
    let model = t.get("model").cloned().unwrap_or(Value::Null);
    let bpe = model.get("type").and_then(Value::as_str) == Some("BPE");
    let flag = |k: &str, d: bool| model.get(k).map(vocab::truthy).unwrap_or(d);
    let llama3 = bpe && flag("ignore_merges", false) && !flag("byte_fallback", true);
    if llama3 {
        return Ok(false);
    }
    let sequence = t
        .get("decoder")
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        == Some("Sequence");
    Ok(bpe && flag("byte_fallback", false) && sequence)
}

/// `Qwen3Model._is_qwen3_reranker`.
fn qwen3_reranker(hp: &Hparams) -> Result<bool> {
    let dir = hp.path.parent().unwrap_or(Path::new("."));
    let readme = dir.join("README.md");
    if readme.exists() {
        let text = std::fs::read_to_string(&readme)
            .map_err(|e| Error::io(&readme, e))?
            .to_lowercase();
        if text.contains("# qwen3-reranker") || text.contains("# qwen3-vl-reranker") {
            return Ok(true);
        }
    }
    let arch = hp.architecture().unwrap_or_default();
    let hints = [
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        hp.map
            .get("_name_or_path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        hp.map
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        arch.clone(),
    ];
    if hints
        .iter()
        .map(|h| h.to_lowercase())
        .any(|h| h.contains("qwen3-reranker") || h.contains("qwen3-vl-reranker"))
    {
        return Ok(true);
    }
    Ok(arch.to_lowercase().contains("sequenceclassification"))
}

/// `_try_set_pooling_type` for a checkpoint without sentence-transformers modules.
fn pooling(hp: &Hparams) -> Result<()> {
    let dir = hp.path.parent().unwrap_or(Path::new("."));
    if dir.join("modules.json").is_file()
        || hp
            .map
            .get("classifier_pooling")
            .is_some_and(|v| !v.is_null())
    {
        return Err(Error::Unsupported(format!(
            "{}: sentence-transformers pooling is not written yet",
            dir.display()
        )));
    }
    Ok(())
}

/// `self.rope_parameters.get("full_attention", self.rope_parameters)`.
pub fn rope_params(rope: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    match rope.get("full_attention") {
        Some(Value::Object(o)) => o.clone(),
        _ => rope.clone(),
    }
}

/// `TextModel.__init__`'s `rope_parameters`: `rope_parameters` or `rope_scaling`, with the
/// global values mirrored into it.
pub fn rope_parameters(hp: &Hparams) -> serde_json::Map<String, Value> {
    let mut rope = match hp
        .map
        .get("rope_parameters")
        .or_else(|| hp.map.get("rope_scaling"))
    {
        Some(Value::Object(o)) if !o.is_empty() => o.clone(),
        _ => serde_json::Map::new(),
    };
    let theta = hp
        .find(&[
            "global_rope_theta",
            "rope_global_theta",
            "rope_theta_global",
            "rope_theta",
            "rotary_emb_base",
        ])
        .filter(|v| !v.is_null())
        .cloned();
    let local = hp
        .find(&[
            "local_rope_theta",
            "rope_local_theta",
            "rope_theta_local",
            "swa_rope_theta",
            "rope_local_base_freq",
        ])
        .filter(|v| !v.is_null())
        .cloned();
    let partial = hp
        .find(&["partial_rotary_factor", "rope_pct", "rope_percent"])
        .filter(|v| !v.is_null())
        .cloned();
    let orig = hp
        .find(&["original_max_position_embeddings"])
        .filter(|v| !v.is_null())
        .cloned();
    if !rope.contains_key("full_attention") && !rope.contains_key("sliding_attention") {
        if let Some(l) = local {
            let mut m = serde_json::Map::new();
            m.insert("rope_theta".into(), l);
            rope.insert("sliding_attention".into(), Value::Object(m));
        }
        if !rope.contains_key("rope_theta") {
            if let Some(t) = theta {
                rope.insert("rope_theta".into(), t);
            }
        }
        if !rope.contains_key("rope_type") {
            if let Some(t) = rope.get("type").filter(|v| !v.is_null()).cloned() {
                rope.insert("rope_type".into(), t);
            }
        }
        if !rope.contains_key("partial_rotary_factor") {
            if let Some(p) = partial {
                rope.insert("partial_rotary_factor".into(), p);
            }
        }
        if !rope.contains_key("original_max_position_embeddings") {
            if let Some(o) = orig {
                rope.insert("original_max_position_embeddings".into(), o);
            }
        }
    }
    rope
}

fn u32_of(hp: &Hparams, key: &str, v: &Value) -> Result<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| Error::field(&hp.path, key, format!("{v} is not a 32-bit count")))
}

/// `TextModel.set_gguf_parameters`.
fn text_parameters(
    hp: &Hparams,
    arch: &str,
    block_count: u64,
    file_type: u32,
    kv: &mut Kv,
) -> Result<()> {
    let k = |s: &str| format!("{arch}.{s}");
    kv.u32(&k("block_count"), block_count as u32);
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
    for (keys, gguf) in lists {
        match hp.find(keys) {
            None | Some(Value::Null) => {}
            Some(v) => kv.u32(&k(gguf), u32_of(hp, keys[0], v)?),
        }
    }
    if hp.map.get("is_causal") == Some(&Value::Bool(false)) {
        kv.bool(&k("attention.causal"), false);
    }
    let rope = rope_parameters(hp);
    let params = rope_params(&rope);
    if let Some(t) = params.get("rope_type").filter(|v| !v.is_null()) {
        let t = t.as_str().unwrap_or_default();
        let factor = params.get("factor").and_then(Value::as_f64);
        match (t, factor) {
            ("linear", Some(f)) => {
                kv.string(&k("rope.scaling.type"), "linear");
                kv.f32(&k("rope.scaling.factor"), f);
            }
            ("yarn", Some(_)) | ("su" | "longrope", _) => {
                return Err(Error::Unsupported(format!(
                    "RoPE scaling type {t:?} is not written yet"
                )))
            }
            _ => {}
        }
    }
    if rope.contains_key("mrope_section") {
        return Err(Error::Unsupported(
            "mrope sections are not written yet".into(),
        ));
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
    kv.u32("general.file_type", file_type);
    Ok(())
}

/// `Gemma2Model.set_gguf_parameters` (it does not call `TextModel`'s).
fn gemma2_parameters(
    hp: &Hparams,
    arch: &str,
    blocks: u64,
    file_type: u32,
    kv: &mut Kv,
) -> Result<()> {
    let k = |s: &str| format!("{arch}.{s}");
    let n = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
    let f = |key: &str| -> Result<f64> {
        hp.opt_float(&[key])?
            .ok_or_else(|| Error::field(&hp.path, key, "missing"))
    };
    kv.u32(&k("context_length"), n("max_position_embeddings")?);
    kv.u32(&k("embedding_length"), n("hidden_size")?);
    kv.u32(&k("block_count"), blocks as u32);
    kv.u32(&k("feed_forward_length"), n("intermediate_size")?);
    kv.u32(&k("attention.head_count"), n("num_attention_heads")?);
    let kv_heads = if hp.map.contains_key("num_key_value_heads") {
        n("num_key_value_heads")?
    } else {
        n("num_attention_heads")?
    };
    kv.u32(&k("attention.head_count_kv"), kv_heads);
    kv.f32(&k("attention.layer_norm_rms_epsilon"), f("rms_norm_eps")?);
    kv.u32(&k("attention.key_length"), n("head_dim")?);
    kv.u32(&k("attention.value_length"), n("head_dim")?);
    kv.u32("general.file_type", file_type);
    kv.f32(&k("attn_logit_softcapping"), f("attn_logit_softcapping")?);
    kv.f32(&k("final_logit_softcapping"), f("final_logit_softcapping")?);
    kv.u32(&k("attention.sliding_window"), n("sliding_window")?);
    Ok(())
}

/// What `Gemma3Model.set_gguf_parameters` adds after `TextModel`'s (some keys set again,
/// in place).
fn gemma3_parameters(hp: &Hparams, arch: &str, kv: &mut Kv) -> Result<()> {
    let k = |s: &str| format!("{arch}.{s}");
    let n = |key: &str, d: u64| -> Result<u32> { Ok(hp.opt_int(&[key])?.unwrap_or(d) as u32) };
    kv.u32(&k("context_length"), n("max_position_embeddings", 131072)?);
    kv.u32(&k("attention.head_count"), n("num_attention_heads", 8)?);
    kv.f32(
        &k("attention.layer_norm_rms_epsilon"),
        hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-6),
    );
    kv.u32(&k("attention.key_length"), n("head_dim", 256)?);
    kv.u32(&k("attention.value_length"), n("head_dim", 256)?);
    let rope = rope_parameters(hp);
    let theta = rope_params(&rope)
        .get("rope_theta")
        .and_then(Value::as_f64)
        .unwrap_or(1_000_000.0);
    kv.f32(&k("rope.freq_base"), theta);
    if hp
        .map
        .get("attn_logit_softcapping")
        .is_some_and(|v| !v.is_null())
    {
        return Err(Error::field(
            &hp.path,
            "attn_logit_softcapping",
            "Gemma 3 has none (the reference asserts it)",
        ));
    }
    if let Some(v) = hp
        .map
        .get("final_logit_softcapping")
        .filter(|v| vocab::truthy(v))
    {
        let f = v
            .as_f64()
            .ok_or_else(|| Error::field(&hp.path, "final_logit_softcapping", "not a number"))?;
        kv.f32(&k("final_logit_softcapping"), f);
    }
    if hp.map.get("sliding_window_pattern").and_then(Value::as_i64) != Some(1) {
        kv.u32(
            &k("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
    }
    kv.u32(&k("attention.head_count_kv"), n("num_key_value_heads", 4)?);
    Ok(())
}

/// The vocabulary's size, to which Gemma 3 cuts its embedding rows.
fn gemma3_vocab_rows(dir: &Path, hp: &Hparams) -> Result<u64> {
    let model = dir.join("tokenizer.model");
    if model.is_file() {
        let size = hp.opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
        let v = vocab::sentencepiece(dir, size)?.expect("tokenizer.model is a file");
        return Ok(v.tokens.len() as u64);
    }
    let path = dir.join("tokenizer.json");
    let t = crate::read_json(&path)?;
    let n = t
        .get("model")
        .and_then(|m| m.get("vocab"))
        .and_then(Value::as_object)
        .map(|v| v.len());
    let added = t
        .get("added_tokens")
        .and_then(Value::as_array)
        .map(Vec::len);
    match (n, added) {
        (Some(n), Some(a)) => Ok((n + a) as u64),
        _ => Err(Error::field(
            &path,
            "model.vocab",
            "missing (or added_tokens missing)",
        )),
    }
}

/// `Phi3MiniModel.set_gguf_parameters` (it does not call `TextModel`'s).
fn phi3_parameters(
    hp: &Hparams,
    arch: &str,
    blocks: u64,
    file_type: u32,
    kv: &mut Kv,
) -> Result<()> {
    let k = |s: &str| format!("{arch}.{s}");
    let n_embd = hp.int(&["hidden_size", "n_embd"])?;
    let n_head = hp.int(&["num_attention_heads", "n_head"])?;
    let n_head_kv = hp.int(&["num_key_value_heads", "n_head_kv"])?;
    let eps = hp
        .opt_float(&["rms_norm_eps"])?
        .ok_or_else(|| Error::field(&hp.path, "rms_norm_eps", "missing"))?;
    let max_pos = hp.int(&["n_positions", "max_position_embeddings"])?;
    let rope = rope_parameters(hp);
    let orig = rope
        .get("original_max_position_embeddings")
        .and_then(Value::as_u64)
        .ok_or_else(|| Error::field(&hp.path, "original_max_position_embeddings", "missing"))?;
    let rot = rope
        .get("partial_rotary_factor")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    if n_head == 0 {
        return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
    }
    let rope_dims = ((rot * n_embd as f64) as u64) / n_head;
    kv.u32(&k("context_length"), max_pos as u32);
    kv.u32(&k("rope.scaling.original_context_length"), orig as u32);
    kv.u32(&k("embedding_length"), n_embd as u32);
    kv.u32(
        &k("feed_forward_length"),
        hp.int(&["intermediate_size"])? as u32,
    );
    kv.u32(&k("block_count"), blocks as u32);
    kv.u32(&k("attention.head_count"), n_head as u32);
    kv.u32(&k("attention.head_count_kv"), n_head_kv as u32);
    kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
    kv.u32(&k("rope.dimension_count"), rope_dims as u32);
    let theta = rope_params(&rope)
        .get("rope_theta")
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::field(&hp.path, "rope_theta", "missing"))?;
    kv.f32(&k("rope.freq_base"), theta);
    kv.u32("general.file_type", file_type);
    let window = hp.opt_int(&["sliding_window"])?.unwrap_or(0);
    kv.u32(&k("attention.sliding_window"), window as u32);
    Ok(())
}

/// Phi-3's long-context RoPE factors: not written yet (the reference also sets a key before
/// every other then, which this converter's order does not model).
fn phi3_rope_factors(
    _hp: &Hparams,
    rope: &serde_json::Map<String, Value>,
) -> Result<Vec<(String, Vec<f32>)>> {
    if rope.get("long_factor").is_some_and(vocab::truthy) {
        return Err(Error::Unsupported(
            "Phi-3's long-context RoPE factors are not written yet".into(),
        ));
    }
    Ok(Vec::new())
}

/// `Phi3MiniModel.set_vocab`: GPT-2's BPE for Phi-4, else its own reading of SentencePiece.
fn phi3_vocab(dir: &Path, hp: &Hparams, kv: &mut Kv, pre: Option<&str>) -> Result<()> {
    let cfg = dir.join("tokenizer_config.json");
    if cfg.is_file() {
        let c = crate::read_json(&cfg)?;
        let class = c
            .get("tokenizer_class")
            .ok_or_else(|| Error::field(&cfg, "tokenizer_class", "missing"))?;
        if class.as_str() == Some("GPT2Tokenizer") {
            return gpt2(dir, hp, kv, pre);
        }
    }
    let v = vocab::sentencepiece_phi3(dir, hp.opt_int(&["vocab_size"])?)?;
    let n = v.tokens.len() as u64;
    kv.string("tokenizer.ggml.model", "llama");
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", v.tokens);
    kv.f32s("tokenizer.ggml.scores", v.scores);
    kv.i32s("tokenizer.ggml.token_type", v.types);
    vocab::SpecialVocab::load(dir, Some(n), false)?.add_to(kv)
}

/// Llama 3's RoPE factors (`rope_freqs.weight`), one per pair of a head's dimensions, as
/// `LlamaModel.generate_extra_tensors` computes them.
pub(crate) fn llama3_factors(
    base: f64,
    dim: u64,
    factor: f64,
    low: f64,
    high: f64,
    old: f64,
) -> Vec<f32> {
    let low_wavelen = old / low;
    let high_wavelen = old / high;
    let steps = (high - low) as f32;
    // torch computes in float32 throughout: Python numbers meeting a float32 tensor are
    // cast to float32 (comparisons too).
    let (factor, low, old) = (factor as f32, low as f32, old as f32);
    let (low_wavelen, high_wavelen) = (low_wavelen as f32, high_wavelen as f32);
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    let base32 = base as f32;
    let mut out = Vec::new();
    for i in (0..dim).step_by(2) {
        let exponent = i as f32 / dim as f32;
        let freq = 1.0f32 / base32.powf(exponent);
        let wavelen = two_pi / freq;
        let v = if wavelen < high_wavelen {
            1.0
        } else if wavelen > low_wavelen {
            factor
        } else {
            let smooth = (old / wavelen - low) / steps;
            1.0 / ((1.0 - smooth) / factor + smooth)
        };
        out.push(v);
    }
    out
}
