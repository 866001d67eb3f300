//! `conversion/jais.py`.

use super::base::{self, Ctx, Rearrange, ScalarKey, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use serde_json::Value;

/// `Jais2Model`: `Jais2ForCausalLM`.
pub(crate) struct Jais2;

impl TextModel for Jais2 {
    /// `TextModel`'s keys, and a head's width rotated.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let dim = base::head_dim(cx.hp())?;
        kv.u32(&cx.key("rope.dimension_count"), dim as u32);
        Ok(())
    }
}

/// `JaisModel`: `JAISLMHeadModel` (GPT-2's layout, SwiGLU, ALiBi, µP scales).
pub(crate) struct Jais;

/// The config's first key of each pair present, or the product of a pair.
fn jais_scales(cx: &Ctx) -> Result<(f64, f64)> {
    let hp = cx.hp();
    let f = |k: &str| hp.opt_float(&[k]);
    let embeddings = match (f("mup_embeddings_scale")?, f("embeddings_scale")?) {
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => {
            return Err(Error::field(
                &hp.path,
                "embeddings_scale",
                "missing, as is mup_embeddings_scale (the reference asserts one)",
            ))
        }
    };
    let width = match (f("mup_output_alpha")?, f("width_scale")?) {
        (Some(alpha), _) => {
            let w = f("mup_width_scale")?.ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "mup_width_scale",
                    "missing beside mup_output_alpha",
                )
            })?;
            alpha * w
        }
        (None, Some(s)) => s,
        (None, None) => {
            return Err(Error::field(
                &hp.path,
                "width_scale",
                "missing, as is mup_output_alpha (the reference asserts one)",
            ))
        }
    };
    Ok((embeddings, width))
}

/// The ALiBi bias the slopes were made for: `-round(log2(slope 0) × 2^floor(log2(heads)))`.
fn max_alibi_bias(cx: &Ctx, slopes: &[f32]) -> Result<f64> {
    let heads = cx.hp().int(&["n_head"])?.max(1);
    let closest = 2f64.powi(heads.ilog2() as i32);
    let first = slopes
        .first()
        .ok_or_else(|| Error::reference("IndexError: relative_pe.slopes is empty"))?;
    Ok(-(f64::from(*first).log2() * closest).round_ties_even())
}

const ALIBI_KEY: &str = "attention.max_alibi_bias";

impl TextModel for Jais {
    /// The causal masks (`.attn.bias`) are not weights.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(name).filter(|n| !n.ends_with(".attn.bias"))
    }

    /// Its own keys; the activation and position embedding are checked as the reference
    /// asserts them.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        for (key, want) in [
            ("activation_function", "swiglu"),
            ("position_embedding_type", "alibi"),
        ] {
            if hp.map.get(key).and_then(Value::as_str) != Some(want) {
                return Err(Error::field(
                    &hp.path,
                    key,
                    format!("not {want:?} (the reference asserts it)"),
                ));
            }
        }
        jais_scales(cx)?;
        let k = |s: &str| cx.key(s);
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(&k("context_length"), base::int32(hp, &["n_positions"])?);
        kv.u32(&k("embedding_length"), base::int32(hp, &["n_embd"])?);
        kv.u32(&k("feed_forward_length"), base::int32(hp, &["n_inner"])?);
        kv.u32(&k("attention.head_count"), base::int32(hp, &["n_head"])?);
        kv.f32(
            &k("attention.layer_norm_epsilon"),
            hp.float(&["layer_norm_epsilon"])?,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// The slopes give the ALiBi bias key instead of a tensor.
    fn scalar_key(&self, cx: &Ctx, name: &str) -> Option<ScalarKey> {
        name.ends_with("relative_pe.slopes")
            .then(|| ScalarKey::Derived(cx.key(ALIBI_KEY), max_alibi_bias))
    }

    /// Without slopes, 8.
    fn after_tensors(&self, cx: &Ctx, early: &mut Kv) -> Result<()> {
        let key = cx.key(ALIBI_KEY);
        if !early.contains(&key) {
            early.f32(&key, 8.0);
        }
        Ok(())
    }

    /// `Conv1D` weights transposed; the embeddings and the output scaled.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let mut change = Rearrange {
            transpose: [
                ".c_attn.weight",
                ".c_proj.weight",
                ".c_fc.weight",
                ".c_fc2.weight",
            ]
            .iter()
            .any(|s| name.ends_with(s)),
            ..Rearrange::default()
        };
        let (embeddings, width) = jais_scales(cx)?;
        change.scale = match base::global_tensor(cx, name) {
            Some(Tensor::TOKEN_EMBD) => Some(embeddings as f32),
            Some(Tensor::OUTPUT) => Some(width as f32),
            _ => None,
        };
        base::yield_as(name, change)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}
