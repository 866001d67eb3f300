//! `conversion/step3.py` (`Step35Model`: StepFun's Step 3.5 and the text half of Step 3.7).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use serde_json::{Map, Value};

/// `Step35Model`: `Step3p5ForCausalLM` and the text half of `Step3p7ForConditionalGeneration`.
/// Zero-centred norms, head-wise attention gates, a head count per layer (the sliding-window
/// layers' own, `attention_other_setting`), a RoPE base per layer kind (`rope_theta` a list),
/// experts stored packed, SwiGLU clamps per layer, and prediction layers past the trunk kept
/// and counted as blocks.
pub(crate) struct Step35;

/// The trunk's layers (the prediction layers follow them).
fn trunk(hp: &Hparams) -> Result<u64> {
    hp.int(&["n_layers", "num_hidden_layers", "n_layer", "num_layers"])
}

/// `hparams.get(key) or []` as a list.
fn list<'a>(hp: &'a Hparams, key: &str) -> Result<&'a [Value]> {
    match hp.map.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(Error::field(&hp.path, key, "not a list")),
    }
}

/// `_pad(arr, n, default)`: the list cut or padded to `n` entries.
fn padded(values: &[Value], n: u64, default: Value) -> Vec<Value> {
    let mut v: Vec<Value> = values.iter().take(n as usize).cloned().collect();
    v.resize(n as usize, default);
    v
}

/// The layer kinds over every block, sliding or not (`layer_types` padded with full
/// attention), checked against `partial_rotary_factors` (1 for a sliding layer, ½ otherwise:
/// the reference's assertion).
fn sliding(hp: &Hparams, blocks: u64) -> Result<Vec<bool>> {
    let types = padded(list(hp, "layer_types")?, blocks, "full_attention".into());
    let factors = padded(list(hp, "partial_rotary_factors")?, blocks, 0.5.into());
    let swa: Vec<bool> = types
        .iter()
        .map(|t| t.as_str() == Some("sliding_attention"))
        .collect();
    for (i, (s, f)) in swa.iter().zip(&factors).enumerate() {
        if f.as_f64() != Some(if *s { 1.0 } else { 0.5 }) {
            return Err(Error::reference(format!(
                "AssertionError: partial_rotary_factors[{i}] is {f}, not 1.0 for a sliding layer \
                 and 0.5 for a full one"
            )));
        }
    }
    Ok(swa)
}

/// `self.rope_parameters` after `set_gguf_parameters` reads a `rope_theta` list: its first
/// value the base, its second the sliding layers'.
fn rope_with_list(hp: &Hparams) -> Result<Option<(f64, f64)>> {
    let Some(Value::Array(thetas)) = hp.map.get("rope_theta") else {
        return Ok(None);
    };
    let at = |i: usize| {
        thetas.get(i).and_then(Value::as_f64).ok_or_else(|| {
            Error::field(
                &hp.path,
                format!("rope_theta[{i}]"),
                "missing, or not a number",
            )
        })
    };
    Ok(Some((at(0)?, at(1)?)))
}

impl TextModel for Step35 {
    /// The trunk and the prediction layers.
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(trunk(hp)? + base::nextn_layers(hp)?)
    }

    /// `TextModel`'s filter; the routing's bias named as a bias; a prediction layer's shared
    /// head renamed as the table names it (`transformer.` dropped, `output` as `head`).
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let mut name = base::filter_tensors(name)?;
        if name.ends_with(".moe.router_bias") {
            name.push_str(".bias");
        }
        let n = trunk(cx.hp()).ok()?;
        let mtp = name
            .strip_prefix("model.layers.")
            .and_then(|rest| rest.split('.').next())
            .and_then(|i| i.parse::<u64>().ok())
            .is_some_and(|i| i >= n);
        if mtp {
            name = name
                .replace(".transformer.", ".")
                .replace("shared_head.output", "shared_head.head");
        }
        Some(name)
    }

    /// `TextModel`'s keys with the RoPE bases of a `rope_theta` list, then per-layer head
    /// counts, the sliding window and its layers, the value width, the mixture (its dense
    /// lead from `moe_layers_enum`), the SwiGLU clamps and the prediction layers.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        if let Some((theta, local)) = rope_with_list(&hp)? {
            let mut rope = cx.rope();
            rope.insert("rope_theta".into(), theta.into());
            let mut swa = Map::new();
            swa.insert("rope_theta".into(), local.into());
            rope.insert("sliding_attention".into(), Value::Object(swa));
            hp.map.insert("rope_theta".into(), theta.into());
            hp.map.insert("local_rope_theta".into(), local.into());
            hp.map.insert("rope_parameters".into(), Value::Object(rope));
        }
        let cx = cx.with_hparams(&hp);
        base::set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        let blocks = cx.block_count;
        let swa = sliding(&hp, blocks)?;
        let other = hp
            .map
            .get("attention_other_setting")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let heads = hp.int(&["num_attention_heads"])?;
        let groups = hp.int(&["num_attention_groups"])?;
        let of_other = |key: &str, default: u64| -> Result<u64> {
            match other.get(key) {
                None => Ok(default),
                Some(v) => v.as_u64().ok_or_else(|| {
                    Error::field(
                        &hp.path,
                        format!("attention_other_setting.{key}"),
                        "not a count",
                    )
                }),
            }
        };
        let (swa_heads, swa_groups) = (
            of_other("num_attention_heads", heads)?,
            of_other("num_attention_groups", groups)?,
        );
        let per_layer = |full: u64, sliding: u64| -> Result<Vec<i32>> {
            swa.iter()
                .map(|s| base::count32(&hp, "num_attention_heads", if *s { sliding } else { full }))
                .map(|n| n.map(|n| n as i32))
                .collect()
        };
        kv.i32s(&k("attention.head_count"), per_layer(heads, swa_heads)?);
        kv.i32s(
            &k("attention.head_count_kv"),
            per_layer(groups, swa_groups)?,
        );
        kv.u32(
            &k("attention.sliding_window"),
            base::int32(&hp, &["sliding_window"])?,
        );
        kv.bools(&k("attention.sliding_window_pattern"), swa);
        kv.u32(
            &k("attention.value_length"),
            base::int32(&hp, &["head_dim"])?,
        );
        for (from, to) in [
            ("moe_num_experts", "expert_count"),
            ("moe_top_k", "expert_used_count"),
            ("moe_intermediate_size", "expert_feed_forward_length"),
            ("share_expert_dim", "expert_shared_feed_forward_length"),
        ] {
            kv.u32(&k(to), base::int32(&hp, &[from])?);
        }
        if let Some(scale) = hp.opt_float(&["moe_router_scaling_factor"])? {
            kv.f32(&k("expert_weights_scale"), scale);
        }
        if let Some(norm) = hp.opt_bool(&["norm_expert_weight"])? {
            kv.bool(&k("expert_weights_norm"), norm);
        }
        let mut dense = 0;
        if let Some(Value::String(s)) = hp.map.get("moe_layers_enum") {
            if !s.trim().is_empty() {
                let layers = s
                    .trim()
                    .split(',')
                    .map(|p| p.trim().parse::<i64>())
                    .collect::<std::result::Result<Vec<i64>, _>>()
                    .map_err(|_| {
                        Error::field(
                            &hp.path,
                            "moe_layers_enum",
                            format!("{s:?}: not a list of layers"),
                        )
                    })?;
                dense = layers.iter().min().copied().unwrap_or(0).max(0);
            }
        }
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        let every = match hp.map.get("moe_every_n_layer") {
            None => 1,
            Some(_) => hp.int(&["moe_every_n_layer"])?,
        };
        kv.u32(&k("moe_every_n_layers"), every as u32);
        let eps = hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-5);
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        for (from, to) in [
            ("swiglu_limits", "swiglu_clamp_exp"),
            ("swiglu_limits_shared", "swiglu_clamp_shexp"),
        ] {
            if let Some(values) = base::clamp_list(&hp, from, blocks)? {
                kv.f32s(&k(to), values);
            }
        }
        let nextn = base::nextn_layers(&hp)?;
        if nextn > 0 {
            kv.u32(&k("nextn_predict_layers"), nextn as u32);
        }
        Ok(())
    }

    /// One added to every norm (zero-centred); the gates and the packed experts squeezed.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let squeezed = [
            ".self_attn.g_proj.weight",
            ".moe.gate.weight",
            ".moe.up_proj.weight",
            ".moe.gate_proj.weight",
            ".moe.down_proj.weight",
        ];
        let change = Rearrange {
            add: base::norm_offset(name),
            squeeze: squeezed.iter().any(|s| name.ends_with(s)),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    /// Llama 3's RoPE factors where `rope_type` is `llama3`: over the full layers' rotated
    /// width (the first full layer's factor of `head_dim`), then 1 up to half a head.
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        let hp = cx.hp();
        let rope = base::rope_params(&cx.rope());
        let typ = rope.get("rope_type").and_then(Value::as_str).unwrap_or("");
        if !typ.eq_ignore_ascii_case("llama3") {
            return Ok(Vec::new());
        }
        let base_theta = match hp.map.get("rope_theta") {
            None => 10000.0,
            Some(Value::Array(a)) => a.first().and_then(Value::as_f64).ok_or_else(|| {
                Error::field(&hp.path, "rope_theta[0]", "missing, or not a number")
            })?,
            Some(_) => hp.float(&["rope_theta"])?,
        };
        let storage = match hp.opt_int(&["head_dim"])? {
            Some(d) => d,
            None => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?,
        };
        let n = cx.block_count as usize;
        let types = list(hp, "layer_types")?;
        let factors = list(hp, "partial_rotary_factors")?;
        let full = types
            .iter()
            .take(n)
            .zip(factors.iter().take(n))
            .find(|(t, _)| t.as_str() == Some("full_attention"))
            .and_then(|(_, f)| f.as_f64())
            .ok_or_else(|| {
                Error::reference("StopIteration: no full_attention layer's partial rotary factor")
            })?;
        let rotary = (storage as f64 * full) as u64;
        let get =
            |key: &str, default: f64| rope.get(key).and_then(Value::as_f64).unwrap_or(default);
        let factor = get("factor", 8.0);
        let (low, high) = (get("low_freq_factor", 1.0), get("high_freq_factor", 4.0));
        let old = get("original_max_position_embeddings", 8192.0).trunc();
        let (low_wavelen, high_wavelen) = (old / low, old / high);
        let base32 = base_theta as f32;
        let mut out: Vec<f32> = (0..rotary)
            .step_by(2)
            .map(|i| {
                // torch's float32 powers; the rest in Python's doubles
                let freq = 1.0f32 / base32.powf(i as f32 / rotary as f32);
                let wavelen = 2.0 * std::f64::consts::PI / f64::from(freq);
                let v = if wavelen < high_wavelen {
                    1.0
                } else if wavelen > low_wavelen {
                    factor
                } else {
                    let smooth = (old / wavelen - low) / (high - low);
                    1.0 / ((1.0 - smooth) / factor + smooth)
                };
                v as f32
            })
            .collect();
        let half = (storage / 2) as usize;
        if out.len() < half {
            out.resize(half, 1.0);
        }
        Ok(vec![(base::extra_name(Tensor::ROPE_FREQS), out)])
    }
}
