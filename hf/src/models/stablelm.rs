//! `conversion/stablelm.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use super::gptneox::parallel_keys;
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `StableLMModel`: `StableLmForCausalLM`, `StableLMEpochForCausalLM`.
pub(crate) struct StableLm;

impl TextModel for StableLm {
    /// It does not call `TextModel`'s (no RoPE base).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let pct = base::partial_rotary(cx)?;
        let n_kv = cx.hp().int(&["num_key_value_heads"])?;
        parallel_keys(cx, kv, pct, Some(n_kv), &["layer_norm_eps", "norm_eps"])?;
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
