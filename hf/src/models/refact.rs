//! `conversion/refact.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use crate::vocab::SpecialVocab;

/// `RefactModel`: `GPTRefactForCausalLM`.
pub(crate) struct Refact;

/// The feed-forward width: two thirds of four widths, rounded up to a multiple of 256.
fn ff_dim(n_embd: u64) -> u64 {
    let hidden = 2 * 4 * n_embd / 3;
    256 * hidden.div_ceil(256)
}

impl TextModel for Refact {
    /// Its own keys, not `TextModel`'s: the feed-forward width from the embedding width, one
    /// kv head, `layer_norm_epsilon` as the RMS epsilon.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n_embd = hp.int(&["n_embd"])?;
        kv.u32(&cx.key("context_length"), hp.int(&["n_positions"])? as u32);
        kv.u32(&cx.key("embedding_length"), n_embd as u32);
        kv.u32(&cx.key("feed_forward_length"), ff_dim(n_embd) as u32);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(&cx.key("attention.head_count"), hp.int(&["n_head"])? as u32);
        kv.u32(&cx.key("attention.head_count_kv"), 1);
        let eps = hp.float(&["layer_norm_epsilon"])?;
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// The fused kv split into the key (one head) and the value, the fused gate/up into the
    /// gate and the up projection.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let Some(bid) = base::block_of(name) else {
            return base::yield_as(name, Rearrange::default());
        };
        let hp = cx.hp();
        let part = |t: Tensor, a: u64, b: u64| {
            let change = Rearrange {
                rows: Some((a, b)),
                ..Rearrange::default()
            };
            (format_name(t, Some(bid), ".weight"), change)
        };
        let block = format!("transformer.h.{bid}.");
        match name.strip_prefix(&block) {
            Some("attn.kv.weight") => {
                let head_dim = hp.int(&["n_embd"])? / hp.int(&["n_head"])?.max(1);
                Ok(vec![
                    part(Tensor::ATTN_K, 0, head_dim),
                    part(Tensor::ATTN_V, head_dim, u64::MAX),
                ])
            }
            Some("attn.q.weight") => base::yield_as(
                &format_name(Tensor::ATTN_Q, Some(bid), ".weight"),
                Rearrange::default(),
            ),
            Some("mlp.gate_up_proj.weight") => {
                let ff = ff_dim(hp.int(&["n_embd"])?);
                Ok(vec![
                    part(Tensor::FFN_GATE, 0, ff),
                    part(Tensor::FFN_UP, ff, u64::MAX),
                ])
            }
            _ => base::yield_as(name, Rearrange::default()),
        }
    }

    /// GPT-2's BPE, then the fill-in-the-middle ids (prefix 1, suffix 3, middle 2; gguf-py
    /// has keys for none of them, so only an end-of-turn id is written).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)?;
        let types = ["prefix", "suffix", "middle", "eot"];
        let mut special = SpecialVocab::load_types(cx.dir, None, false, &types)?;
        for (typ, id) in [("prefix", 1), ("suffix", 3), ("middle", 2)] {
            special.set_special(typ, id);
        }
        special.without_chat_template();
        special.add_to(kv)
    }
}
