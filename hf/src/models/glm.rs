//! `conversion/glm.py` (the text class of GLM-4).

use super::base::{self, Ctx, TextModel};
use crate::error::Result;
use crate::kv::Kv;
use crate::vocab::SpecialVocab;
use serde_json::Value;

/// `Glm4Model`: `Glm4ForCausalLM`.
pub(crate) struct Glm4;

impl TextModel for Glm4 {
    /// `TextModel`'s keys, then the rotated share of a head (`partial_rotary_factor`, by
    /// default a half).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let pct = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(0.5);
        let dim = base::head_dim(cx.hp())?;
        kv.u32(&cx.key("rope.dimension_count"), (dim as f64 * pct) as u32);
        Ok(())
    }

    /// GPT-2's BPE, then the end of text (eos, unk, bos) and `<|user|>` (eot) by their ids
    /// among the tokenizer's added tokens, each where the tokenizer files name none.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let added = base::added_vocab(cx)?;
        let (end, user) = (
            base::added_id(&added, "<|endoftext|>")?,
            base::added_id(&added, "<|user|>")?,
        );
        base::gpt2_tokens(cx, kv)?;
        let mut special = SpecialVocab::load(cx.dir, None, true)?;
        for (typ, i) in [("eos", end), ("eot", user), ("unk", end), ("bos", end)] {
            special.set_special(typ, i);
        }
        special.add_to(kv)
    }
}
