//! `conversion/olmo.py`.

use super::base::{self, Ctx, Experts, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;

/// `OlmoModel`: `OlmoForCausalLM`, `OLMoForCausalLM`.
pub(crate) struct Olmo;

impl TextModel for Olmo {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        kv.f32(&cx.key("attention.layer_norm_epsilon"), 1e-5);
        if let Some(clip) = cx.hp().opt_float(&["clip_qkv"])? {
            kv.f32(&cx.key("attention.clamp_kqv"), clip);
        }
        Ok(())
    }

    /// Llama's q/k permutation, of the weights only.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::qk_permuted(cx, name, false)
    }
}

/// `Olmo2Model`: `Olmo2ForCausalLM`, `Olmo3ForCausalLM`.
pub(crate) struct Olmo2;

impl TextModel for Olmo2 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        if hp.map.contains_key("sliding_window") {
            kv.u32(
                &cx.key("attention.sliding_window"),
                hp.int(&["sliding_window"])? as u32,
            );
            let pattern = match hp.map.get("layer_types") {
                Some(types) => base::sliding_layers(hp, types)?,
                // Olmo 3's default: every fourth layer attends fully.
                None => (0..hp.int(&["num_hidden_layers"])?)
                    .map(|i| (i + 1) % 4 != 0)
                    .collect(),
            };
            kv.bools(&cx.key("attention.sliding_window_pattern"), pattern);
        }
        Ok(())
    }
}

/// `OlmoeModel`: `OlmoeForCausalLM`, Qwen's experts under OLMo's names.
pub(crate) struct Olmoe;

impl TextModel for Olmoe {
    /// The RMS epsilon is 1e-5 whatever the config says (written over `TextModel`'s, in place).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), 1e-5);
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
