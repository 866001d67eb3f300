//! `conversion/orion.py`.

use super::base::{self, Ctx, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `OrionModel`: `OrionForCausalLM`.
pub(crate) struct Orion;

impl TextModel for Orion {
    /// Its own keys, not `TextModel`'s: the file type first, the original layout named, and
    /// `rms_norm_eps` as the LayerNorm epsilon (the norms are LayerNorms).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n_head = hp.int(&["num_attention_heads"])?;
        let n_kv = hp.opt_int(&["num_key_value_heads"])?.unwrap_or(n_head);
        let ctx = [
            "max_sequence_length",
            "max_position_embeddings",
            "model_max_length",
        ]
        .into_iter()
        .find(|k| hp.map.contains_key(*k))
        .ok_or_else(|| Error::reference("gguf: can not find ctx length parameter."))?;
        kv.u32("general.file_type", cx.file_type);
        kv.string(&cx.key("tensor_data_layout"), "Meta AI original pth");
        kv.u32(&cx.key("context_length"), hp.int(&[ctx])? as u32);
        kv.u32(
            &cx.key("embedding_length"),
            hp.int(&["hidden_size"])? as u32,
        );
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        let ff = hp.int(&["intermediate_size"])?;
        kv.u32(&cx.key("feed_forward_length"), ff as u32);
        kv.u32(&cx.key("attention.head_count"), n_head as u32);
        kv.u32(&cx.key("attention.head_count_kv"), n_kv as u32);
        let eps = hp.float(&["rms_norm_eps"])?;
        kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
        Ok(())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)
    }
}
