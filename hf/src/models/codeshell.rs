//! `conversion/codeshell.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;

/// `CodeShellModel`: `CodeShellForCausalLM`.
pub(crate) struct CodeShell;

impl TextModel for CodeShell {
    /// Its own keys, not `TextModel`'s: the kv heads are `num_query_groups`, the RoPE base
    /// 10000 and its scaling linear by 1.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| -> Result<u64> { hp.int(&[key]) };
        kv.u32(&cx.key("context_length"), n("n_positions")? as u32);
        base::wide_ffn_keys(cx, kv, n("n_embd")?, n("n_head")?, n("num_query_groups")?)?;
        kv.f32(&cx.key("rope.freq_base"), 10000.0);
        kv.string(&cx.key("rope.scaling.type"), "linear");
        kv.f32(&cx.key("rope.scaling.factor"), 1.0);
        Ok(())
    }
}
