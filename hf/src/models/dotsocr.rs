//! `conversion/dotsocr.py`: dots.ocr's projector.

use super::base::{self, Ctx, TextModel};
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `DotsOCRVisionModel`: dots.ocr's projector (a NaViT tower of dynamic resolution: fused
/// q/k/v, a SwiGLU MLP, RMS norms; a merger over 2×2 patches).
pub(crate) struct DotsOcrVision;

impl TextModel for DotsOcrVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// `image_size` 0: the resolution is dynamic.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        hp.map.insert("image_size".into(), 0.into());
    }

    /// The processor's pixel bounds (required), the tower's epsilon and merge.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "dots_ocr");
        mmproj::pixel_bounds(cx, kv, false)?;
        let eps = hp
            .opt_float(&["rms_norm_eps"])?
            .ok_or_else(|| Error::field(&hp.path, "vision_config.rms_norm_eps", "missing"))?;
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        let merge = hp
            .map
            .get("spatial_merge_size")
            .ok_or_else(|| Error::field(&hp.path, "vision_config.spatial_merge_size", "missing"))?;
        kv.u32(
            "clip.vision.projector.scale_factor",
            base::u32_of(hp, "spatial_merge_size", merge)?,
        );
        kv.bool("clip.use_silu", true);
        Ok(())
    }

    /// The tower (`vision_tower.`) alone; its blocks' MLP under Qwen2.5-VL's names (`fc1`
    /// the gate, `fc3` up, `fc2` down), as the tensor map knows them.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.starts_with("vision_tower.") {
            return None;
        }
        let mut name = name.to_owned();
        if name.contains("vision_tower.blocks.") && name.contains(".mlp.") {
            name = name.replace("vision_tower.blocks.", "visual.blocks.");
            for (from, to) in [
                (".fc1", ".gate_proj"),
                (".fc2", ".down_proj"),
                (".fc3", ".up_proj"),
            ] {
                name = name.replace(from, to);
            }
        }
        mmproj::VISION.filter_tensors(cx, &name)
    }
}
