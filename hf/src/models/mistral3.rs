//! `conversion/mistral3.py`: Ministral 3, and the text half of Mistral Small 3.1 and its kin
//! (`Mistral3ForConditionalGeneration`); Mistral 4 is not converted yet.

use super::base::{Ctx, TextModel};
use super::llama::Llama;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `Mistral3Model.Ministral3Model(LlamaModel)`: `Ministral3ForCausalLM`.
pub(crate) struct Ministral3;

impl TextModel for Ministral3 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    /// Llama's keys (YaRN scaling among them), then YaRN's log multiplier and the attention
    /// temperature of Llama 4's scaling, which a `ministral3` configuration must give.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        if hp.map.get("model_type").and_then(Value::as_str) == Some("mistral4") {
            // `Mistral3Model.Mistral4Model(DeepseekV2Model)`, architecture `mistral4`
            return Err(Error::not_yet(
                "Mistral 4 (a mistral4 text config, DeepSeek V2's attention) is not converted yet",
            ));
        }
        Llama.set_gguf_parameters(cx, kv)?;
        if hp.map.get("model_type").and_then(Value::as_str) != Some("ministral3") {
            return Ok(());
        }
        let rope = cx.rope();
        if rope.get("rope_type").and_then(Value::as_str) != Some("yarn") {
            return Err(Error::reference(
                "AssertionError: ministral3 rope_type must be 'yarn'",
            ));
        }
        for (from, key) in [
            ("mscale_all_dim", "rope.scaling.yarn_log_multiplier"),
            ("llama_4_scaling_beta", "attention.temperature_scale"),
        ] {
            let v = rope.get(from).and_then(Value::as_f64).ok_or_else(|| {
                Error::field(&hp.path, format!("rope_parameters.{from}"), "missing")
            })?;
            kv.f32(&cx.key(key), v);
        }
        Ok(())
    }
}
