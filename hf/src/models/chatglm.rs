//! `conversion/chatglm.py`: GLM-4 in transformers' own format (`GlmForCausalLM`).

use super::base::{self, Ctx, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::SpecialVocab;
use serde_json::Value;

/// `ChatGLMModel`.
pub(crate) struct ChatGlm;

impl TextModel for ChatGlm {
    /// The rotary embedding's cache is dropped and `transformer.` taken off.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.ends_with(".rotary_pos_emb.inv_freq") {
            return None;
        }
        base::filter_tensors(name.strip_prefix("transformer.").unwrap_or(name))
    }

    /// Its own keys, not `TextModel`'s: the context is `seq_length` or else the embedding
    /// width, the RMS epsilon `layernorm_epsilon` or else 1e-5, the RoPE base 10000 times
    /// `rope_ratio` (neither `rms_norm_eps` nor `rope_theta` is read).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n_embd = hp.int(&["hidden_size", "n_embed"])?;
        let n_head = hp.int(&["n_head", "num_attention_heads"])?;
        let n_kv = match hp.opt_int(&["multi_query_group_num", "num_key_value_heads"])? {
            Some(n) => n,
            None => n_head,
        };
        let head = n_embd / n_head.max(1);
        // llama.cpp takes a head as n_embd / n_head: a checkpoint whose heads are otherwise
        // would be written with projections that contradict it.
        if let Some(d) = hp.opt_int(&["head_dim"])?.filter(|d| *d != head) {
            return Err(Error::field(
                &hp.path,
                "head_dim",
                format!(
                    "{d}, but chatglm models take a head as hidden_size / num_attention_heads \
                     = {head} (the reference would write projections that contradict it)"
                ),
            ));
        }
        // each count named by the config field it comes from
        let count = |field: &str, v: u64| base::count32(hp, field, v);
        let ctx = hp.opt_int(&["seq_length"])?.unwrap_or(n_embd);
        kv.u32(&cx.key("context_length"), count("seq_length", ctx)?);
        kv.u32(&cx.key("embedding_length"), count("hidden_size", n_embd)?);
        let ff = hp.opt_int(&["ffn_hidden_size", "intermediate_size"])?;
        let ff = count("ffn_hidden_size", ff.unwrap_or(4 * n_embd))?;
        kv.u32(&cx.key("feed_forward_length"), ff);
        kv.u32(&cx.key("block_count"), count("num_layers", cx.block_count)?);
        kv.u32(
            &cx.key("attention.head_count"),
            count("num_attention_heads", n_head)?,
        );
        kv.u32(
            &cx.key("attention.head_count_kv"),
            count("num_key_value_heads", n_kv)?,
        );
        let eps = hp.opt_float(&["layernorm_epsilon"])?.unwrap_or(1e-5);
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32("general.file_type", cx.file_type);
        let rope_dim = match hp.opt_int(&["attention_dim"])? {
            Some(d) => d,
            None => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
        };
        let pct = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(0.5);
        let rotated = count("partial_rotary_factor", (rope_dim as f64 * pct) as u64)?;
        kv.u32(&cx.key("rope.dimension_count"), rotated);
        kv.bool("tokenizer.ggml.add_bos_token", false);
        let ratio = hp.opt_float(&["rope_ratio"])?.unwrap_or(1.0);
        kv.f32(&cx.key("rope.freq_base"), 10000.0 * ratio);
        Ok(())
    }

    /// GPT-2's BPE, then the end of text (eos, unk) and `<|user|>` (eot) by their ids among
    /// the tokenizer's added tokens, each where the tokenizer files name none.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if cx.dir.path.to_string_lossy().contains("THUDM/chatglm3-6b") {
            return Err(Error::not_yet(
                "ChatGLM3's SentencePiece vocabulary is not read yet",
            ));
        }
        let hp = cx.hp();
        let vocab_size = hp.int(&["padded_vocab_size", "vocab_size"])?;
        let added = base::added_vocab(cx)?;
        let highest = highest_id(cx)?;
        if highest.is_some_and(|h| h >= vocab_size) {
            return Err(Error::reference(format!(
                "AssertionError: the tokenizer's highest id {} is not below the vocabulary \
                 size {vocab_size}",
                highest.unwrap_or(0)
            )));
        }
        let (end, user) = (
            base::added_id(&added, "<|endoftext|>")?,
            base::added_id(&added, "<|user|>")?,
        );
        base::gpt2_tokens(cx, kv)?;
        let mut special = SpecialVocab::load(cx.dir, None, true)?;
        for (typ, i) in [("eos", end), ("eot", user), ("unk", end)] {
            special.set_special(typ, i);
        }
        special.add_to(kv)
    }
}

/// `max(tokenizer.get_vocab().values())`: the highest id of `tokenizer.json`'s vocabulary and
/// added tokens.
fn highest_id(cx: &Ctx) -> Result<Option<u64>> {
    let Some(t) = cx.dir.json("tokenizer.json")? else {
        return Ok(None);
    };
    let vocab = t
        .get("model")
        .and_then(|m| m.get("vocab"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|v| v.values());
    let added = t
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("id"));
    Ok(vocab.chain(added).filter_map(Value::as_u64).max())
}
