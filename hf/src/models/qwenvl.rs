//! `conversion/qwenvl.py`: the text halves of Qwen2-VL, Qwen2.5-VL and Qwen2.5-Omni (their
//! vision and audio towers are the projector's, not converted here).

use super::base::{self, Ctx, Force, Rearrange, TextModel, Yields};
use super::mmproj;
use super::qwen::Qwen2;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use ggufrw::quant::GgmlType;
use serde_json::Value;

/// `Qwen2VLModel`: `TextModel` with Qwen 2's vocabulary (SentencePiece where there is a
/// `tokenizer.model`, else GPT-2's BPE); an omni model's thinker is its text half.
pub(crate) struct Qwen2Vl;

impl TextModel for Qwen2Vl {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(name.strip_prefix("thinker.").unwrap_or(name))
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen2.set_vocab(cx, kv)
    }
}

/// `Qwen2VLVisionModel`: the projector of Qwen2-VL, Qwen2.5-VL and Qwen2.5-Omni's vision
/// tower: fused q/k/v written apart, the Conv3D patch embedding as two Conv2Ds (one per
/// temporal patch), Qwen2.5's window-attention pattern.
pub(crate) struct Qwen2VlVision;

impl TextModel for Qwen2VlVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// `__init__`'s renames of the vision config's fields.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        let m = &mut hp.map;
        if !m.contains_key("image_size") {
            m.insert("image_size".into(), 560.into());
        }
        mmproj::rename(m, "num_attention_heads", "num_heads");
        mmproj::rename(m, "num_hidden_layers", "depth");
        if m.contains_key("embed_dim") {
            mmproj::rename(m, "intermediate_size", "hidden_size");
            mmproj::rename(m, "hidden_size", "embed_dim");
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let model_type = hp
            .raw
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or("");
        match model_type {
            "qwen2_vl" => kv.string("clip.projector_type", "qwen2vl_merger"),
            "qwen2_5_vl" | "qwen2_5_omni" => {
                let projector = match model_type {
                    "qwen2_5_omni" => "qwen2.5o",
                    _ => "qwen2.5vl_merger",
                };
                kv.string("clip.projector_type", projector);
                kv.bool("clip.use_silu", true);
                if !mmproj::window_pattern(hp, kv, "")? {
                    return Err(Error::field(
                        &hp.path,
                        "vision_config.fullatt_block_indexes",
                        "missing (AssertionError: fullatt_block_indexes is required for qwen2_5_vl)",
                    ));
                }
            }
            other => {
                return Err(Error::reference(format!(
                    "ValueError: Unknown QwenVL model type: {other}"
                )))
            }
        }
        // The reference reads `rms_norm_eps` from the loaded config's top level, where
        // transformers' composite config keeps none: the default, which is also the
        // vision tower's own.
        kv.f32("clip.vision.attention.layer_norm_epsilon", 1e-6);
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
        if new_name.contains(".position_embd.") {
            return Some(Force::Type(GgmlType::F32));
        }
        mmproj::VISION.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.starts_with("visual.") {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, name)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.contains(".qkv.") {
            let parts = ["q", "k", "v"].map(|p| name.replace("qkv", p));
            return base::equal_parts(name, shape, &parts);
        }
        if name.contains("patch_embed.proj.weight") {
            return mmproj::conv3d_halves(
                name,
                shape,
                "AssertionError: Current implementation only support temporal_patch_size of 2",
            );
        }
        Ok(vec![(name.to_owned(), Rearrange::default())])
    }
}

/// `Sarashina2VLVisionModel(Qwen2VLVisionModel)`: Sarashina2.2-Vision's projector, Qwen2-VL's
/// tower and merger whatever the config's model type.
pub(crate) struct Sarashina2Vision;

impl TextModel for Sarashina2Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2VlVision)
    }

    /// Qwen2-VL's keys, its `global_config['model_type']` set to `qwen2_vl`.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        hp.raw.insert("model_type".into(), "qwen2_vl".into());
        Qwen2VlVision.set_gguf_parameters(&cx.with_hparams(&hp), kv)
    }
}

/// `Exaone4_5VisionModel`: Qwen2-VL's tower with grouped kv heads, its fused q/k/v kept, the
/// processor's pixel bounds.
pub(crate) struct Exaone45Vision;

impl TextModel for Exaone45Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2VlVision)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        Qwen2VlVision.filter_tensors(cx, &name.replacen("model.visual.", "visual.", 1))
    }

    /// `MmprojModel`'s keys, not Qwen2-VL's, then its own.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "exaone4_5");
        kv.bool("clip.use_silu", true);
        mmproj::pixel_bounds(cx, kv, false)?;
        if let Some(n) = hp.opt_int(&["num_key_value_heads"])? {
            kv.u32(
                "clip.vision.attention.head_count_kv",
                base::count32(hp, "num_key_value_heads", n)?,
            );
        }
        let eps = match hp.map.get("rms_norm_eps") {
            Some(v) => v.as_f64(),
            None => hp.raw.get("rms_norm_eps").and_then(Value::as_f64),
        };
        kv.f32(
            "clip.vision.attention.layer_norm_epsilon",
            eps.unwrap_or(1e-6),
        );
        if let Some(n) = hp.opt_int(&["window_size"])? {
            kv.u32(
                "clip.vision.window_size",
                base::count32(hp, "window_size", n)?,
            );
        }
        mmproj::window_pattern(hp, kv, "EXAONE4.5 ")?;
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.contains(".qkv.") {
            return Ok(vec![(name.to_owned(), Rearrange::default())]);
        }
        Qwen2VlVision.modify_tensors(cx, name, shape)
    }
}
