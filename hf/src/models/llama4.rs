//! `conversion/llama4.py`'s projector (Llama 4's text half is `llama.rs`'s).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names;
use crate::tables::Tensor;
use serde_json::Value;

/// `Llama4VisionModel`: its tower, the pixel shuffle's ratio as the projector's scale factor,
/// the projector's one layer named as such.
pub(crate) struct Llama4Vision;

impl TextModel for Llama4Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "llama4");
        kv.f32(
            "clip.vision.attention.layer_norm_epsilon",
            hp.float(&["norm_eps"])?,
        );
        let ratio = hp.float(&["pixel_shuffle_ratio"])?;
        let factor = 1.0 / ratio;
        if !factor.is_finite() || factor < 0.0 || factor >= u32::MAX as f64 {
            return Err(Error::field(
                &hp.path,
                "vision_config.pixel_shuffle_ratio",
                format!("{ratio}: 1/ratio is not a scale factor"),
            ));
        }
        kv.u32("clip.vision.projector.scale_factor", factor as u32);
        if hp.map.get("hidden_act").and_then(Value::as_str) != Some("gelu") {
            return Err(Error::field(
                &hp.path,
                "vision_config.hidden_act",
                "not gelu (AssertionError)",
            ));
        }
        kv.bool("clip.use_gelu", true);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.contains("multi_modal_projector") && !name.contains("vision_model") {
            return None;
        }
        let name = match name.contains("positional_embedding_vlm") && !name.contains(".weight") {
            true => format!("{name}.weight"),
            false => name.to_owned(),
        };
        mmproj::VISION.filter_tensors(cx, &name)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if name.contains("multi_modal_projector.linear_1") {
            // a single fully connected layer, whatever its name's number says
            let new_name = names::format_name(Tensor::V_MMPROJ_FC, None, ".weight");
            return Ok(vec![mmproj::named(new_name)]);
        }
        base::yield_as(name, Rearrange::default())
    }
}
