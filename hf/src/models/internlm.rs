//! `conversion/internlm.py` (InternLM 3).

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
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
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&cx.key("rope.dimension_count"), base::head_dim(hp)? as u32);
        Ok(())
    }

    /// Llama's q/k permutation, of weights and biases.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let n_head = hp.int(&["num_attention_heads"])?;
        let heads = if name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias") {
            Some(n_head)
        } else if name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias") {
            Some(hp.opt_int(&["num_key_value_heads"])?.unwrap_or(n_head))
        } else {
            None
        };
        let change = Rearrange {
            order: heads.map_or(Order::Stored, Order::LlamaHeads),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    /// SentencePiece's tokens, `add_prefix_space`, then the special vocabulary with eos moved
    /// to `<|im_end|>` where that is a special added token.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let size = cx
            .hp()
            .opt_int(&["vocab_size_per_layer_input", "vocab_size"])?;
        let v = vocab::sentencepiece(cx.dir, size)?.ok_or_else(|| {
            Error::reference(format!(
                "File not found: {}",
                cx.dir.file("tokenizer.model").display()
            ))
        })?;
        let n = v.tokens.len() as u64;
        kv.string("tokenizer.ggml.model", "llama");
        kv.string("tokenizer.ggml.pre", "default");
        kv.strings("tokenizer.ggml.tokens", v.tokens);
        kv.f32s("tokenizer.ggml.scores", v.scores);
        kv.i32s("tokenizer.ggml.token_type", v.types);
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
                    Error::field(&path, "added_tokens_decoder", format!("{id:?} is not an id"))
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
