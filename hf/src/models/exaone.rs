//! `conversion/exaone.py` (EXAONE 3 and 4).

use super::base::{self, Ctx, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `ExaoneModel`: `ExaoneForCausalLM` (EXAONE 3).
pub(crate) struct Exaone;

impl TextModel for Exaone {
    /// `TextModel`'s keys (SiLU only), then the rotated share of a head.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let act = hp.map.get("activation_function").and_then(Value::as_str);
        if act != Some("silu") {
            return Err(Error::field(
                &hp.path,
                "activation_function",
                format!("{act:?}: the reference converts SiLU only"),
            ));
        }
        let pct = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        let per_head = hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1);
        kv.u32(
            &cx.key("rope.dimension_count"),
            (pct * per_head as f64) as u32,
        );
        Ok(())
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        super::llama::llama3_rope_freqs(cx, 8.0)
    }
}

/// `Exaone4Model`.
pub(crate) struct Exaone4;

impl TextModel for Exaone4 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        if hp.opt_int(&["sliding_window"])?.is_none() {
            return Ok(());
        }
        kv.u32(
            &cx.key("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        let key = cx.key("attention.sliding_window_pattern");
        if let Some(types) = hp.map.get("layer_types") {
            kv.bools(&key, base::sliding_layers(hp, types)?);
            return Ok(());
        }
        let n = hp.int(&["num_hidden_layers"])?;
        let pattern: Vec<bool> = match hp.map.get("sliding_window_pattern") {
            // "LLLG": a letter per layer, repeated.
            Some(Value::String(s)) if !s.is_empty() => {
                let letters: Vec<char> = s.chars().collect();
                (0..n as usize)
                    .map(|i| letters[i % letters.len()] == 'L')
                    .collect()
            }
            Some(Value::Number(k)) => match k.as_u64().filter(|k| *k > 0) {
                Some(k) => (0..n).map(|i| (i + 1) % k != 0).collect(),
                None => {
                    return Err(Error::field(
                        &hp.path,
                        "sliding_window_pattern",
                        format!("{k} is not a positive count"),
                    ))
                }
            },
            _ => Vec::new(),
        };
        if pattern.len() as u64 == n {
            kv.bools(&key, pattern);
        }
        Ok(())
    }

    /// Llama 3's RoPE factors, the factor's default 16.
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        super::llama::llama3_rope_freqs(cx, 16.0)
    }
}
