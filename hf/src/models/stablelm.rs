//! `conversion/stablelm.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `StableLMModel`: `StableLmForCausalLM`, `StableLMEpochForCausalLM`.
pub(crate) struct StableLm;

impl TextModel for StableLm {
    /// It does not call `TextModel`'s (no RoPE base).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| hp.int(&[key]);
        kv.u32(
            &cx.key("context_length"),
            n("max_position_embeddings")? as u32,
        );
        kv.u32(&cx.key("embedding_length"), n("hidden_size")? as u32);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(
            &cx.key("feed_forward_length"),
            n("intermediate_size")? as u32,
        );
        let pct = base::partial_rotary(cx)?;
        let heads = n("num_attention_heads")?;
        if heads == 0 {
            return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
        }
        kv.u32(
            &cx.key("rope.dimension_count"),
            (pct * (n("hidden_size")? / heads) as f64) as u32,
        );
        kv.u32(&cx.key("attention.head_count"), heads as u32);
        kv.u32(
            &cx.key("attention.head_count_kv"),
            n("num_key_value_heads")? as u32,
        );
        let parallel = match hp.map.get("use_parallel_residual") {
            None => true,
            Some(v) => crate::vocab::truthy(v),
        };
        kv.bool(&cx.key("use_parallel_residual"), parallel);
        kv.f32(
            &cx.key("attention.layer_norm_epsilon"),
            hp.float(&["layer_norm_eps", "norm_eps"])?,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// Per-head q/k norms are meant to be stacked; the pinned reference's `modify_tensors`
    /// returns the stacking generator instead of yielding from it, so it ends with
    /// "Unprocessed norms" for every such checkpoint: refused the same way.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if name.contains("q_layernorm.norms") || name.contains("k_layernorm.norms") {
            return Err(Error::reference(format!(
                "Unprocessed norms: {name} (the pinned reference cannot convert StableLM's \\
                 per-head q/k norms)"
            )));
        }
        base::yield_as(name, Rearrange::default())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if cx.dir.has("tokenizer.json") {
            return base::gpt2(cx, kv);
        }
        Err(Error::not_yet(format!(
            "{}: StableLM 2's Qwen-style vocabulary (no tokenizer.json) is not read yet",
            cx.dir.path.display()
        )))
    }
}
