//! `conversion/exaone.py` (EXAONE 4).

use super::base::{self, Ctx, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::{self, ArchTable, Tensor};
use serde_json::Value;

/// `Exaone4Model`.
pub(crate) struct Exaone4;

impl TextModel for Exaone4 {
    fn arch(&self) -> &'static ArchTable {
        &tables::EXAONE4
    }

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
        let params = base::rope_params(&cx.rope());
        let llama3 = params
            .get("rope_type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.to_lowercase() == "llama3");
        if params.is_empty() || !llama3 {
            return Ok(Vec::new());
        }
        let f = |k: &str, d: f64| params.get(k).and_then(Value::as_f64).unwrap_or(d);
        let hp = cx.hp();
        let dim = match hp.opt_int(&["head_dim"])? {
            Some(d) => d,
            None => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
        };
        let out = super::llama::llama3_factors(
            f("rope_theta", 10000.0),
            dim,
            f("factor", 16.0),
            f("low_freq_factor", 1.0),
            f("high_freq_factor", 4.0),
            f("original_max_position_embeddings", 8192.0),
        );
        Ok(vec![(base::extra_name(Tensor::ROPE_FREQS), out)])
    }
}
