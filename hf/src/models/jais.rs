//! `conversion/jais.py` (Jais 2).

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;

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
