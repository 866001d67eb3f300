//! `conversion/llada.py` (the dense LLaDA).

use super::base::{self, Ctx, TextModel, Yields};
use crate::bpe::{vocab_typed, AddedTypes};
use crate::error::Result;
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
        let or = |key: &str, default: u64| -> Result<u32> {
            base::count32(hp, key, hp.opt_int(&[key])?.unwrap_or(default))
        };
        kv.u32(&cx.key("vocab_size"), base::int32(hp, &["vocab_size"])?);
        let rope_dim = match hp.opt_int(&["head_dim"])? {
            Some(d) => d as u32,
            None => {
                base::int32(hp, &["hidden_size", "d_model"])?
                    / base::int32(hp, &["num_attention_heads", "n_heads"])?.max(1)
            }
        };
        kv.u32(&cx.key("rope.dimension_count"), rope_dim);
        kv.u32(&cx.key("context_length"), or("max_sequence_length", 4096)?);
        kv.u32(&cx.key("embedding_length"), or("d_model", 4096)?);
        kv.u32(
            &cx.key("feed_forward_length"),
            or("mlp_hidden_size", 12288)?,
        );
        kv.bool(&cx.key("attention.causal"), false);
        kv.bool("diffusion.shift_logits", false);
        Ok(())
    }

    /// Llama's q/k permutation (weights and biases), over `num_attention_heads` or
    /// `n_heads` and, for k, the kv heads where given.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let heads = ["num_attention_heads", "n_heads"];
        base::qk_permuted_by(
            cx,
            name,
            true,
            &heads,
            &["num_key_value_heads", "n_kv_heads"],
        )
    }

    /// GPT-2's BPE with the added tokens typed as saved, and a bos added.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let v = vocab_typed(cx.dir, cx.hp(), cx.tokenizer_pre, AddedTypes::AsSaved)?;
        base::gpt2_with(cx, kv, v)?;
        kv.bool("tokenizer.ggml.add_bos_token", true);
        Ok(())
    }
}

/// `LLaDAMoEModel`: `LLaDAMoEModel` / `LLaDAMoEModelLM`, a diffusion mixture on Qwen's
/// experts. `TextModel`'s keys and vocabulary, the experts' width, the mask token the reference
/// fixes (156895), attention that is not causal and logits that are not shifted.
pub(crate) struct LLaDAMoe;

impl TextModel for LLaDAMoe {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        if let Some(n) = hp.opt_int(&["expert_intermediate_size"])? {
            kv.u32(&cx.key("expert_feed_forward_length"), n as u32);
        }
        kv.u32("tokenizer.ggml.mask_token_id", 156895);
        kv.bool(&cx.key("attention.causal"), false);
        kv.bool("diffusion.shift_logits", false);
        Ok(())
    }

    fn experts(&self) -> Option<super::base::Experts> {
        Some(super::base::Experts {
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
