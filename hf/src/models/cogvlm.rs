//! `conversion/cogvlm.py`: CogVLM's text half (Llama's, on its own architecture) and its
//! projector.

use super::base::{Ctx, TextModel};
use super::mmproj;
use crate::error::Result;
use crate::kv::Kv;

/// `CogVLMVisionModel`: CogVLM's projector (EVA-CLIP, its downsampling convolution, a SwiGLU
/// projector and the image's begin and end embeddings).
pub(crate) struct CogVlmVision;

impl TextModel for CogVlmVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let eps = cx.hp().opt_float(&["layer_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        kv.string("clip.projector_type", "cogvlm");
        Ok(())
    }

    /// The tower (`model.vision.`) alone.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.starts_with("model.vision.") {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, name)
    }
}
