//! `conversion/openelm.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::Unsupported;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use serde_json::Value;

/// `OpenELMModel`: `OpenELMForCausalLM`, whose layers differ in heads and feed-forward widths.
pub(crate) struct OpenElm;

/// `_make_divisible`: `v` rounded to a multiple of `divisor`, never below it and never more
/// than a tenth down.
fn make_divisible(v: f64, divisor: u64) -> u64 {
    let d = divisor as f64;
    let mut rounded = (divisor).max(((v + d / 2.0) as u64 / divisor) * divisor);
    if (rounded as f64) < 0.9 * v {
        rounded += divisor;
    }
    rounded
}

/// A per-layer list of the config's counts.
fn counts(hp: &Hparams, key: &str) -> Result<Vec<i32>> {
    hp.map
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_i64().and_then(|n| i32::try_from(n).ok()))
                .collect::<Option<Vec<i32>>>()
        })
        .and_then(|v| v.filter(|v| !v.is_empty()))
        .ok_or_else(|| {
            Error::field(
                &hp.path,
                key,
                "not a list of counts (the reference asserts one)",
            )
        })
}

/// Each layer's feed-forward width: its multiplier times the model width, made divisible.
fn ffn_dims(hp: &Hparams) -> Result<Vec<u64>> {
    let n_embd = hp.int(&["model_dim"])? as f64;
    let divisor = hp.int(&["ffn_dim_divisor"])?;
    if divisor == 0 {
        return Err(Error::field(&hp.path, "ffn_dim_divisor", "zero"));
    }
    hp.map
        .get("ffn_multipliers")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>())
        .map(|m| {
            m.iter()
                .map(|x| make_divisible(x * n_embd, divisor))
                .collect()
        })
        .ok_or_else(|| Error::field(&hp.path, "ffn_multipliers", "not a list of numbers"))
}

impl TextModel for OpenElm {
    /// `find_hparam` answers `num_transformer_layers` for the layer count.
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        hp.int(&["num_transformer_layers"])
    }

    /// Its own keys: per-layer heads, kv heads and widths, the whole head rotated, RMS
    /// epsilon 1e-6 (the modelling code's).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let q_heads = counts(hp, "num_query_heads")?;
        let kv_heads = counts(hp, "num_kv_heads")?;
        let ffn = ffn_dims(hp)?;
        let n = cx.block_count as usize;
        if q_heads.len() != n || kv_heads.len() != n || ffn.len() != n {
            return Err(Error::field(
                &hp.path,
                "num_query_heads",
                format!(
                    "{n} layers, but {} query head counts, {} kv head counts and {} widths \
                     (the reference asserts one each)",
                    q_heads.len(),
                    kv_heads.len(),
                    ffn.len()
                ),
            ));
        }
        let head = base::int32(hp, &["head_dim"])?;
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(
            &k("context_length"),
            base::int32(hp, &["max_context_length"])?,
        );
        kv.u32(&k("embedding_length"), base::int32(hp, &["model_dim"])?);
        let ffn = ffn
            .iter()
            .map(|&w| {
                i32::try_from(w).map_err(|_| Error::field(&hp.path, "ffn_multipliers", "too wide"))
            })
            .collect::<Result<Vec<i32>>>()?;
        kv.i32s(&k("feed_forward_length"), ffn);
        kv.i32s(&k("attention.head_count"), q_heads);
        kv.i32s(&k("attention.head_count_kv"), kv_heads);
        kv.f32(&k("rope.freq_base"), hp.float(&["rope_freq_constant"])?);
        kv.f32(&k("attention.layer_norm_rms_epsilon"), 1e-6);
        kv.u32(&k("rope.dimension_count"), head);
        kv.u32(&k("attention.key_length"), head);
        kv.u32(&k("attention.value_length"), head);
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// The fused feed-forward cut at the layer's width into the gate and the up projection.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if let Some(bid) = base::block_of(name) {
            if name == format!("transformer.layers.{bid}.ffn.proj_1.weight") {
                let dims = ffn_dims(cx.hp())?;
                let ff = *dims.get(bid as usize).ok_or_else(|| {
                    Error::reference(format!("IndexError: block {bid} has no feed-forward width"))
                })?;
                let part = |t: Tensor, rows: (u64, u64)| {
                    let change = Rearrange {
                        rows: Some(rows),
                        ..Rearrange::default()
                    };
                    (format_name(t, Some(bid), ".weight"), change)
                };
                return Ok(vec![
                    part(Tensor::FFN_GATE, (0, ff)),
                    part(Tensor::FFN_UP, (ff, u64::MAX)),
                ]);
            }
        }
        base::yield_as(name, Rearrange::default())
    }

    /// SentencePiece (Llama 2's tokenizer, which the published checkpoints leave out: the
    /// reference then reads llama.cpp's own `models/ggml-vocab-llama-spm.gguf`, which ggufrw
    /// does not carry).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if !cx.dir.has("tokenizer.model") {
            return Err(Unsupported::NotYet(format!(
                "{}: no tokenizer.model. OpenELM uses Llama 2's, which the published \
                 checkpoints leave out and the reference then takes from llama.cpp's \
                 models/ggml-vocab-llama-spm.gguf; put Llama 2's tokenizer.model (and its \
                 tokenizer_config.json) in the folder",
                cx.class
            ))
            .into());
        }
        base::sentencepiece_required(cx, kv)
    }
}
