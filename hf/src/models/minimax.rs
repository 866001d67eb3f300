//! `conversion/minimax.py`.

use super::base::{self, Ctx, Experts, TextModel};
use crate::error::Result;
use crate::kv::Kv;

/// `MiniMaxM2Model`: `MiniMaxM2ForCausalLM`.
pub(crate) struct MiniMaxM2;

impl TextModel for MiniMaxM2 {
    /// `TextModel`'s keys, then the experts' width (`intermediate_size`) and the rotated
    /// width (`rotary_dim`), both required.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let ff = hp.int(&["intermediate_size"])?;
        kv.u32(&cx.key("expert_feed_forward_length"), ff as u32);
        kv.u32(
            &cx.key("rope.dimension_count"),
            hp.int(&["rotary_dim"])? as u32,
        );
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_local_experts", "num_experts"],
            marker: "block_sparse_moe.experts.",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.block_sparse_moe.experts.{w}.weight",
            weights: &["w1", "w2", "w3"],
        })
    }
}
