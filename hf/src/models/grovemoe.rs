//! `conversion/grovemoe.py`: inclusionAI's GroveMoE.

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;

/// `GroveMoeModel`: `GroveMoeForCausalLM`. Qwen's experts beside adjugate "chunk" experts,
/// one for each group of two, stacked alike; the unused routing bias left out; the group's
/// width, size and scale as the reference fixes them.
pub(crate) struct GroveMoe;

impl TextModel for GroveMoe {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
            kv.u32(&k("expert_feed_forward_length"), n as u32);
        }
        let chunk = hp
            .opt_int(&["head_dim"])?
            .filter(|&d| d != 0)
            .unwrap_or(128);
        kv.u32(&k("expert_chunk_feed_forward_length"), chunk as u32);
        kv.u32(&k("experts_per_group"), 2);
        kv.f32(&k("expert_group_scale"), 0.05);
        Ok(())
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if name.ends_with(".expert_bias") {
            return Ok(Vec::new());
        }
        base::yield_as(name, Rearrange::default())
    }

    fn adjugate_experts(&self) -> Option<(Experts, u64)> {
        let chunk = Experts {
            marker: "chunk_experts",
            packed: &[],
            expert: "model.layers.{bid}.mlp.chunk_experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.mlp.chunk_experts.{w}.weight",
            ..super::qwen::qwen_experts()
        };
        Some((chunk, 2))
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
