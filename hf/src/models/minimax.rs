//! `conversion/minimax.py`.

use super::base::{self, Ctx, Experts, Force, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use ggufrw::quant::GgmlType;
use serde_json::Value;

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

/// `MiniMaxM3Model(MiniMaxM2Model)`: `MiniMaxM3SparseForCausalLM` and the text half of
/// `MiniMaxM3SparseForConditionalGeneration`.
pub(crate) struct MiniMaxM3;

impl TextModel for MiniMaxM3 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&MiniMaxM2)
    }

    /// M2's keys, then the shared experts, the routing's scale (its weights always
    /// normalised), the sparse attention's indexer (`sparse_attention_config`) and the dense
    /// lead: the zeros leading `moe_layer_freq`.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        MiniMaxM2.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(
            &k("expert_shared_count"),
            base::int32(hp, &["n_shared_experts"])?,
        );
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        kv.bool(&k("expert_weights_norm"), true);
        let field = "sparse_attention_config";
        let sac = hp
            .find(&[field])
            .and_then(Value::as_object)
            .ok_or_else(|| Error::field(&hp.path, field, "missing, or not an object"))?;
        for (from, to) in [
            ("sparse_num_index_heads", "head_count"),
            ("sparse_index_dim", "key_length"),
            ("sparse_topk_blocks", "top_k"),
            ("sparse_block_size", "block_size"),
            ("sparse_local_block", "local_blocks"),
        ] {
            let v = sac
                .get(from)
                .ok_or_else(|| Error::field(&hp.path, format!("{field}.{from}"), "missing"))?;
            let v = base::u32_of(hp, &format!("{field}.{from}"), v)?;
            kv.u32(&k(&format!("attention.indexer.{to}")), v);
        }
        let field = "moe_layer_freq";
        let freq = hp
            .find(&[field])
            .and_then(Value::as_array)
            .ok_or_else(|| Error::field(&hp.path, field, "missing, or not a list"))?;
        let dense = freq.iter().take_while(|v| v.as_f64() == Some(0.0)).count();
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        Ok(())
    }

    /// Norms stored as `weight - 1` (Gemma's), one added to every `*norm.weight`.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    /// The indexer's tensors kept F32.
    fn tensor_force_quant(
        &self,
        _cx: &Ctx,
        _name: &str,
        new_name: &str,
        _bid: Option<u64>,
        _n_dims: usize,
    ) -> Option<Force> {
        new_name
            .contains(".indexer.")
            .then_some(Force::Type(GgmlType::F32))
    }
}
