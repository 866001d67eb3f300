//! `conversion/gemma.py`.

use super::base::{self, Ctx, Force, Order, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab;
use ggufrw::quant::GgmlType;
use serde_json::Value;

/// `Gemma3VisionModel`: Gemma 3's projector (SigLIP, then a pooling projector whose norm is
/// stored as `weight - 1`).
pub(crate) struct Gemma3Vision;

impl TextModel for Gemma3Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "gemma3");
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        kv.bool("clip.use_gelu", true);
        // the pooling's factor, written only where it is not the default 4 (a test model)
        let seq = match mmproj::preprocessor_config(cx)?.get("image_seq_length") {
            Some(v) => v.as_f64().ok_or_else(|| {
                Error::field(
                    &cx.dir.file("processor_config.json"),
                    "image_seq_length",
                    "not a number",
                )
            })?,
            None => 256.0,
        };
        let per_side = seq.sqrt() as u64;
        let side = hp.int(&["image_size"])? / hp.int(&["patch_size"])?.max(1);
        let factor = side.checked_div(per_side).unwrap_or(0);
        if factor > 0 && factor != 4 {
            kv.u32(
                "clip.vision.projector.scale_factor",
                base::count32(hp, "image_size", factor)?,
            );
        }
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
        if name.contains("input_projection") {
            return Some(Force::Type(GgmlType::F16));
        }
        if name.contains(".embeddings.") {
            return Some(Force::Type(GgmlType::F32));
        }
        mmproj::VISION.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        const KEPT: [&str; 4] = [
            "multi_modal_projector.",
            "vision_tower.",
            "multimodal_projector.",
            "vision_model.",
        ];
        let name = &mmproj::siglip_tower(name);
        if name.contains("vision_model.head.") || !KEPT.iter().any(|p| name.starts_with(p)) {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, &name.replace("_weight", ".weight"))
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let add = if name.contains("soft_emb_norm.weight") {
            1.0
        } else {
            0.0
        };
        base::yield_as(
            name,
            Rearrange {
                add,
                ..Rearrange::default()
            },
        )
    }
}

/// `Gemma4VisionAudioModel`: Gemma 4's projector, its vision tower (the audio tower is not
/// converted yet). Both encoders are the class's, so its tensor map spans 128 blocks.
pub(crate) struct Gemma4Vision;

/// The suffixes Gemma 4's projector maps names with.
const GEMMA4_SUFFIXES: [&str; 6] = [
    ".weight",
    ".bias",
    ".input_max",
    ".input_min",
    ".output_max",
    ".output_min",
];

impl TextModel for Gemma4Vision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    fn init_hparams(&self, class: &str, hp: &mut crate::config::Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        // unused, set by the reference to avoid an error
        hp.map.insert("image_size".into(), 224.into());
    }

    fn block_count(&self, hp: &crate::config::Hparams, names: &[String]) -> Result<u64> {
        let n = mmproj::BOTH.block_count(hp, names)?;
        let audio = hp.raw.get("audio_config");
        if audio.is_some_and(|a| a.as_object().is_some_and(|o| !o.is_empty())) {
            return Err(Error::not_yet(
                "Gemma 4's audio tower (the projector with audio_config): only its vision \
                 tower is converted yet",
            ));
        }
        Ok(n)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        kv.string("clip.vision.projector_type", "gemma4v");
        let eps = cx.hp().opt_float(&["layer_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
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
        if name.contains("position_embedding_table") {
            return Some(Force::Type(GgmlType::F32));
        }
        mmproj::VISION.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut change = Rearrange {
            named: true,
            ..Rearrange::default()
        };
        if shape.is_empty() {
            change.reshape = Some(([1, 0, 0, 0], 1));
        }
        let mut name = name
            .replace("model.vision_tower.encoder.", "vision_model.model.")
            .replace(".linear.weight", ".weight");
        if name.ends_with("layer_scalar") || name.ends_with("position_embedding_table") {
            name.push_str(".weight");
        }
        if name.ends_with("patch_embedder.input_proj.weight") {
            // `[n_embd, p·p·3]` (HWC) as `[n_embd, 3, p, p]` (CHW)
            let &[n_embd, k] = shape else {
                return Err(Error::reference(format!(
                    "{name}: {shape:?} is not a matrix"
                )));
            };
            let p = ((k / 3) as f64).sqrt() as u64;
            if p * p * 3 != k {
                return Err(Error::reference(format!(
                    "{name}: {k} columns are not 3 channels of a square patch"
                )));
            }
            change.cols = Order::Swapped {
                skip: 0,
                outer: p * p,
                inner: 3,
                block: 1,
            };
            change.reshape = Some(([n_embd, 3, p, p], 4));
        }
        let map = crate::names::NameMap::new(cx.arch, cx.block_count);
        match map.get(&name, &GEMMA4_SUFFIXES) {
            Some((_, new_name)) => Ok(vec![(new_name, change)]),
            None => Err(Error::reference(format!(
                "ValueError: Can not map tensor {name:?}"
            ))),
        }
    }
}

/// `GemmaModel`: Gemma 1.
pub(crate) struct Gemma;

impl TextModel for Gemma {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(name).filter(|n| n != "lm_head.weight")
    }

    /// It does not call `TextModel`'s.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        gemma_keys(cx, kv)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    /// SentencePiece, then CodeGemma's fill-in-the-middle ids (of which gguf-py writes only
    /// the end of turn, 107), then no space prefix.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        let types = ["prefix", "suffix", "middle", "fsep", "eot"];
        let mut special = vocab::SpecialVocab::load_types(cx.dir, None, false, &types)?;
        for (typ, id) in [
            ("prefix", 67),
            ("suffix", 69),
            ("middle", 68),
            ("fsep", 70),
            ("eot", 107),
        ] {
            special.set_special(typ, id);
        }
        special.without_chat_template();
        special.add_to(kv)?;
        kv.bool("tokenizer.ggml.add_space_prefix", false);
        Ok(())
    }
}

/// The keys `GemmaModel.set_gguf_parameters` writes (Gemma 2's begins with them).
fn gemma_keys(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    let k = |s: &str| cx.key(s);
    let n = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
    kv.u32(&k("context_length"), n("max_position_embeddings")?);
    kv.u32(&k("embedding_length"), n("hidden_size")?);
    kv.u32(&k("block_count"), cx.block_count as u32);
    kv.u32(&k("feed_forward_length"), n("intermediate_size")?);
    kv.u32(&k("attention.head_count"), n("num_attention_heads")?);
    let kv_heads = if hp.map.contains_key("num_key_value_heads") {
        n("num_key_value_heads")?
    } else {
        n("num_attention_heads")?
    };
    kv.u32(&k("attention.head_count_kv"), kv_heads);
    kv.f32(
        &k("attention.layer_norm_rms_epsilon"),
        hp.float(&["rms_norm_eps"])?,
    );
    kv.u32(&k("attention.key_length"), n("head_dim")?);
    kv.u32(&k("attention.value_length"), n("head_dim")?);
    kv.u32("general.file_type", cx.file_type);
    Ok(())
}

/// `Gemma2Model`.
pub(crate) struct Gemma2;

impl TextModel for Gemma2 {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        // The output is tied to the embeddings (llama.cpp reads it so).
        base::filter_tensors(name).filter(|n| n != "lm_head.weight")
    }

    /// It does not call `TextModel`'s.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let n = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
        let f = |key: &str| -> Result<f64> {
            hp.opt_float(&[key])?
                .ok_or_else(|| Error::field(&hp.path, key, "missing"))
        };
        gemma_keys(cx, kv)?;
        kv.f32(&k("attn_logit_softcapping"), f("attn_logit_softcapping")?);
        kv.f32(&k("final_logit_softcapping"), f("final_logit_softcapping")?);
        kv.u32(&k("attention.sliding_window"), n("sliding_window")?);
        Ok(())
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        kv.bool("tokenizer.ggml.add_space_prefix", false);
        Ok(())
    }
}

/// `Gemma3Model` (text; also the text of `Gemma3ForConditionalGeneration`).
pub(crate) struct Gemma3;

impl TextModel for Gemma3 {
    /// `TextModel`'s keys, then Gemma 3's (some set again, in place).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let n = |key: &str, d: u64| -> Result<u32> { Ok(hp.opt_int(&[key])?.unwrap_or(d) as u32) };
        kv.u32(&k("context_length"), n("max_position_embeddings", 131072)?);
        kv.u32(&k("attention.head_count"), n("num_attention_heads", 8)?);
        kv.f32(
            &k("attention.layer_norm_rms_epsilon"),
            hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-6),
        );
        kv.u32(&k("attention.key_length"), n("head_dim", 256)?);
        kv.u32(&k("attention.value_length"), n("head_dim", 256)?);
        let theta = base::rope_params(&cx.rope())
            .get("rope_theta")
            .and_then(Value::as_f64)
            .unwrap_or(1_000_000.0);
        kv.f32(&k("rope.freq_base"), theta);
        if hp
            .map
            .get("attn_logit_softcapping")
            .is_some_and(|v| !v.is_null())
        {
            return Err(Error::field(
                &hp.path,
                "attn_logit_softcapping",
                "Gemma 3 has none (the reference asserts it)",
            ));
        }
        if let Some(v) = hp
            .map
            .get("final_logit_softcapping")
            .filter(|v| vocab::truthy(v))
        {
            let f = v
                .as_f64()
                .ok_or_else(|| Error::field(&hp.path, "final_logit_softcapping", "not a number"))?;
            kv.f32(&k("final_logit_softcapping"), f);
        }
        if hp.map.get("sliding_window_pattern").and_then(Value::as_i64) != Some(1) {
            kv.u32(
                &k("attention.sliding_window"),
                hp.int(&["sliding_window"])? as u32,
            );
        }
        kv.u32(&k("attention.head_count_kv"), n("num_key_value_heads", 4)?);
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let mut r = Rearrange {
            add: base::norm_offset(name),
            ..Rearrange::default()
        };
        if name.contains("embed_tokens.weight") {
            r.rows = Some((0, vocab_rows(cx)?));
        }
        base::yield_as(name, r)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if base::sentencepiece(cx, kv)? {
            kv.bool("tokenizer.ggml.add_space_prefix", false);
        } else {
            base::gpt2(cx, kv)?;
        }
        Ok(())
    }
}

/// `EmbeddingGemma(Gemma3Model)`: `Gemma3TextModel` (EmbeddingGemma).
pub(crate) struct EmbeddingGemma;

impl TextModel for EmbeddingGemma {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Gemma3)
    }

    /// Gemma 3's keys, the sliding window as `config.json` has it (transformers' config class
    /// changes it for bidirectional attention), then the pooling.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Gemma3.set_gguf_parameters(cx, kv)?;
        let path = cx.dir.file("config.json");
        let window = cx
            .dir
            .json("config.json")?
            .and_then(|c| c.get("sliding_window").cloned())
            .filter(|v| !v.is_null())
            .ok_or_else(|| {
                Error::field(
                    &path,
                    "sliding_window",
                    "sliding_window not found in model config - this is required for the model",
                )
            })?;
        let window = window
            .as_u64()
            .ok_or_else(|| Error::field(&path, "sliding_window", "not a count"))?;
        kv.u32(&cx.key("attention.sliding_window"), window as u32);
        base::pooling(cx, kv)
    }
}

/// The vocabulary's size, to which Gemma 3 cuts its embedding rows.
fn vocab_rows(cx: &Ctx) -> Result<u64> {
    if cx.dir.has("tokenizer.model") {
        let size = cx
            .hp()
            .opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
        let v = vocab::sentencepiece(cx.dir, size)?.expect("tokenizer.model is a file");
        return Ok(v.tokens.len() as u64);
    }
    let path = cx.dir.file("tokenizer.json");
    let t = cx
        .dir
        .json("tokenizer.json")?
        .ok_or_else(|| Error::io(&path, std::io::ErrorKind::NotFound.into()))?;
    let n = t
        .get("model")
        .and_then(|m| m.get("vocab"))
        .and_then(Value::as_object)
        .map(|v| v.len());
    let added = t
        .get("added_tokens")
        .and_then(Value::as_array)
        .map(Vec::len);
    match (n, added) {
        (Some(n), Some(a)) => Ok((n + a) as u64),
        _ => Err(Error::field(
            &path,
            "model.vocab",
            "missing (or added_tokens missing)",
        )),
    }
}

/// `Gemma4Model(Gemma3Model)`: `Gemma4ForCausalLM` (the dense models; experts are not
/// converted yet).
pub(crate) struct Gemma4;

/// The tokens Gemma 4's chat parser must see, written as user-defined so they are rendered.
const GEMMA4_VISIBLE: [&str; 7] = [
    "<|channel>",
    "<channel|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|tool_response>",
    "<tool_response|>",
    "<|\"|>",
];

/// A full-attention layer's head width: `global_head_dim`, else the first full layer's in
/// `per_layer_config` (transformers 5 writes that form).
fn gemma4_full(hp: &crate::config::Hparams, what: &str, global: &str) -> Result<Option<u64>> {
    if let Some(v) = hp.opt_int(&[global])? {
        return Ok(Some(v));
    }
    let types = hp.map.get("layer_types").and_then(Value::as_array);
    let Some(Value::Object(per_layer)) = hp.map.get("per_layer_config") else {
        return Ok(None);
    };
    for (layer, config) in per_layer {
        let full = layer
            .parse::<usize>()
            .ok()
            .and_then(|i| types.and_then(|t| t.get(i)))
            .and_then(Value::as_str)
            == Some("full_attention");
        if let Some(v) = config.get(what).filter(|_| full) {
            let v = v.as_u64().ok_or_else(|| {
                Error::field(
                    &hp.path,
                    format!("per_layer_config.{layer}.{what}"),
                    "not a count",
                )
            })?;
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// [`gemma4_full`]'s head width, which Gemma 4 requires.
fn gemma4_full_head(hp: &crate::config::Hparams) -> Result<u64> {
    gemma4_full(hp, "head_dim", "global_head_dim")?.ok_or_else(|| {
        Error::field(
            &hp.path,
            "global_head_dim",
            "missing (nor in per_layer_config)",
        )
    })
}

impl TextModel for Gemma4 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Gemma3)
    }

    /// Per-dimension and per-layer scalars, and the packed experts, are named as weights.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        const KEPT: [&str; 4] = [
            ".weight",
            ".weight_scale",
            ".weight_scale_2",
            ".input_scale",
        ];
        if name.ends_with("per_dim_scale")
            || name.ends_with("layer_scalar")
            || (name.contains(".experts.") && !KEPT.iter().any(|k| name.ends_with(k)))
        {
            return Gemma3.filter_tensors(cx, &format!("{name}.weight"));
        }
        Gemma3.filter_tensors(cx, name)
    }

    /// Gemma 3's keys, then Gemma 4's: shared kv layers, per-layer input width, which layers
    /// slide, the full and sliding head widths (full ones as the key length), per-layer
    /// feed-forward widths and kv heads where they differ, and the rotated widths.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        Gemma3.set_gguf_parameters(cx, kv)?;
        let k = |s: &str| cx.key(s);
        let shared = hp.int(&["num_kv_shared_layers"])?;
        kv.u32(&k("attention.shared_kv_layers"), shared as u32);
        let per_layer = hp.opt_int(&["hidden_size_per_layer_input"])?.unwrap_or(0);
        kv.u32(&k("embedding_length_per_layer_input"), per_layer as u32);
        let types = hp
            .map
            .get("layer_types")
            .ok_or_else(|| Error::field(&hp.path, "layer_types", "missing"))?;
        let swa = base::sliding_layers(hp, types)?;
        kv.bools(&k("attention.sliding_window_pattern"), swa.clone());
        let full = gemma4_full_head(hp)?;
        let head = hp.int(&["head_dim"])?;
        kv.u32(&k("attention.key_length"), full as u32);
        kv.u32(&k("attention.value_length"), full as u32);
        kv.u32(&k("attention.key_length_swa"), head as u32);
        kv.u32(&k("attention.value_length_swa"), head as u32);
        if let Some(v) = hp
            .find(&["expert_intermediate_size", "moe_intermediate_size"])
            .filter(|v| !v.is_null())
        {
            let n = base::u32_of(hp, "moe_intermediate_size", v)?;
            kv.u32(&k("expert_feed_forward_length"), n);
        }
        if hp.map.get("use_double_wide_mlp").is_some_and(vocab::truthy) {
            let ff = hp.int(&["intermediate_size"])? as i32;
            let first_shared = cx.block_count.saturating_sub(shared);
            let widths = (0..cx.block_count)
                .map(|il| if il < first_shared { ff } else { 2 * ff })
                .collect();
            kv.i32s(&k("feed_forward_length"), widths);
        }
        let kv_full = gemma4_full(hp, "num_key_value_heads", "num_global_key_value_heads")?;
        if let (Some(full_kv), Some(swa_kv)) = (kv_full, hp.opt_int(&["num_key_value_heads"])?) {
            let heads = swa
                .iter()
                .map(|&s| if s { swa_kv } else { full_kv } as i32)
                .collect();
            kv.i32s(&k("attention.head_count_kv"), heads);
        }
        let pct = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        kv.u32(&k("rope.dimension_count"), full as u32);
        kv.u32(&k("rope.dimension_count_swa"), (head as f64 * pct) as u32);
        Ok(())
    }

    /// The full-attention layers' "proportional" RoPE: factor 1 for the rotated pairs and
    /// 1e30 (no rotation) for the rest.
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        let hp = cx.hp();
        let params = hp
            .map
            .get("rope_parameters")
            .and_then(|p| p.get("full_attention"))
            .ok_or_else(|| Error::field(&hp.path, "rope_parameters.full_attention", "missing"))?;
        if params.get("rope_type").and_then(Value::as_str) != Some("proportional") {
            return Err(Error::reference(
                "AssertionError: Gemma 4's full attention RoPE is not 'proportional'",
            ));
        }
        let full = gemma4_full_head(hp)?;
        let pct = params
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "rope_parameters.full_attention.partial_rotary_factor",
                    "missing",
                )
            })?;
        let rotated = (full as f64 * pct / 2.0) as usize;
        let unrotated = ((full as f64 / 2.0) as usize).saturating_sub(rotated);
        let mut values = vec![1.0f32; rotated];
        values.extend(std::iter::repeat_n(1e30f32, unrotated));
        Ok(vec![(
            base::extra_name(crate::tables::Tensor::ROPE_FREQS),
            values,
        )])
    }

    /// Gemma 3's, without the norm shift (Gemma 4 stores norms as they are applied); the
    /// router's input scale and its per-expert scale named as the router's and the down
    /// experts' `.scale`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let named = |t: crate::tables::Tensor| {
            let change = Rearrange {
                named: true,
                ..Rearrange::default()
            };
            let bid = base::block_of(name);
            base::yield_as(&crate::names::format_name(t, bid, ".scale"), change)
        };
        if name.ends_with("router.scale") {
            return named(crate::tables::Tensor::FFN_GATE_INP);
        }
        if name.contains(".per_expert_scale") {
            let nvfp4 = cx
                .names
                .iter()
                .any(|n| n.contains(".experts.") && n.ends_with("down_proj.weight_scale_2"));
            if nvfp4 {
                // the reference folds it into each NVFP4 expert's second scale instead
                return Err(Error::not_yet(
                    "Gemma 4's NVFP4 experts (their per-expert scale folded into the second \
                     scales) are not converted yet",
                ));
            }
            return named(crate::tables::Tensor::FFN_DOWN_EXP);
        }
        let mut r = Rearrange::default();
        if name.contains("embed_tokens.weight") {
            r.rows = Some((0, vocab_rows(cx)?));
        }
        base::yield_as(name, r)
    }

    /// The llama-hf reading of `tokenizer.json` as the `gemma4` tokenizer (the chat parser's
    /// tokens user-defined), the special vocabulary with merges, no space prefix, a bos.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut v = crate::bpe::llama_hf(cx.dir)?;
        for (text, ty) in v.tokens.iter().zip(v.types.iter_mut()) {
            if GEMMA4_VISIBLE.contains(&text.as_str()) {
                *ty = crate::vocab::token_type::USER_DEFINED;
            }
        }
        kv.string("tokenizer.ggml.model", "gemma4");
        kv.strings("tokenizer.ggml.tokens", v.tokens);
        kv.f32s("tokenizer.ggml.scores", v.scores);
        kv.i32s("tokenizer.ggml.token_type", v.types);
        vocab::SpecialVocab::load(cx.dir, None, true)?.add_to(kv)?;
        kv.bool("tokenizer.ggml.add_space_prefix", false);
        kv.bool("tokenizer.ggml.add_bos_token", true);
        Ok(())
    }
}

/// `Gemma3NModel(Gemma3Model)`: `Gemma3nForCausalLM` and the text of
/// `Gemma3nForConditionalGeneration`.
pub(crate) struct Gemma3n;

impl TextModel for Gemma3n {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Gemma3)
    }

    /// A `*_scale` tensor gets a `.weight` suffix (the name map knows it so).
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        match name.ends_with("_scale") {
            true => base::filter_tensors(&format!("{name}.weight")),
            false => base::filter_tensors(name),
        }
    }

    /// Gemma 3's keys, then AltUp's, the per-layer input width, the shared kv layers, the
    /// activation sparsity as standard-normal quantiles, and which layers slide.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Gemma3.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let n = |key: &str| base::int32(hp, &[key]);
        kv.u32(&k("altup.active_idx"), n("altup_active_idx")?);
        kv.u32(&k("altup.num_inputs"), n("altup_num_inputs")?);
        kv.u32(
            &k("embedding_length_per_layer_input"),
            n("hidden_size_per_layer_input")?,
        );
        kv.u32(&k("attention.shared_kv_layers"), n("num_kv_shared_layers")?);
        let pattern = hp
            .map
            .get("activation_sparsity_pattern")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::field(&hp.path, "activation_sparsity_pattern", "not a list"))?;
        let scales = pattern
            .iter()
            .map(|p| {
                p.as_f64().map(normal_quantile_f32).ok_or_else(|| {
                    Error::field(&hp.path, "activation_sparsity_pattern", "not numbers")
                })
            })
            .collect::<Result<Vec<f32>>>()?;
        kv.f32s(&k("activation_sparsity_scale"), scales);
        base::sliding_window_pattern(cx, kv)
    }

    /// The three AltUp projections (and the three unembedding ones) stacked into one.
    fn gather(&self, _cx: &Ctx, name: &str) -> Option<base::Gather> {
        let into = ["altup_unembed_projections", "altup_projections"]
            .into_iter()
            .find(|m| name.contains(m))?;
        let part = (0..3).find(|i| name.contains(&format!(".{i}.")))?;
        Some(base::Gather {
            into: format!("model.{into}.weight"),
            part,
            named: false,
            of: 3,
            stack: true,
            fold: None,
        })
    }

    /// Both embeddings padded with zero rows to `vocab_size` (the vision and audio tokens'
    /// slots); no norm is shifted.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let mut r = Rearrange::default();
        if name.contains("embed_tokens.weight") || name.contains("embed_tokens_per_layer") {
            r.pad_to = cx.hp().opt_int(&["vocab_size"])?.unwrap_or(262_400);
        }
        base::yield_as(name, r)
    }

    /// Gemma 3's, sized by `vocab_size` rather than the per-layer vocabulary.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        hp.map.remove("vocab_size_per_layer_input");
        Gemma3.set_vocab(&cx.with_hparams(&hp), kv)
    }
}

/// `Normal(0, 1).icdf(torch.tensor(p, dtype=torch.float32))` as torch computes it: `2p - 1`
/// in f32, the inverse error function of that (torch widens a float to double for it, starts
/// from a rational approximation and takes two Newton steps with the C library's `erf`),
/// rounded to f32 and times √2 as an f32.
fn normal_quantile_f32(p: f64) -> f32 {
    let t = 2.0f32 * (p as f32) - 1.0f32;
    (erfinv(f64::from(t)) as f32) * std::f64::consts::SQRT_2 as f32
}

/// The inverse error function, as torch's `calc_erfinv` evaluates it in double.
fn erfinv(y: f64) -> f64 {
    const A: [f64; 4] = [0.886226899, -1.645349621, 0.914624893, -0.140543331];
    const B: [f64; 4] = [-2.118377725, 1.442710462, -0.329097515, 0.012229801];
    const C: [f64; 4] = [-1.970840454, -1.624906493, 3.429567803, 1.641345311];
    const D: [f64; 2] = [3.543889200, 1.637067800];
    let abs = y.abs();
    if abs >= 1.0 {
        return match abs > 1.0 {
            true => f64::NAN,
            false => f64::INFINITY.copysign(y),
        };
    }
    let mut x = if abs <= 0.7 {
        let z = y * y;
        let num = ((A[3] * z + A[2]) * z + A[1]) * z + A[0];
        let dem = (((B[3] * z + B[2]) * z + B[1]) * z + B[0]) * z + 1.0;
        y * num / dem
    } else {
        let z = (-((1.0 - abs) / 2.0).ln()).sqrt();
        let num = ((C[3] * z + C[2]) * z + C[1]) * z + C[0];
        let dem = (D[1] * z + D[0]) * z + 1.0;
        num.copysign(y) / dem
    };
    let slope = 2.0 / std::f64::consts::PI.sqrt();
    for _ in 0..2 {
        x -= (c_erf(x) - y) / (slope * (-x * x).exp());
    }
    x
}

/// The C library's `erf`, which torch calls (Rust's standard library has none yet).
fn c_erf(x: f64) -> f64 {
    extern "C" {
        fn erf(x: f64) -> f64;
    }
    // SAFETY: `erf` is a pure function of a double, in every C library std links.
    unsafe { erf(x) }
}

/// `Gemma4AssistantModel(Gemma4Model)`: `Gemma4AssistantForCausalLM` and
/// `Gemma4UnifiedAssistantForCausalLM`, the draft that reads its target's kv cache.
pub(crate) struct Gemma4Assistant;

impl TextModel for Gemma4Assistant {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Gemma4)
    }

    /// The ordered embeddings' tables are left out.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match name.contains("masked_embedding") {
            true => None,
            false => Gemma4.filter_tensors(cx, name),
        }
    }

    /// Gemma 4's keys, the target's width and every layer a next-token predictor.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Gemma4.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(
            &cx.key("embedding_length_out"),
            base::int32(hp, &["backbone_hidden_size"])?,
        );
        kv.u32(
            &cx.key("nextn_predict_layers"),
            base::count32(hp, "num_hidden_layers", cx.block_count)?,
        );
        Ok(())
    }
}

/// `Gemma4UnifiedModel(Gemma4Model)`: `Gemma4UnifiedForConditionalGeneration`'s text half,
/// with the tokens generation suppresses (`generation_config.json`'s `suppress_tokens`).
pub(crate) struct Gemma4Unified;

impl TextModel for Gemma4Unified {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Gemma4)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Gemma4.set_gguf_parameters(cx, kv)?;
        let path = cx.dir.file("generation_config.json");
        if !path.is_file() {
            return Ok(());
        }
        let config = crate::read_json(&path)?;
        let Some(tokens) = config.get("suppress_tokens").filter(|v| !v.is_null()) else {
            return Ok(());
        };
        let tokens = tokens
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|t| t.as_i64().and_then(|t| i32::try_from(t).ok()))
                    .collect::<Option<Vec<i32>>>()
            })
            .ok_or_else(|| Error::field(&path, "suppress_tokens", "not a list of token ids"))?;
        kv.i32s("tokenizer.ggml.suppress_tokens", tokens);
        Ok(())
    }
}
