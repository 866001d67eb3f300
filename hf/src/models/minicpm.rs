//! `conversion/minicpm.py` (MiniCPM and MiniCPM3; MiniCPM-V 4.6 is a Qwen 3.5 text model).

use super::base::{self, Ctx, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use serde_json::Value;

/// `rope_factors_long` and `rope_factors_short` from LongRoPE's `long_factor` and
/// `short_factor`, each half the rotated width `dims` long.
fn rope_factors(cx: &Ctx, dims: u64) -> Result<Vec<(String, Vec<f32>)>> {
    let rope = cx.rope();
    let list = |key: &str| -> Result<Option<Vec<f32>>> {
        match rope.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_f64().map(|f| f as f32))
                .collect::<Option<Vec<f32>>>()
                .map(Some)
                .ok_or_else(|| Error::field(&cx.hp().path, key, "not a list of numbers")),
            Some(_) => Err(Error::field(&cx.hp().path, key, "not a list of numbers")),
        }
    };
    let (long, short) = (list("long_factor")?, list("short_factor")?);
    // `if long_factors or short_factors`: an empty list is none.
    if long.as_ref().is_none_or(Vec::is_empty) && short.as_ref().is_none_or(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let (Some(long), Some(short)) = (long, short) else {
        return Err(Error::reference(
            "KeyError: Missing the required key rope_scaling.long_factor or rope_scaling_short_factor",
        ));
    };
    if long.len() != short.len() || 2 * long.len() as u64 != dims {
        return Err(Error::reference(format!(
            "ValueError: The length of rope long and short factors must be {}",
            dims as f64 / 2.0
        )));
    }
    Ok(vec![
        (base::extra_name(Tensor::ROPE_FACTORS_LONG), long),
        (base::extra_name(Tensor::ROPE_FACTORS_SHORT), short),
    ])
}

/// `MiniCPMModel`: `MiniCPMForCausalLM`.
pub(crate) struct MiniCpm;

impl TextModel for MiniCpm {
    /// `TextModel`'s keys, then the embedding scale, the residual scale (`scale_depth` over
    /// the root of the depth) and the logit scale (the width over `dim_model_base`).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.f32(&cx.key("embedding_scale"), hp.float(&["scale_emb"])?);
        let depth = hp.int(&["num_hidden_layers"])? as f64;
        kv.f32(
            &cx.key("residual_scale"),
            hp.float(&["scale_depth"])? / depth.powf(0.5),
        );
        let width = hp.int(&["hidden_size"])? as f64;
        kv.f32(
            &cx.key("logit_scale"),
            width / hp.float(&["dim_model_base"])?,
        );
        Ok(())
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        let hp = cx.hp();
        let dims = hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1);
        rope_factors(cx, dims)
    }

    /// Llama's q/k permutation, of the weights.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::qk_permuted(cx, name, false)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)
    }
}

/// `MiniCPM3Model`: `MiniCPM3ForCausalLM` (multi-head latent attention).
pub(crate) struct MiniCpm3;

impl TextModel for MiniCpm3 {
    /// Its own keys, not `TextModel`'s: the file type first, then the latent attention's
    /// ranks and widths.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| base::int32(hp, &[key]);
        kv.u32("general.file_type", cx.file_type);
        kv.u32(&cx.key("context_length"), n("max_position_embeddings")?);
        kv.u32(&cx.key("embedding_length"), n("hidden_size")?);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(&cx.key("feed_forward_length"), n("intermediate_size")?);
        kv.u32(&cx.key("attention.head_count"), n("num_attention_heads")?);
        kv.u32(
            &cx.key("attention.head_count_kv"),
            n("num_key_value_heads")?,
        );
        let eps = hp.float(&["rms_norm_eps"])?;
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(&cx.key("vocab_size"), n("vocab_size")?);
        if hp.map.get("q_lora_rank").is_some_and(|v| !v.is_null()) {
            kv.u32(&cx.key("attention.q_lora_rank"), n("q_lora_rank")?);
        }
        kv.u32(&cx.key("attention.kv_lora_rank"), n("kv_lora_rank")?);
        let key_length = n("qk_nope_head_dim")? + n("qk_rope_head_dim")?;
        kv.u32(&cx.key("attention.key_length"), key_length);
        kv.u32(&cx.key("rope.dimension_count"), n("qk_rope_head_dim")?);
        Ok(())
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        rope_factors(cx, cx.hp().int(&["qk_rope_head_dim"])?)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)
    }
}

/// `MiniCPMV4_6VisionModel`: MiniCPM-V 4.6's projector (SigLIP with a merger inserted after a
/// block; the processor's slice size as the image size, its downsampling as the scale).
pub(crate) struct MiniCpmV46Vision;

/// The processor's `downsample_mode` ("16x" by default; "4x" drops the ViT merger).
fn downsample_mode(cx: &Ctx) -> Result<String> {
    let pre = super::mmproj::preprocessor_config(cx)?;
    let mode = match pre.get("downsample_mode") {
        None => "16x".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    match mode.as_str() {
        "4x" | "16x" => Ok(mode),
        _ => Err(Error::reference(format!(
            "ValueError: Unsupported downsample mode: {mode}"
        ))),
    }
}

impl TextModel for MiniCpmV46Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&super::mmproj::VISION)
    }

    fn init_keys(&self, cx: &Ctx, _early: &mut Kv) -> Result<()> {
        downsample_mode(cx).map(|_| ())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let pre = super::mmproj::preprocessor_config(cx)?;
        let mut hp = cx.hp().clone();
        if let Some(v) = pre.get("scale_resolution").filter(|v| !v.is_null()) {
            let size = v.as_f64().ok_or_else(|| {
                Error::field(
                    &cx.dir.file("preprocessor_config.json"),
                    "scale_resolution",
                    format!("{v} is not a size"),
                )
            })?;
            hp.map.insert("image_size".into(), (size as i64).into());
        }
        let cx = cx.with_hparams(&hp);
        super::mmproj::VISION.set_gguf_parameters(&cx, kv)?;
        kv.string("clip.projector_type", "minicpmv4_6");
        let scale = if downsample_mode(&cx)? == "4x" { 2 } else { 4 };
        kv.u32("clip.vision.projector.scale_factor", scale);
        let insert = match hp.raw.get("insert_layer_id") {
            Some(v) => v.as_i64(),
            None => Some(hp.opt_int(&["insert_layer_id"])?.unwrap_or(6) as i64),
        };
        let insert = insert
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| Error::field(&hp.path, "insert_layer_id", "not a block index"))?;
        kv.i32s("clip.vision.wa_layer_indexes", vec![insert]);
        kv.bool("clip.use_gelu", true);
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("lm_head.") || name.starts_with("mtp") {
            return None;
        }
        // "4x" drops the merger before anything reads the checkpoint
        if name.contains(".vit_merger.") && downsample_mode(cx).is_ok_and(|m| m == "4x") {
            return None;
        }
        super::mmproj::VISION.filter_tensors(cx, name)
    }
}
