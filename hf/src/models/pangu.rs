//! `conversion/pangu.py`.

use super::base::{self, Ctx, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;
use crate::vocab::truthy;

/// `PanguEmbeddedModel`: `PanguEmbeddedForCausalLM`.
pub(crate) struct PanguEmbedded;

impl TextModel for PanguEmbedded {
    /// `TextModel`'s keys, the vocabulary size and the rotated width (a head's); a key and a
    /// value width where the config gives no `head_dim`.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let given = hp.opt_int(&["head_dim"])?;
        let dim = base::head_dim(hp)? as u32;
        kv.u32(&cx.key("rope.dimension_count"), dim);
        if given.is_none() {
            kv.u32(&cx.key("attention.key_length"), dim);
            kv.u32(&cx.key("attention.value_length"), dim);
        }
        Ok(())
    }

    /// A tied output is not written (`tie_word_embeddings` is read from config.json as it
    /// is: absent is untied).
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let tied = cx.hp().map.get("tie_word_embeddings").is_some_and(truthy);
        if name == "lm_head.weight" && tied {
            return Ok(Vec::new());
        }
        base::yield_as(name, base::Rearrange::default())
    }

    /// SentencePiece, then `add_prefix_space` of the tokenizer config where it is given.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        if let Some(tc) = cx.dir.json("tokenizer_config.json")? {
            if let Some(v) = tc.get("add_prefix_space") {
                kv.bool("tokenizer.ggml.add_space_prefix", truthy(v));
            }
        }
        Ok(())
    }
}
