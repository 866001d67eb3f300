//! `conversion/command_r.py` (the dense classes).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;

/// `CommandR2Model`: `CohereForCausalLM`.
pub(crate) struct CommandR;

impl TextModel for CommandR {
    /// The context is `model_max_length` where the config has it (`__init__`).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let mut changed = hp.clone();
        if let Some(v) = hp.find(&["model_max_length", "max_position_embeddings"]) {
            changed
                .map
                .insert("max_position_embeddings".into(), v.clone());
        }
        let cx = cx.with_hparams(&changed);
        base::set_gguf_parameters(&cx, kv)?;
        kv.f32(&cx.key("logit_scale"), hp.float(&["logit_scale"])?);
        kv.string(&cx.key("rope.scaling.type"), "none");
        Ok(())
    }
}

/// `Cohere2Model`: Command R7B.
pub(crate) struct Cohere2;

impl TextModel for Cohere2 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.f32(&cx.key("logit_scale"), hp.float(&["logit_scale"])?);
        kv.u32(
            &cx.key("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let pct = hp.float(&["rotary_pct"])?;
        let heads = hp.int(&["num_attention_heads"])?.max(1);
        let dim = (pct * (hp.int(&["hidden_size"])? / heads) as f64) as u32;
        kv.u32(&cx.key("rope.dimension_count"), dim);
        kv.string(&cx.key("rope.scaling.type"), "none");
        Ok(())
    }

    /// The biases are all zero and llama.cpp has none: dropped (refused when not zero).
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let change = Rearrange {
            drop_if_zero: name.ends_with(".bias"),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}
