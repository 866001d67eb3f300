//! `conversion/starcoder.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;

/// `StarCoderModel`: `GPTBigCodeForCausalLM`.
pub(crate) struct StarCoder;

impl TextModel for StarCoder {
    /// It does not call `TextModel`'s: the feed-forward is 4 × n_embd and one kv head.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| -> Result<u64> { hp.int(&[key]) };
        kv.u32(&cx.key("context_length"), n("n_positions")? as u32);
        base::wide_ffn_keys(cx, kv, n("n_embd")?, n("n_head")?, 1)
    }
}
