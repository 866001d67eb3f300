//! `conversion/dream.py`.

use super::base::{self, Ctx, TextModel};
use crate::bpe::{vocab_typed, AddedTypes};
use crate::error::Result;
use crate::kv::Kv;

/// `DreamModel`: a diffusion language model on Qwen 2's layout.
pub(crate) struct Dream;

impl TextModel for Dream {
    /// `TextModel`'s keys, the pooling, attention that is not causal, and the mask token.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::pooling(cx, kv)?;
        unmasked(cx, kv)
    }

    /// SentencePiece where there is a `tokenizer.model`, else GPT-2's BPE with the added
    /// tokens typed as saved.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if base::sentencepiece(cx, kv)? {
            return Ok(());
        }
        let v = vocab_typed(cx.dir, cx.hp(), cx.tokenizer_pre, AddedTypes::AsSaved)?;
        base::gpt2_with(cx, kv, v)
    }
}

/// A diffusion model's keys: attention that is not causal, and the mask token where the config
/// names one (Dream, RND1).
pub(crate) fn unmasked(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    kv.bool(&cx.key("attention.causal"), false);
    let hp = cx.hp();
    if let Some(v) = hp.map.get("mask_token_id").filter(|v| !v.is_null()) {
        kv.u32(
            "tokenizer.ggml.mask_token_id",
            base::u32_of(hp, "mask_token_id", v)?,
        );
    }
    Ok(())
}
