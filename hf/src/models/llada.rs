//! `conversion/llada.py` (the dense LLaDA).

use super::base::{self, Ctx, TextModel, Yields};
use crate::bpe::{vocab_typed, AddedTypes};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `LLaDAModel`: `LLaDAModelLM`, a diffusion language model.
pub(crate) struct LLaDA;

impl TextModel for LLaDA {
    /// `TextModel`'s keys and the pooling, then LLaDA's: the vocabulary size, the rotated
    /// width, its own names for the context, width and feed-forward (with defaults), attention
    /// that is not causal and logits that are not shifted.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::pooling(cx, kv)?;
        let hp = cx.hp();
        let n = |keys: &[&str], default: Option<u64>| -> Result<u32> {
            let v = match (hp.opt_int(keys)?, default) {
                (Some(v), _) | (None, Some(v)) => v,
                (None, None) => return Err(Error::field(&hp.path, keys[0], "missing")),
            };
            u32::try_from(v).map_err(|_| Error::field(&hp.path, keys[0], "not a 32-bit count"))
        };
        kv.u32(&cx.key("vocab_size"), n(&["vocab_size"], None)?);
        let rope_dim = match hp.opt_int(&["head_dim"])? {
            Some(d) => d as u32,
            None => {
                n(&["hidden_size", "d_model"], None)?
                    / n(&["num_attention_heads", "n_heads"], None)?.max(1)
            }
        };
        kv.u32(&cx.key("rope.dimension_count"), rope_dim);
        kv.u32(
            &cx.key("context_length"),
            n(&["max_sequence_length"], Some(4096))?,
        );
        kv.u32(&cx.key("embedding_length"), n(&["d_model"], Some(4096))?);
        kv.u32(
            &cx.key("feed_forward_length"),
            n(&["mlp_hidden_size"], Some(12288))?,
        );
        kv.bool(&cx.key("attention.causal"), false);
        kv.bool("diffusion.shift_logits", false);
        Ok(())
    }

    /// Llama's q/k permutation (weights and biases), over `num_attention_heads` or
    /// `n_heads` and, for k, the kv heads where given.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let is = |p: &str| {
            name.ends_with(&format!("{p}.weight")) || name.ends_with(&format!("{p}.bias"))
        };
        let heads = if is("q_proj") {
            Some(hp.int(&["num_attention_heads", "n_heads"])?)
        } else if is("k_proj") {
            match hp.opt_int(&["num_key_value_heads", "n_kv_heads"])? {
                Some(kv) => Some(kv),
                None => Some(hp.int(&["num_attention_heads", "n_heads"])?),
            }
        } else {
            None
        };
        base::permuted(name, heads)
    }

    /// GPT-2's BPE with the added tokens typed as saved, and a bos added.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let v = vocab_typed(cx.dir, cx.tokenizer_pre, AddedTypes::AsSaved)?;
        base::gpt2_with(cx, kv, v)?;
        kv.bool("tokenizer.ggml.add_bos_token", true);
        Ok(())
    }
}
