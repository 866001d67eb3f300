//! `conversion/mellum.py`: JetBrains' Mellum 2 mixtures.

use super::base::{self, Ctx, Experts, TextModel, Yields};
use super::qwen;
use crate::error::Result;
use crate::kv::Kv;

/// `MellumModel`: `MellumForCausalLM`. `TextModel`'s keys and tensors with Qwen's experts.
pub(crate) struct Mellum;

impl TextModel for Mellum {
    /// `TextModel`'s keys, the experts' width, and the window with its per-layer pattern
    /// unless `use_sliding_window` is false.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
            kv.u32(&cx.key("expert_feed_forward_length"), n as u32);
        }
        let windowed = hp.opt_bool(&["use_sliding_window"])? != Some(false);
        if let (true, Some(n)) = (windowed, hp.opt_int(&["sliding_window"])?) {
            kv.u32(&cx.key("attention.sliding_window"), n as u32);
            base::sliding_window_pattern(cx, kv)?;
        }
        Ok(())
    }

    /// Experts stored packed (as transformers 5 holds them) are cut as Qwen's are; the
    /// reference stacks only experts stored one by one and would leave packed ones out.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        qwen::Qwen2Moe.modify_tensors(cx, name, shape)
    }

    fn experts(&self) -> Option<Experts> {
        Some(qwen::qwen_experts())
    }
}
