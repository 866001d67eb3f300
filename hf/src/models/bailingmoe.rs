//! `conversion/bailingmoe.py`: inclusionAI's Ling mixtures.

use super::base::{self, Ctx, Experts, Order, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;

/// `BailingMoeModel`: `BailingMoeForCausalLM` (Ling 1: Ling-lite, Ling-plus). GPT-2's
/// vocabulary; q/k/v stored fused and written apart (q and k permuted as Llama's); experts
/// with shared ones.
pub(crate) struct BailingMoe;

impl TextModel for BailingMoe {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("rope.dimension_count"), base::head_dim(hp)? as u32);
        for (from, to) in [
            ("first_k_dense_replace", "leading_dense_block_count"),
            ("vocab_size", "vocab_size"),
            ("moe_intermediate_size", "expert_feed_forward_length"),
        ] {
            kv.u32(&k(to), base::int32(hp, &[from])?);
        }
        kv.f32(&k("expert_weights_scale"), 1.0);
        kv.u32(
            &k("expert_shared_count"),
            base::int32(hp, &["num_shared_experts"])?,
        );
        let norm = hp
            .opt_bool(&["norm_topk_prob"])?
            .ok_or_else(|| Error::reference("KeyError: 'norm_topk_prob'"))?;
        kv.bool(&k("expert_weights_norm"), norm);
        Ok(())
    }

    /// `attention.dense` as the attention's output; `query_key_value` cut into q, k (both
    /// permuted) and v; an output the config L2-normalises (`norm_head`) refused.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let bid = base::block_of(name);
        if let (Some(bid), true) = (bid, name.ends_with("attention.dense.weight")) {
            let out = format_name(Tensor::ATTN_OUT, Some(bid), ".weight");
            return base::yield_as(&out, Rearrange::default());
        }
        if let (Some(bid), true) = (bid, name.ends_with("query_key_value.weight")) {
            let heads = hp.int(&["num_attention_heads"])?;
            let kv = hp.opt_int(&["num_key_value_heads"])?.ok_or_else(|| {
                Error::reference("TypeError: num_key_value_heads is None (the q/k/v split)")
            })?;
            let hd = base::head_dim(hp)?;
            let (q, k) = (heads * hd, kv * hd);
            if shape.first() != Some(&(q + 2 * k)) {
                return Err(Error::reference(format!(
                    "RuntimeError: {name} of shape {shape:?} cannot be split into {q}, {k} and                      {k} rows"
                )));
            }
            let part = |t: Tensor, first: u64, rows: u64, order: Order| {
                let change = Rearrange {
                    rows: Some((first, first + rows)),
                    order,
                    ..Rearrange::default()
                };
                (format_name(t, Some(bid), ".weight"), change)
            };
            return Ok(vec![
                part(Tensor::ATTN_Q, 0, q, Order::LlamaHeads(heads)),
                part(Tensor::ATTN_K, q, k, Order::LlamaHeads(kv)),
                part(Tensor::ATTN_V, q + k, k, Order::Stored),
            ]);
        }
        let normalised = hp.map.get("norm_head").is_some_and(crate::vocab::truthy);
        if normalised && base::global_tensor(cx, name) == Some(Tensor::OUTPUT) {
            return Err(Error::not_yet(format!(
                "{}: norm_head (the output L2-normalised over its rows, Ling-plus) is not \
                 computed yet",
                hp.path.display()
            )));
        }
        base::yield_as(name, Rearrange::default())
    }

    /// Stacked `down`, `gate`, `up`, counted by `num_local_experts` or `num_experts`.
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_local_experts", "num_experts"],
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}

/// `BailingMoeV2Model`: `BailingMoeV2ForCausalLM` (Ling 2.0, Ring 2.0). GPT-2's vocabulary;
/// q/k/v kept fused; experts with shared ones after leading dense layers, the routing's bias
/// named as a bias; prediction layers counted as blocks.
pub(crate) struct BailingMoeV2;

impl TextModel for BailingMoeV2 {
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        expert_bias_filter(name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let head = base::head_dim(hp)?;
        let pct = base::partial_rotary_or(cx, 0.5);
        kv.u32(&k("rope.dimension_count"), (head as f64 * pct) as u32);
        let need = |key: &str| hp.int(&[key]);
        kv.u32(
            &k("leading_dense_block_count"),
            need("first_k_dense_replace")? as u32,
        );
        kv.u32(&k("vocab_size"), need("vocab_size")? as u32);
        let ff = need("moe_intermediate_size")?;
        kv.u32(&k("expert_feed_forward_length"), ff as u32);
        let shared = need("num_shared_experts")?;
        let shared_ff = hp
            .opt_int(&["moe_shared_expert_intermediate_size"])?
            .unwrap_or(ff * shared);
        kv.u32(&k("expert_shared_feed_forward_length"), shared_ff as u32);
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        kv.u32(&k("expert_shared_count"), shared as u32);
        let norm = hp
            .opt_bool(&["norm_topk_prob"])?
            .ok_or_else(|| Error::reference("KeyError: 'norm_topk_prob'"))?;
        kv.bool(&k("expert_weights_norm"), norm);
        if let Some(n) = hp.opt_int(&["num_nextn_predict_layers"])? {
            kv.u32(&k("nextn_predict_layers"), n as u32);
        }
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}

/// `TextModel`'s filter with the routing's `expert_bias` named as a bias
/// (`expert_bias.bias`), as Ling 2.0's and Ling 3's classes name it.
pub(crate) fn expert_bias_filter(name: &str) -> Option<String> {
    match name.strip_suffix(".expert_bias") {
        Some(stem) => base::filter_tensors(&format!("{stem}.expert_bias.bias")),
        None => base::filter_tensors(name),
    }
}
