//! `conversion/spark2_5.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use serde_json::Value;

/// `Spark2_5Model`: `Spark2_5ForCausalLM` (sliding and full layers, head-wise attention gates).
pub(crate) struct Spark25;

impl TextModel for Spark25 {
    /// `TextModel`'s keys (the configuration checked first: sliding or full layers, sigmoid
    /// head-wise gates, GELU), the vocabulary size, the window, which layers slide, and the
    /// rotated widths of full and sliding layers.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let types = hp
            .map
            .get("layer_types")
            .ok_or_else(|| Error::reference("KeyError: 'layer_types'"))?;
        let list = types.as_array().map(Vec::as_slice).unwrap_or_default();
        if list.len() as u64 != cx.block_count {
            return Err(Error::reference(format!(
                "ValueError: Spark2_5 layer_types length {} != num_hidden_layers {}",
                list.len(),
                cx.block_count
            )));
        }
        if list
            .iter()
            .any(|t| !matches!(t.as_str(), Some("sliding_attention" | "full_attention")))
        {
            return Err(Error::reference(
                "ValueError: Spark2_5 has unsupported layer_types",
            ));
        }
        if hp.map.get("gate_attn_act_mode").and_then(Value::as_str) != Some("sigmoid")
            || hp.map.get("headwise_attn_output_gate") != Some(&Value::Bool(true))
        {
            return Err(Error::reference(
                "ValueError: Spark2_5 conversion requires head-wise sigmoid attention gates",
            ));
        }
        if hp.map.get("hidden_act").and_then(Value::as_str) != Some("gelu") {
            return Err(Error::reference(
                "ValueError: Spark2_5 conversion requires GELU",
            ));
        }
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(
            &cx.key("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        kv.bools(
            &cx.key("attention.sliding_window_pattern"),
            base::sliding_layers(hp, types)?,
        );
        let head = hp.int(&["head_dim"])? as f64;
        let rope = cx.rope();
        let rotated = |which: &str| -> Result<u32> {
            let pct = rope
                .get(which)
                .and_then(|r| r.get("partial_rotary_factor"))
                .and_then(Value::as_f64)
                .ok_or_else(|| {
                    Error::field(
                        &hp.path,
                        format!("rope_parameters.{which}.partial_rotary_factor"),
                        "missing",
                    )
                })?;
            Ok((head * pct) as u32)
        };
        kv.u32(&cx.key("rope.dimension_count"), rotated("full_attention")?);
        kv.u32(
            &cx.key("rope.dimension_count_swa"),
            rotated("sliding_attention")?,
        );
        Ok(())
    }

    /// The fused q/k/v named as one; a gate must have one row a head.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let bid = base::block_of(name);
        if name.ends_with(".self_attn.q_k_v_proj.weight") {
            let bid = bid.ok_or_else(|| {
                Error::reference(format!("Spark2_5 fused QKV tensor has no block id: {name}"))
            })?;
            let qkv = format_name(Tensor::ATTN_QKV, Some(bid), ".weight");
            return base::yield_as(&qkv, Rearrange::default());
        }
        if name.ends_with(".self_attn.g_proj.weight") {
            let expected = cx.hp().int(&["num_attention_heads"])?;
            if shape.first() != Some(&expected) {
                return Err(Error::reference(format!(
                    "ValueError: Spark2_5 attention gate width {:?} != head count {expected}",
                    shape.first()
                )));
            }
        }
        base::yield_as(name, Rearrange::default())
    }
}
