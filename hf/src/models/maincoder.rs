//! `conversion/maincoder.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;

/// `MaincoderModel`: `MaincoderForCausalLM`.
pub(crate) struct Maincoder;

impl TextModel for Maincoder {
    /// `TextModel`'s keys, and a head's width rotated where `head_dim` is given.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        if let Some(d) = cx.hp().opt_int(&["head_dim"])? {
            kv.u32(&cx.key("rope.dimension_count"), d as u32);
        }
        Ok(())
    }
}
