//! `conversion/exaone.py` (EXAONE 3 and 4).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::config::Hparams;
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

/// `ExaoneMoEModel(Exaone4Model)`: `ExaoneMoEForCausalLM` (K-EXAONE). EXAONE 4 with Qwen's
/// experts, shared experts and the routing's bias; the prediction layers (`mtp.`) are blocks
/// past `num_hidden_layers`.
pub(crate) struct ExaoneMoe;

impl TextModel for ExaoneMoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Exaone4)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    /// EXAONE 4's keys, then the mixture's, the leading dense blocks, the prediction layers
    /// and no RoPE scaling.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Exaone4.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let ff = hp.int(&["moe_intermediate_size"])?;
        let shared = hp.int(&["num_shared_experts"])?;
        kv.u32(&k("expert_feed_forward_length"), ff as u32);
        kv.u32(&k("expert_shared_count"), shared as u32);
        kv.u32(
            &k("expert_shared_feed_forward_length"),
            (ff * shared) as u32,
        );
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        let norm = hp.opt_bool(&["norm_topk_prob"])?;
        let norm = norm.ok_or_else(|| Error::reference("KeyError: 'norm_topk_prob'"))?;
        kv.bool(&k("expert_weights_norm"), norm);
        let dense = hp.opt_int(&["first_k_dense_replace", "first_last_k_dense_replace"])?;
        kv.u32(&k("leading_dense_block_count"), dense.unwrap_or(0) as u32);
        kv.u32(&k("nextn_predict_layers"), base::nextn_layers(hp)? as u32);
        kv.string(&k("rope.scaling.type"), "none");
        Ok(())
    }

    /// `mtp.layers.{i}.*` becomes block `num_hidden_layers + i`; the prediction layers' own
    /// projection and norms are yielded once for every prediction block.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let Some(rest) = name.strip_prefix("mtp.") else {
            return base::yield_as(name, Rearrange::default());
        };
        let layers = hp.int(&["num_hidden_layers"])?;
        if let Some(bid) = rest.strip_prefix("layers.").and_then(base::block_of) {
            let from = format!("mtp.layers.{bid}");
            let to = format!("model.layers.{}", bid + layers);
            return base::yield_as(&name.replacen(&from, &to, 1), Rearrange::default());
        }
        let (stem, suffix) = match name.rfind('.') {
            Some(dot) => name.split_at(dot),
            None => (name, ""),
        };
        let Some((_, part, _)) = base::MTP_SHARED.iter().find(|(s, _, _)| *s == stem) else {
            return Err(Error::reference(format!("KeyError: '{stem}'")));
        };
        let blocks = layers..layers + base::nextn_layers(hp)?;
        Ok(blocks
            .map(|b| {
                (
                    format!("model.layers.{b}.{part}{suffix}"),
                    Rearrange::default(),
                )
            })
            .collect())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}

/// `Exaone4_5_TextModel(Exaone4Model)`: `Exaone4_5_ForConditionalGeneration`'s text half
/// (EXAONE 4.5), EXAONE 4 with prediction layers (`mtp.`) past `num_hidden_layers` where
/// `num_nextn_predict_layers` counts any, each its own or all one shared
/// (`mtp_share_layers`).
pub(crate) struct Exaone45;

/// `int(self.hparams.get("num_nextn_predict_layers", 0) or 0)`.
fn nextn(hp: &Hparams) -> Result<u64> {
    Ok(hp.opt_int(&["num_nextn_predict_layers"])?.unwrap_or(0))
}

impl TextModel for Exaone45 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Exaone4)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + nextn(hp)?)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Exaone4.set_gguf_parameters(cx, kv)?;
        let n = nextn(cx.hp())?;
        if n > 0 {
            kv.u32(&cx.key("nextn_predict_layers"), n as u32);
        }
        Ok(())
    }

    /// `mtp.layers.{i}` becomes block `num_hidden_layers + i` (every prediction block where
    /// they share one layer); the projection and norms are written to every prediction block;
    /// the rest of `mtp.`, and all of it without prediction layers, is dropped.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if !name.starts_with("mtp.") {
            return base::yield_as(name, Rearrange::default());
        }
        let hp = cx.hp();
        let n = nextn(hp)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let layers = hp.int(&["num_hidden_layers"])?;
        if name.contains(".layers.") {
            let bid = base::block_of(name).unwrap_or(0);
            let from = format!("mtp.layers.{bid}");
            let share = hp
                .map
                .get("mtp_share_layers")
                .is_some_and(crate::vocab::truthy);
            let to: Vec<u64> = match share {
                true => (layers..layers + n).collect(),
                false => vec![bid + layers],
            };
            return Ok(to
                .into_iter()
                .map(|b| {
                    let to = format!("model.layers.{b}");
                    (name.replacen(&from, &to, 1), Rearrange::default())
                })
                .collect());
        }
        // `Path(name).stem` and `.suffix`: around the last dot
        let dot = name.rfind('.').unwrap_or(name.len());
        let (stem, suffix) = name.split_at(dot);
        let Some(&(_, _, tensor)) = base::MTP_SHARED.iter().find(|(s, _, _)| *s == stem) else {
            return Ok(Vec::new());
        };
        let change = Rearrange {
            named: true,
            ..Rearrange::default()
        };
        Ok((layers..cx.block_count)
            .map(|b| (crate::names::format_name(tensor, Some(b), suffix), change))
            .collect())
    }
}
