//! `conversion/qwenvl.py`: the text halves of Qwen2-VL, Qwen2.5-VL and Qwen2.5-Omni (their
//! vision and audio towers are the projector's, not converted here).

use super::base::{self, Ctx, TextModel};
use super::qwen::Qwen2;
use crate::error::Result;
use crate::kv::Kv;

/// `Qwen2VLModel`: `TextModel` with Qwen 2's vocabulary (SentencePiece where there is a
/// `tokenizer.model`, else GPT-2's BPE); an omni model's thinker is its text half.
pub(crate) struct Qwen2Vl;

impl TextModel for Qwen2Vl {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(name.strip_prefix("thinker.").unwrap_or(name))
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen2.set_vocab(cx, kv)
    }
}
