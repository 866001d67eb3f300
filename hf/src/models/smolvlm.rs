//! `conversion/smolvlm.py`: the projector of Idefics3 and SmolVLM (SigLIP, then a pixel
//! shuffle's connector).

use super::base::{self, Ctx, Force, TextModel};
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use ggufrw::quant::GgmlType;
use serde_json::Value;

/// `SmolVLMModel`.
pub(crate) struct SmolVlm;

impl TextModel for SmolVlm {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// SmolVLM2's config leaves out fields at transformers' defaults: those defaults.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        if hp.map.get("model_type").and_then(Value::as_str) == Some("smolvlm_vision") {
            for (k, v) in [
                ("hidden_size", 1152),
                ("num_attention_heads", 16),
                ("intermediate_size", 3072),
            ] {
                hp.map.entry(k).or_insert(v.into());
            }
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "idefics3");
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        let scale = match hp.raw.get("scale_factor") {
            Some(v) => base::u32_of(hp, "scale_factor", v)?,
            None => 2,
        };
        kv.u32("clip.vision.projector.scale_factor", scale);
        kv.bool("clip.use_gelu", true);
        let pre = mmproj::preprocessor_config(cx)?;
        let longest = pre.get("size").and_then(|s| s.get("longest_edge"));
        let size = match longest {
            Some(v) => v.as_u64().ok_or_else(|| {
                Error::field(
                    &cx.dir.file("preprocessor_config.json"),
                    "size.longest_edge",
                    format!("{v} is not a size"),
                )
            })?,
            None => hp.int(&["image_size"])?,
        };
        kv.u32(
            "clip.vision.preproc_image_size",
            base::count32(hp, "size.longest_edge", size)?,
        );
        Ok(())
    }

    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        if name.contains(".embeddings.") {
            return Some(Force::Type(GgmlType::F32));
        }
        mmproj::VISION.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let vision = ["vision_tower", "vision_model", "model.connector"];
        if !vision.iter().any(|p| name.contains(p)) {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, name)
    }
}
