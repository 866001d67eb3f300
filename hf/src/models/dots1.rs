//! `conversion/dots1.py`.

use super::base::{Ctx, Experts, TextModel};
use super::qwen::{self, Qwen2Moe};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `Dots1Model(Qwen2MoeModel)`: `Dots1ForCausalLM`.
pub(crate) struct Dots1;

impl TextModel for Dots1 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2Moe)
    }

    /// The routed experts are counted as `num_experts`.
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        if let Some(n) = hp.map.get("n_routed_experts").cloned() {
            hp.map.insert("num_experts".into(), n);
        }
    }

    /// Qwen2-MoE's keys, then the dense lead, the shared experts and the routing's scale and
    /// normalisation (each required).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        qwen::moe_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let dense = hp.int(&["first_k_dense_replace"])?;
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        kv.u32(
            &k("expert_shared_count"),
            hp.int(&["n_shared_experts"])? as u32,
        );
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        let norm = hp
            .opt_bool(&["norm_topk_prob"])?
            .ok_or_else(|| Error::field(&hp.path, "norm_topk_prob", "missing"))?;
        kv.bool(&k("expert_weights_norm"), norm);
        Ok(())
    }

    /// Qwen's, but for the shared experts (`ModelBase`'s plain tensors in the reference).
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            unless: "shared_experts",
            ..qwen::qwen_experts()
        })
    }
}
