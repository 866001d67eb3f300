//! `conversion/nemotron.py` (the dense class).

use super::base::{self, Ctx, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;
use serde_json::Value;

/// `NemotronModel`.
pub(crate) struct Nemotron;

impl TextModel for Nemotron {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let eps = hp.float(&[
            "layer_norm_eps",
            "layer_norm_epsilon",
            "norm_epsilon",
            "norm_eps",
        ])?;
        kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
        let pct = base::partial_rotary(cx)?;
        let n_embd = hp.int(&["hidden_size", "n_embd"])?;
        let n_head = hp.int(&["num_attention_heads", "n_head"])?.max(1);
        kv.u32(
            &cx.key("rope.dimension_count"),
            ((pct * n_embd as f64) as u64 / n_head) as u32,
        );
        // `hparams.get("factor") or rope_parameters.get("factor")`.
        let rope = cx.rope();
        let factor = hp
            .map
            .get("factor")
            .filter(|v| crate::vocab::truthy(v))
            .or_else(|| rope.get("factor"))
            .filter(|v| !v.is_null())
            .and_then(Value::as_f64);
        match factor {
            None => kv.string(&cx.key("rope.scaling.type"), "none"),
            Some(f) => {
                kv.string(&cx.key("rope.scaling.type"), "linear");
                kv.f32(&cx.key("rope.scaling.factor"), f);
            }
        }
        Ok(())
    }

    /// LayerNorm1p: the norms' weights are stored minus one.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        kv.u32("tokenizer.ggml.padding_token_id", 0);
        kv.u32("tokenizer.ggml.unknown_token_id", 1);
        Ok(())
    }
}
