//! `conversion/internlm.py` (InternLM 3).

use super::base::{self, Ctx, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::{self, SpecialVocab};
use serde_json::Value;

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
