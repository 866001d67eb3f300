//! `conversion/internlm.py`.

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use crate::vocab::{self, token_type, SpecialVocab};
use serde_json::Value;

/// `InternLM2Model`: `InternLM2ForCausalLM`.
pub(crate) struct InternLm2;

/// The end-of-turn token that InternLM2's chat models end with, made eos.
const CHAT_EOS: &str = "<|im_end|>";

impl TextModel for InternLm2 {
    /// The fused `wqkv`, stored per kv group, split into q, k and v, q and k permuted as
    /// Llama's.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let Some(bid) = base::block_of(name) else {
            return base::yield_as(name, Rearrange::default());
        };
        if !name.contains(&format!("model.layers.{bid}.attention.wqkv")) {
            return base::yield_as(name, Rearrange::default());
        }
        let hp = cx.hp();
        let heads = hp.int(&["num_attention_heads"])?;
        let kv = hp.int(&["num_key_value_heads"])?;
        let n_embd = hp.int(&["hidden_size"])?;
        let q_per_kv = heads.checked_div(kv).unwrap_or(0);
        let head_dim = n_embd.checked_div(heads).unwrap_or(0);
        let groups = heads.checked_div(q_per_kv).unwrap_or(0);
        if shape != [groups * (q_per_kv + 2) * head_dim, n_embd] || groups != kv || groups == 0 {
            return Err(Error::reference(format!(
                "RuntimeError: {name} of shape {shape:?} cannot be viewed as {groups} groups of \
                 {q_per_kv} queries, a key and a value of {head_dim} × {n_embd}"
            )));
        }
        Ok([
            (Tensor::ATTN_Q, 0u8),
            (Tensor::ATTN_K, 1),
            (Tensor::ATTN_V, 2),
        ]
        .into_iter()
        .map(|(t, part)| {
            let heads = if part == 0 { heads } else { kv };
            let change = Rearrange {
                order: Order::KvGroupPart {
                    kv,
                    q_per_kv,
                    head_dim,
                    part,
                },
                rows: Some((0, heads * head_dim)),
                ..Rearrange::default()
            };
            (format_name(t, Some(bid), ".weight"), change)
        })
        .collect())
    }

    /// SentencePiece read id by id up to `vocab_size` (a `\0` piece written as 🐉, `[UNUSED…`
    /// pieces unused), `added_tokens.json` appended, the added tokens of
    /// `tokenizer_config.json` and `tokenizer.json` laid over their ids; eos moved to
    /// `<|im_end|>` where it is one of them.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let (path, bytes) = vocab::tokenizer_model(cx.dir)?;
        let pieces = vocab::read_sentencepiece(&path, &bytes)?;
        let add_prefix = vocab::sentencepiece_dummy_prefix(&path, &bytes)?;
        let n = match cx.hp().opt_int(&["vocab_size"])? {
            Some(n) => n as usize,
            None => pieces.len(),
        };
        if n > pieces.len() {
            return Err(Error::field(
                &cx.hp().path,
                "vocab_size",
                format!(
                    "{n}, past the {} pieces of {} (the reference's IdToPiece fails)",
                    pieces.len(),
                    path.display()
                ),
            ));
        }
        let mut tokens = Vec::with_capacity(n);
        let mut scores = Vec::with_capacity(n);
        let mut types = Vec::with_capacity(n);
        for p in &pieces[..n] {
            tokens.push(match p.piece.as_str() {
                "\0" => "\u{1f409}".to_owned(),
                t => t.to_owned(),
            });
            scores.push(p.score);
            types.push(match p.piece.starts_with("[UNUSED") {
                true => token_type::UNUSED,
                false => vocab::piece_type(p.kind),
            });
        }
        let added_path = cx.dir.file("added_tokens.json");
        if let Some(added) = cx.dir.json("added_tokens.json")? {
            let added = added
                .as_object()
                .ok_or_else(|| Error::field(&added_path, "(root)", "not an object"))?;
            for text in added.keys() {
                tokens.push(text.clone());
                scores.push(-1000.0);
                types.push(token_type::USER_DEFINED);
            }
        }
        let added = vocab::added_tokens(cx.dir)?;
        let chat_eos = added
            .iter()
            .rev()
            .find(|a| a.content == CHAT_EOS)
            .map(|a| a.id);
        let mut v = vocab::Vocab {
            tokens,
            scores,
            types,
        };
        vocab::lay_over(cx.dir, &mut v, &added)?;
        let count = base::llama_tokens(kv, v);
        kv.bool("tokenizer.ggml.add_space_prefix", add_prefix);
        let mut special = SpecialVocab::load(cx.dir, Some(count), false)?;
        if let Some(id) = chat_eos {
            special.replace_special("eos", id);
        }
        special.add_to(kv)
    }
}

/// `InternLM3Model`: `InternLM3ForCausalLM`, written as `llama`.
pub(crate) struct InternLm3;

impl TextModel for InternLm3 {
    /// The vision model's tensors are dropped.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("mlp") || name.starts_with("vision_model") {
            return None;
        }
        base::filter_tensors(name)
    }

    /// `TextModel`'s keys, the vocabulary size and a head's width rotated.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::vocab_and_rope_keys(cx, kv)
    }

    /// Llama's q/k permutation, of weights and biases.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::qk_permuted(cx, name, true)
    }

    /// SentencePiece's tokens, `add_prefix_space`, then the special vocabulary with eos moved
    /// to `<|im_end|>` where that is a special added token.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let size = cx
            .hp()
            .opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
        let v = vocab::sentencepiece(cx.dir, size)?.ok_or_else(|| base::no_tokenizer_model(cx))?;
        let n = base::llama_tokens(kv, v);
        let mut special = SpecialVocab::load(cx.dir, Some(n), false)?;
        if let Some(tc) = cx.dir.json("tokenizer_config.json")? {
            if let Some(v) = tc.get("add_prefix_space") {
                kv.bool("tokenizer.ggml.add_space_prefix", vocab::truthy(v));
            }
            let added = tc.get("added_tokens_decoder").and_then(Value::as_object);
            for (id, data) in added.into_iter().flatten() {
                if !data.get("special").is_some_and(vocab::truthy) {
                    continue;
                }
                let path = cx.dir.file("tokenizer_config.json");
                let id: u64 = id.parse().map_err(|_| {
                    Error::field(
                        &path,
                        "added_tokens_decoder",
                        format!("{id:?} is not an id"),
                    )
                })?;
                let content = data.get("content").and_then(Value::as_str).unwrap_or("");
                special.set_special(content, id);
                if content == "<|im_end|>" {
                    special.replace_special("eos", id);
                }
            }
        }
        special.add_to(kv)
    }
}
