//! `conversion/falcon_h1.py` (`FalconH1Model(Mamba2Model)`: TII's Falcon-H1).

use super::base::{self, Ctx, TextModel, Yields};
use super::mamba;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `FalconH1Model`: `FalconH1ForCausalLM`. Mamba-2 and attention side by side in every layer
/// (q and k not permuted), Mamba-2's keys then the attention's; the published multipliers
/// folded into the weights; GPT-2's BPE.
pub(crate) struct FalconH1;

/// `find_hparam(keys)` with the `mamba_`-prefixed keys tried after the plain ones.
fn find<'a>(hp: &'a Hparams, keys: &[&str]) -> Option<(String, &'a Value)> {
    let plain = keys.iter().map(|k| (*k).to_owned());
    let all: Vec<String> = plain
        .chain(keys.iter().map(|k| format!("mamba_{k}")))
        .collect();
    all.into_iter()
        .find_map(|k| hp.map.get(&k).map(|v| (k.clone(), v)))
}

/// [`find`] as a count: `or default` where absent, null or zero; the reference's error where
/// `default` is `None` and it is absent.
fn count(hp: &Hparams, keys: &[&str], default: Option<u64>) -> Result<u64> {
    let found = match find(hp, keys) {
        None | Some((_, Value::Null)) => None,
        Some((k, v)) => Some(u64::from(base::u32_of(hp, &k, v)?)),
    };
    match (found.filter(|&n| n != 0), default) {
        (Some(n), _) => Ok(n),
        (None, Some(d)) => Ok(d),
        (None, None) => match found {
            Some(n) => Ok(n),
            None => Err(Error::field(&hp.path, keys[0], "missing")),
        },
    }
}

/// A multiplier of the config (`find_hparam`, or `hparams[key]`), as a float.
fn multiplier(hp: &Hparams, key: &str) -> Result<f64> {
    match find(hp, &[key]) {
        Some((k, v)) => v
            .as_f64()
            .ok_or_else(|| Error::field(&hp.path, &k, "not a number")),
        None => Err(Error::field(&hp.path, key, "missing")),
    }
}

/// Element `i` of a list of multipliers.
fn nth(hp: &Hparams, key: &str, i: usize) -> Result<f64> {
    hp.map
        .get(key)
        .and_then(|v| v.get(i))
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::field(&hp.path, key, format!("no number at {i}")))
}

impl TextModel for FalconH1 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }

    /// Mamba-2's keys (the inner width `mamba_d_ssm`), then the vocabulary, layers, context,
    /// feed-forward and attention's, and the RoPE base.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let d_model = count(hp, &["hidden_size", "d_model", "dim"], None)?;
        let d_inner = count(hp, &["mamba_d_ssm"], None)?;
        let groups = count(hp, &["n_groups"], None)?;
        let d_head = count(hp, &["d_head"], None)?;
        let d_conv = count(hp, &["conv_kernel", "d_conv"], Some(4))?;
        let d_state = count(hp, &["state_size", "d_state"], Some(128))?;
        let head_dim = count(hp, &["mamba_d_head", "head_dim"], Some(64))?;
        let eps = match find(hp, &["layer_norm_epsilon", "rms_norm_eps"]) {
            None | Some((_, Value::Null)) => 1e-5,
            Some((key, v)) => v
                .as_f64()
                .ok_or_else(|| Error::field(&hp.path, &key, "not a number"))
                .map(|e| if e == 0.0 { 1e-5 } else { e })?,
        };
        if head_dim == 0 {
            return Err(Error::field(&hp.path, "mamba_d_head", "is 0"));
        }
        mamba::MambaKeys::mamba2(d_model, d_conv, d_inner, d_state, head_dim)
            .write_mamba2(cx, kv, groups, eps);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&k("block_count"), cx.block_count as u32);
        let context = match hp.map.get("max_position_embeddings") {
            None => 0,
            Some(v) => base::u32_of(hp, "max_position_embeddings", v)?,
        };
        kv.u32(&k("context_length"), context);
        for (key, gguf) in [
            ("intermediate_size", "feed_forward_length"),
            ("num_attention_heads", "attention.head_count"),
            ("num_key_value_heads", "attention.head_count_kv"),
            ("head_dim", "attention.key_length"),
            ("head_dim", "attention.value_length"),
        ] {
            kv.u32(&k(gguf), hp.int(&[key])? as u32);
        }
        let act = hp.map.get("hidden_act");
        if !matches!(act, None | Some(Value::Null)) && act.and_then(Value::as_str) != Some("silu") {
            return Err(Error::reference(
                "AssertionError: Only SILU activation supported",
            ));
        }
        if d_head == 0 || d_inner % d_head != 0 {
            return Err(Error::reference(format!(
                "AssertionError: SSM inner size {d_inner} not a multiple of head dim {d_head}"
            )));
        }
        let theta = cx
            .rope()
            .get("rope_theta")
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::field(&hp.path, "rope_theta", "missing or not a number"))?;
        kv.f32(&k("rope.freq_base"), theta);
        Ok(())
    }

    /// Mamba-2's filter.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(&mamba::mamba2_name(name))
    }

    /// Mamba-2's rules (inner width `mamba_d_ssm`), then each tensor multiplied by its
    /// multiplier, by the part of its rows for `in_proj` (z, x, B, C, dt).
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let d_inner = count(hp, &["mamba_d_ssm"], None)?;
        let groups = count(hp, &["n_groups"], None)?;
        let mut yields = mamba::mamba2_tensor(cx, name, shape, d_inner, groups)?;
        let Some((_, change)) = yields.first_mut() else {
            return Ok(yields);
        };
        let m = |key: &str| multiplier(hp, key);
        let factor = if name.contains("down_proj") {
            Some(nth(hp, "mlp_multipliers", 1)?)
        } else if name.contains("gate_proj") {
            Some(nth(hp, "mlp_multipliers", 0)?)
        } else if name.contains("k_proj") {
            // `tensor * key_multiplier * attention_in_multiplier`: two products, in turn
            let then = m("attention_in_multiplier")? as f32;
            change.row_scales = Some([(u64::MAX, then); 5]);
            Some(m("key_multiplier")?)
        } else if name.contains("q_proj") || name.contains("v_proj") {
            Some(m("attention_in_multiplier")?)
        } else if name.contains("o_proj") {
            Some(m("attention_out_multiplier")?)
        } else if name.contains("out_proj") {
            Some(m("ssm_out_multiplier")?)
        } else if name.contains("in_proj") {
            if shape.len() != 2 {
                return Err(Error::reference(format!(
                    "{name} is {shape:?}: in_proj's parts are cut along rows of a matrix"
                )));
            }
            let inner = hp.int(&["mamba_d_ssm"])?;
            let gs = hp.int(&["mamba_n_groups"])? * hp.int(&["mamba_d_state"])?;
            let parts = [
                inner,
                2 * inner,
                2 * inner + gs,
                2 * inner + 2 * gs,
                u64::MAX,
            ];
            let mut scales = [(0, 1.0); 5];
            for (i, end) in parts.into_iter().enumerate() {
                scales[i] = (end, nth(hp, "ssm_multipliers", i)? as f32);
            }
            change.row_scales = Some(scales);
            Some(m("ssm_in_multiplier")?)
        } else if name.contains("lm_head") {
            Some(nth_or_key(hp, "lm_head_multiplier")?)
        } else if name.contains("embed_tokens") {
            Some(nth_or_key(hp, "embedding_multiplier")?)
        } else {
            None
        };
        if let Some(f) = factor {
            if change.view.is_some() || change.squeeze || change.unsqueeze || change.neg_exp {
                return Err(Error::reference(format!(
                    "{name}: a multiplier on a reshaped Mamba-2 tensor"
                )));
            }
            change.scale = Some(f as f32);
        }
        Ok(yields)
    }
}

/// `hparams[key]` as a float (a `KeyError` where missing).
fn nth_or_key(hp: &Hparams, key: &str) -> Result<f64> {
    hp.map
        .get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::field(&hp.path, key, "missing or not a number"))
}
