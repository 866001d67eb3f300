//! `conversion/nanbeige.py`.

use super::base::{Ctx, TextModel};
use super::llama::Llama;
use crate::error::Result;
use crate::kv::Kv;
use crate::vocab::truthy;

/// `NanbeigeModel(LlamaModel)`.
pub(crate) struct Nanbeige;

impl TextModel for Nanbeige {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    /// Llama's keys, then how often the blocks are run (at least once) and whether the
    /// final norm is skipped between runs.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Llama.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        // `int(hparams.get("num_loops", 1) or 1)`, then at least 1.
        let loops = hp
            .map
            .get("num_loops")
            .and_then(serde_json::Value::as_i64)
            .filter(|n| *n != 0)
            .unwrap_or(1)
            .max(1);
        kv.u32(&cx.key("num_loops"), loops as u32);
        let skip = hp.map.get("skip_loop_final_norm").is_some_and(truthy);
        kv.bool(&cx.key("skip_loop_final_norm"), skip);
        Ok(())
    }
}
