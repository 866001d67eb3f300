//! `conversion/afmoe.py`: Arcee's Trinity mixtures.

use super::base::{Ctx, Experts, Rearrange, TextModel, Yields};
use super::llama::Llama;
use crate::error::Result;
use crate::kv::Kv;

/// `AfmoeModel(LlamaModel)`: `AfmoeForCausalLM`. Llama's keys and vocabulary, no q/k
/// permutation; experts stacked gate, up, down; the routing's bias named as a bias.
pub(crate) struct Afmoe;

impl TextModel for Afmoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    /// `expert_bias` becomes `expert_bias.bias`, then Llama's filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match name.strip_suffix(".expert_bias") {
            Some(stem) => Llama.filter_tensors(cx, &format!("{stem}.expert_bias.bias")),
            None => Llama.filter_tensors(cx, name),
        }
    }

    /// Llama's keys, then the mixture's and the window, each where the config has it.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Llama.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        if let Some(n) = hp.opt_int(&["num_shared_experts"])? {
            kv.u32(&k("expert_shared_count"), n as u32);
        }
        if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
            kv.u32(&k("expert_feed_forward_length"), n as u32);
        }
        if let Some(n) = hp.opt_int(&["num_dense_layers"])? {
            kv.u32(&k("leading_dense_block_count"), n as u32);
        }
        if let Some(norm) = hp.opt_bool(&["route_norm"])? {
            kv.bool(&k("expert_weights_norm"), norm);
        }
        if let Some(scale) = hp.opt_float(&["route_scale"])? {
            kv.f32(&k("expert_weights_scale"), scale);
        }
        if let Some(n) = hp.opt_int(&["sliding_window"])? {
            kv.u32(&k("attention.sliding_window"), n as u32);
        }
        Ok(())
    }

    /// `ModelBase.modify_tensors`: every tensor as it is.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        Ok(vec![(name.to_owned(), Rearrange::default())])
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            weights: &["gate_proj", "up_proj", "down_proj"],
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
