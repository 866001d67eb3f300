//! `conversion/plm.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;

/// `PLMModel`: `PLMForCausalLM` (multi-head latent attention).
pub(crate) struct Plm;

impl TextModel for Plm {
    /// `TextModel`'s keys, then the latent attention's: the compressed kv rank, a key of
    /// its unrotated and rotated parts, the value width and the rotated width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let n = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
        kv.u32(&cx.key("vocab_size"), n("vocab_size")?);
        kv.u32(&cx.key("attention.kv_lora_rank"), n("kv_lora_rank")?);
        let key_length = n("qk_nope_head_dim")? + n("qk_rope_head_dim")?;
        kv.u32(&cx.key("attention.key_length"), key_length);
        kv.u32(&cx.key("attention.value_length"), n("v_head_dim")?);
        kv.u32(&cx.key("rope.dimension_count"), n("qk_rope_head_dim")?);
        Ok(())
    }
}
