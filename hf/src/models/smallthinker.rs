//! `conversion/smallthinker.py`: PowerInfer's SmallThinker mixtures.

use super::base::{self, Ctx, Experts, TextModel};
use crate::error::Result;
use crate::kv::Kv;
use serde_json::Value;

/// `SmallThinkerModel`: `SmallThinkerForCausalLM`. `TextModel`'s keys and tensors with its own
/// names for the experts' count, width and gating, and a window where any layer slides.
pub(crate) struct SmallThinker;

impl TextModel for SmallThinker {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        if let Some(n) = hp.opt_int(&["moe_num_primary_experts"])? {
            kv.u32(&k("expert_count"), n as u32);
        }
        if let Some(n) = hp.opt_int(&["moe_num_active_primary_experts"])? {
            kv.u32(&k("expert_used_count"), n as u32);
        }
        if let Some(n) = hp.opt_int(&["moe_ffn_hidden_size"])? {
            kv.u32(&k("expert_feed_forward_length"), n as u32);
            kv.u32(&k("feed_forward_length"), n as u32);
        }
        let softmax = hp
            .map
            .get("moe_primary_router_apply_softmax")
            .is_some_and(crate::vocab::truthy);
        kv.u32(&k("expert_gating_func"), if softmax { 1 } else { 2 });
        let layout = hp
            .map
            .get("sliding_window_layout")
            .and_then(Value::as_array);
        let slides = layout.is_some_and(|l| l.iter().any(|i| i.as_i64() != Some(0)));
        if let (true, Some(n)) = (slides, hp.opt_int(&["sliding_window_size"])?) {
            if n > 0 {
                kv.u32(&k("attention.sliding_window"), n as u32);
            }
        }
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &[
                "moe_num_primary_experts",
                "num_local_experts",
                "num_experts",
            ],
            marker: "experts",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.block_sparse_moe.experts.{w}.weight",
            weights: &["down", "gate", "up"],
        })
    }
}
