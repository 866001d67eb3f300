//! `conversion/ernie.py` (the dense class).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `Ernie4_5Model`: `Ernie4_5ForCausalLM`, `Ernie4_5_ForCausalLM`.
pub(crate) struct Ernie45;

impl TextModel for Ernie45 {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(&name.replace("ernie.", "model."))
    }

    /// The Paddle checkpoints' fused projections are split: q, k, v by the head counts; the
    /// gate first, then up.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let rows = |a: u64, b: u64| Rearrange {
            rows: Some((a, b)),
            ..Rearrange::default()
        };
        if name.contains("qkv_proj") {
            let n_head = hp.int(&["num_attention_heads"])?;
            let n_kv = hp.int(&["num_key_value_heads"])?;
            let hd = base::head_dim(hp)?;
            let (q, k) = (n_head * hd, n_kv * hd);
            let part = |p: &str| name.replace("qkv_proj.weight", p);
            return Ok(vec![
                (part("q_proj.weight"), rows(0, q)),
                (part("k_proj.weight"), rows(q, q + k)),
                (part("v_proj.weight"), rows(q + k, q + 2 * k)),
            ]);
        }
        if name.contains("up_gate_proj") {
            let ff = shape.first().copied().unwrap_or(0) / 2;
            let part = |p: &str| name.replace("up_gate_proj.weight", p);
            return Ok(vec![
                (part("gate_proj.weight"), rows(0, ff)),
                (part("up_proj.weight"), rows(ff, 2 * ff)),
            ]);
        }
        base::yield_as(name, Rearrange::default())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        if let Some(tc) = cx.dir.json("tokenizer_config.json")? {
            if let Some(v) = tc.get("add_prefix_space") {
                // `add_bool` packs the value's truth: transformers 5's `null` is false
                kv.bool("tokenizer.ggml.add_space_prefix", crate::vocab::truthy(v));
            }
        }
        Ok(())
    }
}

/// `Ernie4_5MoeModel(Ernie4_5Model)`: `Ernie4_5_MoeForCausalLM`.
pub(crate) struct Ernie45Moe;

impl TextModel for Ernie45Moe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Ernie45)
    }

    /// `TextModel`'s (the config's own expert names are not among those it reads), then the
    /// mixture's keys; the shared experts' width is `intermediate_size // num_key_value_heads`,
    /// as the reference computes it.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("expert_count"), hp.int(&["moe_num_experts"])? as u32);
        kv.u32(&k("expert_used_count"), hp.int(&["moe_k"])? as u32);
        kv.u32(
            &k("interleave_moe_layer_step"),
            hp.int(&["moe_layer_interval"])? as u32,
        );
        kv.u32(
            &k("leading_dense_block_count"),
            hp.int(&["moe_layer_start_index"])? as u32,
        );
        if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
            kv.u32(&k("expert_feed_forward_length"), n as u32);
        }
        if let Some(shared) = hp.opt_int(&["moe_num_shared_experts"])? {
            kv.u32(&k("expert_shared_count"), shared as u32);
            let ff = hp.opt_int(&["intermediate_size"])?;
            let n_kv = hp.opt_int(&["num_key_value_heads"])?;
            if let (true, Some(ff), Some(n_kv)) = (shared > 0, ff, n_kv) {
                if n_kv == 0 {
                    return Err(Error::field(&hp.path, "num_key_value_heads", "is 0"));
                }
                kv.u32(&k("expert_shared_feed_forward_length"), (ff / n_kv) as u32);
            }
        }
        Ok(())
    }

    /// The multi-token-prediction layers are left out.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let mtp = [
            "model.mtp_block.",
            "model.mtp_emb_norm.",
            "model.mtp_hidden_norm.",
            "model.mtp_linear_proj.",
        ];
        let numbered = |prefix: &&str| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        };
        if mtp.iter().any(numbered) {
            return None;
        }
        Ernie45.filter_tensors(cx, name)
    }

    /// `ModelBase`'s: none of the dense class's splits.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::yield_as(name, Rearrange::default())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["moe_num_experts"],
            marker: "mlp.experts",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.mlp.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.mlp.experts.{w}.weight",
            weights: &["gate_proj", "up_proj", "down_proj"],
        })
    }
}

/// `PaddleOCRVisionModel`: PaddleOCR-VL's projector (a SigLIP tower at a dynamic resolution
/// bounded by the processor's pixel counts).
pub(crate) struct PaddleOcrVision;

/// The processor's `min_pixels` and `max_pixels`, which `__init__` requires.
fn pixel_bounds(cx: &Ctx) -> Result<(u64, u64)> {
    let pre = super::mmproj::preprocessor_config(cx)?;
    let field = |name: &str| -> Result<u64> {
        let path = cx.dir.file("preprocessor_config.json");
        let v = pre
            .get(name)
            .ok_or_else(|| Error::field(&path, name, "missing (the reference's KeyError)"))?;
        v.as_u64()
            .ok_or_else(|| Error::field(&path, name, format!("{v} is not a pixel count")))
    };
    Ok((field("min_pixels")?, field("max_pixels")?))
}

impl TextModel for PaddleOcrVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&super::mmproj::VISION)
    }

    fn init_keys(&self, cx: &Ctx, _early: &mut Kv) -> Result<()> {
        pixel_bounds(cx).map(|_| ())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let (min, max) = pixel_bounds(cx)?;
        // `image_size = int(sqrt(max_pixels))`
        let mut hp = cx.hp().clone();
        hp.map
            .insert("image_size".into(), ((max as f64).sqrt() as u64).into());
        let cx = cx.with_hparams(&hp);
        super::mmproj::VISION.set_gguf_parameters(&cx, kv)?;
        kv.string("clip.projector_type", "paddleocr");
        kv.u32(
            "clip.vision.image_max_pixels",
            base::count32(&hp, "max_pixels", max)?,
        );
        kv.u32(
            "clip.vision.image_min_pixels",
            base::count32(&hp, "min_pixels", min)?,
        );
        kv.bool("clip.use_gelu", true);
        let eps = hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.contains("vision_model") && !name.contains("mlp_AR") {
            return None;
        }
        let name = name.replace("visual.", "model.");
        if name.contains("packing_position_embedding") || name.contains("vision_model.head") {
            return None;
        }
        super::mmproj::VISION.filter_tensors(cx, &name)
    }
}
