//! `conversion/gemma.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab;
use serde_json::Value;

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

    /// Per-dimension and per-layer scalars are named as weights; experts are refused.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.ends_with("per_dim_scale") || name.ends_with("layer_scalar") {
            return Gemma3.filter_tensors(cx, &format!("{name}.weight"));
        }
        Gemma3.filter_tensors(cx, name)
    }

    /// Gemma 3's keys, then Gemma 4's: shared kv layers, per-layer input width, which layers
    /// slide, the full and sliding head widths (full ones as the key length), per-layer
    /// feed-forward widths and kv heads where they differ, and the rotated widths.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        if hp
            .find(&["num_experts", "num_local_experts"])
            .is_some_and(|v| !v.is_null())
            || hp.map.get("enable_moe_block").is_some_and(vocab::truthy)
        {
            return Err(Error::not_yet(
                "Gemma 4's mixture-of-experts models are not converted yet",
            ));
        }
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

    /// Gemma 3's, without the norm shift (Gemma 4 stores norms as they are applied).
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
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
