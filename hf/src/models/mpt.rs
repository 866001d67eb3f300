//! `conversion/mpt.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `MPTModel`: `MPTForCausalLM`.
pub(crate) struct Mpt;

impl TextModel for Mpt {
    /// Its own keys, not `TextModel`'s (no file type): the feed-forward is four widths, the
    /// LayerNorm epsilon 1e-5, and the ALiBi bias 0 when ALiBi is off.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let d_model = hp.int(&["d_model"])?;
        // llama.cpp sizes the feed-forward from the key: another ratio would contradict the
        // tensors the reference writes next to it.
        if let Some(r) = hp.opt_float(&["expansion_ratio"])?.filter(|r| *r != 4.0) {
            return Err(Error::field(
                &hp.path,
                "expansion_ratio",
                format!("{r}: the feed-forward length is written as 4 × d_model"),
            ));
        }
        let attn = hp
            .map
            .get("attn_config")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::field(&hp.path, "attn_config", "missing"))?;
        kv.u32(&cx.key("context_length"), hp.int(&["max_seq_len"])? as u32);
        kv.u32(&cx.key("embedding_length"), d_model as u32);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(&cx.key("feed_forward_length"), 4 * d_model as u32);
        kv.u32(
            &cx.key("attention.head_count"),
            hp.int(&["n_heads"])? as u32,
        );
        if let Some(n) = attn
            .get("kv_n_heads")
            .and_then(Value::as_u64)
            .filter(|n| *n != 0)
        {
            kv.u32(&cx.key("attention.head_count_kv"), n as u32);
        }
        kv.f32(&cx.key("attention.layer_norm_epsilon"), 1e-5);
        if let Some(clip) = attn.get("clip_qkv").filter(|v| !v.is_null()) {
            let clip = clip
                .as_f64()
                .ok_or_else(|| Error::field(&hp.path, "attn_config.clip_qkv", "not a number"))?;
            kv.f32(&cx.key("attention.clamp_kqv"), clip);
        }
        let alibi = attn.get("alibi").is_some_and(crate::vocab::truthy);
        let bias = match alibi {
            true => attn
                .get("alibi_bias_max")
                .and_then(Value::as_f64)
                .ok_or_else(|| Error::field(&hp.path, "attn_config.alibi_bias_max", "missing"))?,
            false => 0.0,
        };
        kv.f32(&cx.key("attention.max_alibi_bias"), bias);
        Ok(())
    }

    /// GPT-2's BPE; where that cannot be read, SentencePiece with SEA-LION's fixed ids.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut bpe = Kv::default();
        if base::gpt2(cx, &mut bpe).is_ok() {
            kv.extend(bpe);
            return Ok(());
        }
        base::sentencepiece_required(cx, kv)?;
        kv.bool("tokenizer.ggml.add_bos_token", false);
        kv.u32("tokenizer.ggml.padding_token_id", 3);
        kv.u32("tokenizer.ggml.eos_token_id", 1);
        kv.u32("tokenizer.ggml.unknown_token_id", 0);
        Ok(())
    }
}
