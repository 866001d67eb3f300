//! `conversion/starcoder.py`.

use super::base::{Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;
use crate::tables::{self, ArchTable};

/// `StarCoderModel`: `GPTBigCodeForCausalLM`.
pub(crate) struct StarCoder;

impl TextModel for StarCoder {
    fn arch(&self) -> &'static ArchTable {
        &tables::STARCODER
    }

    /// It does not call `TextModel`'s: the feed-forward is 4 × n_embd and one kv head.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| -> Result<u64> { hp.int(&[key]) };
        kv.u32(&cx.key("context_length"), n("n_positions")? as u32);
        kv.u32(&cx.key("embedding_length"), n("n_embd")? as u32);
        kv.u32(&cx.key("feed_forward_length"), 4 * n("n_embd")? as u32);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(&cx.key("attention.head_count"), n("n_head")? as u32);
        kv.u32(&cx.key("attention.head_count_kv"), 1);
        kv.f32(
            &cx.key("attention.layer_norm_epsilon"),
            hp.float(&["layer_norm_epsilon"])?,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }
}

/// `StarCoder2Model`: `TextModel` under its own architecture.
pub(crate) struct StarCoder2;

impl TextModel for StarCoder2 {
    fn arch(&self) -> &'static ArchTable {
        &tables::STARCODER2
    }
}
