//! `conversion/ernie.py` (the dense class).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `Ernie4_5Model`: `Ernie4_5ForCausalLM`, `Ernie4_5_ForCausalLM`.
pub(crate) struct Ernie45;

impl TextModel for Ernie45 {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(&name.replace("ernie.", "model."))
    }

    /// The Paddle checkpoints' fused projections are split: q, k, v by the head counts; the
    /// gate first, then up.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let rows = |a: u64, b: u64| Rearrange {
            rows: Some((a, b)),
            ..Rearrange::default()
        };
        if name.contains("qkv_proj") {
            let n_head = hp.int(&["num_attention_heads"])?;
            let n_kv = hp.int(&["num_key_value_heads"])?;
            let hd = base::head_dim(hp)?;
            let (q, k) = (n_head * hd, n_kv * hd);
            let part = |p: &str| name.replace("qkv_proj.weight", p);
            return Ok(vec![
                (part("q_proj.weight"), rows(0, q)),
                (part("k_proj.weight"), rows(q, q + k)),
                (part("v_proj.weight"), rows(q + k, q + 2 * k)),
            ]);
        }
        if name.contains("up_gate_proj") {
            let ff = shape.first().copied().unwrap_or(0) / 2;
            let part = |p: &str| name.replace("up_gate_proj.weight", p);
            return Ok(vec![
                (part("gate_proj.weight"), rows(0, ff)),
                (part("up_proj.weight"), rows(ff, 2 * ff)),
            ]);
        }
        base::yield_as(name, Rearrange::default())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        if let Some(tc) = cx.dir.json("tokenizer_config.json")? {
            if let Some(v) = tc.get("add_prefix_space") {
                let b = v.as_bool().ok_or_else(|| {
                    Error::field(
                        &cx.dir.file("tokenizer_config.json"),
                        "add_prefix_space",
                        "not a bool",
                    )
                })?;
                kv.bool("tokenizer.ggml.add_space_prefix", b);
            }
        }
        Ok(())
    }
}
