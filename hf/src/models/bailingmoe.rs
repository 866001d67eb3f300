//! `conversion/bailingmoe.py`: inclusionAI's Ling mixtures.

use super::base::{self, Ctx, Experts, TextModel};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `BailingMoeV2Model`: `BailingMoeV2ForCausalLM` (Ling 2.0, Ring 2.0). GPT-2's vocabulary;
/// q/k/v kept fused; experts with shared ones after leading dense layers, the routing's bias
/// named as a bias; prediction layers counted as blocks.
pub(crate) struct BailingMoeV2;

impl TextModel for BailingMoeV2 {
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    /// `expert_bias` becomes `expert_bias.bias`.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        match name.strip_suffix(".expert_bias") {
            Some(stem) => base::filter_tensors(&format!("{stem}.expert_bias.bias")),
            None => base::filter_tensors(name),
        }
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
