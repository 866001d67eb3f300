//! `config.json` and `generation_config.json` of an exported folder: the fields the family's
//! transformers class reads, from the GGUF keys the converter wrote them to (and, where the
//! converter computed a tensor from the config, from that tensor).

use super::family::Family;
use super::Dtype;
use crate::error::{Error, Result};
use ggufrw::view::{GgufView, ValueRef};
use serde_json::{json, Map, Value};
use std::path::Path;

/// A GGUF file's metadata, read by key with the file named in errors.
pub(crate) struct Keys<'v, 'a> {
    pub view: &'v GgufView<'a>,
    pub source: &'v Path,
    pub arch: String,
}

impl Keys<'_, '_> {
    fn scalar(&self, key: &str) -> Option<f64> {
        match self.view.get(key)? {
            ValueRef::Scalar(s) => s.get::<f64>().or_else(|| {
                s.get::<u64>()
                    .map(|v| v as f64)
                    .or_else(|| s.get::<i64>().map(|v| v as f64))
                    .or_else(|| s.get::<u32>().map(f64::from))
                    .or_else(|| s.get::<i32>().map(f64::from))
                    .or_else(|| s.get::<f32>().map(f64::from))
            }),
            _ => None,
        }
    }

    /// `{arch}.{key}` as an integer, if present.
    pub fn opt_u64(&self, key: &str) -> Option<u64> {
        self.scalar(&format!("{}.{key}", self.arch))
            .map(|v| v as u64)
    }

    /// `{arch}.{key}` as an integer, required.
    pub fn u64(&self, key: &str) -> Result<u64> {
        self.opt_u64(key).ok_or_else(|| {
            Error::field(
                self.source,
                format!("{}.{key}", self.arch),
                "missing, or not a number",
            )
        })
    }

    /// `{arch}.{key}` as the f32 it was written as, widened exactly.
    pub fn opt_f32(&self, key: &str) -> Option<Value> {
        let v = self.scalar(&format!("{}.{key}", self.arch))?;
        Some(json_f32(v as f32))
    }

    /// A key outside the architecture's prefix, as an integer.
    pub fn global_u64(&self, key: &str) -> Option<u64> {
        self.scalar(key).map(|v| v as u64)
    }

    /// A string key.
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.view.get(key)? {
            ValueRef::String(s) => s.as_str().ok(),
            _ => None,
        }
    }
}

/// An f32 as the shortest decimal that reads back as it (as Python prints a float32 that
/// torch or numpy widened: `1e-06`, not `9.999999974752427e-07`).
fn json_f32(v: f32) -> Value {
    let text = format!("{v:?}");
    let parsed: f64 = text.parse().unwrap_or(f64::from(v));
    serde_json::Number::from_f64(parsed)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// The transformers class and `model_type` of a family.
pub(crate) fn class(family: Family) -> (&'static str, &'static str) {
    match family {
        Family::Llama => ("LlamaForCausalLM", "llama"),
        Family::Qwen2 => ("Qwen2ForCausalLM", "qwen2"),
        Family::Qwen3 => ("Qwen3ForCausalLM", "qwen3"),
        Family::Qwen2Moe => ("Qwen2MoeForCausalLM", "qwen2_moe"),
        Family::Qwen3Moe => ("Qwen3MoeForCausalLM", "qwen3_moe"),
        Family::Gemma2 => ("Gemma2ForCausalLM", "gemma2"),
        Family::Gemma3 => ("Gemma3ForCausalLM", "gemma3_text"),
        Family::Phi3 => ("Phi3ForCausalLM", "phi3"),
    }
}

/// What the config needs of the tensors.
pub(crate) struct Shapes {
    /// Rows of `token_embd.weight`.
    pub vocab: u64,
    /// Whether there is an `output.weight` (else the embeddings are tied).
    pub has_output: bool,
    /// Whether the attention projections have biases.
    pub attention_bias: bool,
    /// Llama 3's `rope_freqs.weight`, Phi-3's long and short factors.
    pub rope_freqs: Option<Vec<f32>>,
    pub rope_long: Option<Vec<f32>>,
    pub rope_short: Option<Vec<f32>>,
}

/// `config.json`.
pub(crate) fn config(
    k: &Keys<'_, '_>,
    family: Family,
    shapes: &Shapes,
    dtype: Dtype,
) -> Result<Value> {
    let (class, model_type) = class(family);
    let mut c = Map::new();
    c.insert("architectures".into(), json!([class]));
    c.insert("model_type".into(), model_type.into());
    let hidden = k.u64("embedding_length")?;
    let heads = k.u64("attention.head_count")?;
    if heads == 0 {
        return Err(Error::field(
            k.source,
            format!("{}.attention.head_count", k.arch),
            "is 0",
        ));
    }
    let kv_heads = k.opt_u64("attention.head_count_kv").unwrap_or(heads);
    let head_dim = k
        .opt_u64("attention.key_length")
        .or_else(|| {
            k.opt_u64("rope.dimension_count")
                .filter(|_| family == Family::Llama)
        })
        .unwrap_or(hidden / heads);
    c.insert("hidden_size".into(), hidden.into());
    c.insert(
        "intermediate_size".into(),
        k.u64("feed_forward_length")?.into(),
    );
    c.insert("num_hidden_layers".into(), k.u64("block_count")?.into());
    c.insert("num_attention_heads".into(), heads.into());
    c.insert("num_key_value_heads".into(), kv_heads.into());
    // The converter writes key_length only from a config's head_dim; without one the classes
    // take hidden/heads (Qwen 3's and Gemma's default differently, so theirs is always written).
    let own_default = matches!(
        family,
        Family::Qwen3 | Family::Qwen3Moe | Family::Gemma2 | Family::Gemma3
    );
    if own_default || head_dim != hidden / heads || k.opt_u64("attention.key_length").is_some() {
        c.insert("head_dim".into(), head_dim.into());
    }
    if let Some(n) = k.opt_u64("context_length") {
        c.insert("max_position_embeddings".into(), n.into());
    }
    if let Some(eps) = k.opt_f32("attention.layer_norm_rms_epsilon") {
        c.insert("rms_norm_eps".into(), eps);
    }
    c.insert(
        "rope_theta".into(),
        k.opt_f32("rope.freq_base").unwrap_or(json!(10000.0)),
    );
    c.insert("vocab_size".into(), shapes.vocab.into());
    c.insert("tie_word_embeddings".into(), (!shapes.has_output).into());
    for (key, field) in [
        ("tokenizer.ggml.bos_token_id", "bos_token_id"),
        ("tokenizer.ggml.eos_token_id", "eos_token_id"),
        ("tokenizer.ggml.padding_token_id", "pad_token_id"),
    ] {
        match k.global_u64(key) {
            Some(id) => {
                c.insert(field.into(), id.into());
            }
            // Explicitly none: some classes default to an id past a small vocabulary
            // (Phi-3's pad_token_id 32000), which they then refuse.
            None => {
                c.insert(field.into(), Value::Null);
            }
        }
    }
    let act = match family {
        Family::Gemma2 | Family::Gemma3 => "gelu_pytorch_tanh",
        _ => "silu",
    };
    c.insert("hidden_act".into(), act.into());
    c.insert(
        "torch_dtype".into(),
        match dtype {
            Dtype::F32 => "float32",
            Dtype::F16 => "float16",
            _ => "bfloat16",
        }
        .into(),
    );
    if let Some(rope) = rope_scaling(k, family, shapes, head_dim)? {
        c.insert("rope_scaling".into(), rope);
    }
    match family {
        Family::Llama => {
            c.insert("attention_bias".into(), shapes.attention_bias.into());
            c.insert("mlp_bias".into(), false.into());
        }
        Family::Qwen2 | Family::Qwen3 | Family::Qwen2Moe | Family::Qwen3Moe => {
            if family == Family::Qwen3 || family == Family::Qwen3Moe {
                c.insert("attention_bias".into(), shapes.attention_bias.into());
            }
            c.insert("use_sliding_window".into(), false.into());
            if matches!(family, Family::Qwen2Moe | Family::Qwen3Moe) {
                let n = |key: &str| k.opt_u64(key);
                if let Some(e) = n("expert_count") {
                    c.insert("num_experts".into(), e.into());
                }
                if let Some(e) = n("expert_used_count") {
                    c.insert("num_experts_per_tok".into(), e.into());
                }
                if let Some(e) = n("expert_feed_forward_length") {
                    c.insert("moe_intermediate_size".into(), e.into());
                }
                if let Some(e) = n("expert_shared_feed_forward_length") {
                    c.insert("shared_expert_intermediate_size".into(), e.into());
                }
                // llama.cpp normalizes the chosen experts' weights for Qwen3-MoE and not for
                // Qwen2-MoE.
                c.insert("norm_topk_prob".into(), (family == Family::Qwen3Moe).into());
                c.insert("decoder_sparse_step".into(), 1.into());
                c.insert("mlp_only_layers".into(), json!([]));
            }
        }
        Family::Gemma2 | Family::Gemma3 => {
            c.insert("hidden_activation".into(), act.into());
            if let Some(w) = k.opt_u64("attention.sliding_window") {
                c.insert("sliding_window".into(), w.into());
            }
            // llama.cpp scales queries by 1/sqrt(head_dim), and by 1/sqrt(hidden/heads) for
            // the 27B models (62 blocks in Gemma 3, 46 in Gemma 2).
            let blocks = k.u64("block_count")?;
            let big = (family == Family::Gemma3 && blocks == 62)
                || (family == Family::Gemma2 && blocks == 46);
            c.insert(
                "query_pre_attn_scalar".into(),
                (if big { hidden / heads } else { head_dim }).into(),
            );
            if family == Family::Gemma2 {
                for key in ["attn_logit_softcapping", "final_logit_softcapping"] {
                    if let Some(v) = k.opt_f32(key) {
                        c.insert(key.into(), v);
                    }
                }
            } else {
                c.insert(
                    "rope_local_base_freq".into(),
                    k.opt_f32("rope.freq_base_swa").unwrap_or(json!(10000.0)),
                );
            }
        }
        Family::Phi3 => {
            // The converter writes 0 for a model without a window; transformers reads 0 as a
            // window of nothing.
            let window = k.opt_u64("attention.sliding_window").filter(|&w| w > 0);
            c.insert(
                "sliding_window".into(),
                window.map_or(Value::Null, Value::from),
            );
            if let Some(d) = k.opt_u64("rope.dimension_count") {
                if d != head_dim {
                    c.insert(
                        "partial_rotary_factor".into(),
                        json_f32(d as f32 / head_dim as f32),
                    );
                }
            }
            if let Some(n) = k.opt_u64("rope.scaling.original_context_length") {
                c.insert("original_max_position_embeddings".into(), n.into());
            }
        }
    }
    Ok(Value::Object(c))
}

/// `rope_scaling`: linear or YaRN from the scaling keys, Phi-3's long and short factors, or
/// the Llama 3 parameters that give exactly the converter's `rope_freqs.weight`.
fn rope_scaling(
    k: &Keys<'_, '_>,
    family: Family,
    shapes: &Shapes,
    head_dim: u64,
) -> Result<Option<Value>> {
    if let (Some(long), Some(short)) = (&shapes.rope_long, &shapes.rope_short) {
        let as_json = |v: &[f32]| Value::Array(v.iter().map(|x| json_f32(*x)).collect());
        return Ok(Some(json!({
            "type": "longrope",
            "long_factor": as_json(long),
            "short_factor": as_json(short),
        })));
    }
    if let Some(freqs) = &shapes.rope_freqs {
        let theta = k
            .opt_f32("rope.freq_base")
            .and_then(|v| v.as_f64())
            .unwrap_or(10000.0);
        return llama3_parameters(freqs, theta, head_dim)
            .map(Some)
            .ok_or_else(|| {
                Error::field(
                    k.source,
                    "rope_freqs.weight",
                    "no Llama 3 rope_scaling (factor, low/high frequency factors, original \
                     context) gives these factors exactly",
                )
            });
    }
    let kind = k.str(&format!("{}.rope.scaling.type", k.arch));
    let factor = k.opt_f32("rope.scaling.factor");
    match (kind, factor) {
        (Some("linear"), Some(f)) => Ok(Some(json!({"rope_type": "linear", "factor": f}))),
        (Some("yarn"), Some(f)) => {
            let mut r = Map::new();
            r.insert("rope_type".into(), "yarn".into());
            r.insert("factor".into(), f);
            if let Some(n) = k.opt_u64("rope.scaling.original_context_length") {
                r.insert("original_max_position_embeddings".into(), n.into());
            }
            Ok(Some(Value::Object(r)))
        }
        (None | Some("none"), _) | (_, None) => {
            let _ = family;
            Ok(None)
        }
        (Some(other), _) => Err(Error::field(
            k.source,
            format!("{}.rope.scaling.type", k.arch),
            format!("{other}: not exported"),
        )),
    }
}

/// The Llama 3 `rope_scaling` whose factors (computed as the converter computes them) are
/// exactly `freqs`: the factor is their largest value; the transition band gives the rest,
/// tried over the values Llama 3 models use.
fn llama3_parameters(freqs: &[f32], theta: f64, head_dim: u64) -> Option<Value> {
    let factor = freqs.iter().copied().fold(f32::MIN, f32::max);
    for low in [1.0, 2.0, 0.5] {
        for high in [4.0, 8.0, 2.0, 1.0] {
            if high <= low {
                continue;
            }
            for shift in 5..=20 {
                let old = f64::from(1u32 << shift);
                let candidate = crate::models::llama3_factors(
                    theta,
                    head_dim,
                    f64::from(factor),
                    low,
                    high,
                    old,
                );
                let same = candidate.len() == freqs.len()
                    && candidate
                        .iter()
                        .zip(freqs)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                if same {
                    return Some(json!({
                        "rope_type": "llama3",
                        "factor": json_f32(factor),
                        "low_freq_factor": low,
                        "high_freq_factor": high,
                        "original_max_position_embeddings": old as u64,
                    }));
                }
            }
        }
    }
    None
}

/// `generation_config.json`: the special tokens, as `GenerationConfig.from_model_config`
/// writes them.
pub(crate) fn generation(k: &Keys<'_, '_>) -> Value {
    let mut g = Map::new();
    for (key, field) in [
        ("tokenizer.ggml.bos_token_id", "bos_token_id"),
        ("tokenizer.ggml.eos_token_id", "eos_token_id"),
        ("tokenizer.ggml.padding_token_id", "pad_token_id"),
    ] {
        if let Some(id) = k.global_u64(key) {
            g.insert(field.into(), id.into());
        }
    }
    // general.sampling.*, under the names the converter reads them by.
    for (field, key, integer) in crate::metadata::SAMPLING {
        let value = match integer {
            None => k.view.get(key).and_then(|v| v.as_str()).map(Value::from),
            Some(true) => k.scalar(key).map(|v| Value::from(v as i64)),
            Some(false) => k.scalar(key).map(|v| json_f32(v as f32)),
        };
        if let Some(v) = value {
            g.insert(field.into(), v);
        }
    }
    Value::Object(g)
}
