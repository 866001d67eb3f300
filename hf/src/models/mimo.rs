//! `conversion/mimo.py` (`MimoV2Model`: Xiaomi's MiMo V2).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result, Unsupported};
use crate::kv::Kv;
use serde_json::Value;

/// `MimoV2Model`: `MiMoV2FlashForCausalLM` and the text half of `MiMoV2ForCausalLM` (MiMo
/// V2-Flash, V2.5). Sliding-window layers with their own kv heads and attention sinks beside
/// full ones (`hybrid_layer_pattern`), experts after a dense first layer, and three
/// prediction layers (`model.mtp.layers.{0,1,2}`, which every release ships and no config
/// counts) kept as blocks past the trunk.
pub(crate) struct MimoV2;

/// The prediction layers every MiMo V2 release ships.
const NEXTN: u64 = 3;

/// The checks `set_gguf_parameters` asserts: one head geometry for both layer kinds, and
/// the routing it converts.
fn check(hp: &Hparams) -> Result<()> {
    for (swa, full) in [
        ("swa_head_dim", "head_dim"),
        ("swa_num_attention_heads", "num_attention_heads"),
        ("swa_v_head_dim", "v_head_dim"),
    ] {
        if hp.int(&[swa])? != hp.int(&[full])? {
            return Err(Error::reference(format!(
                "AssertionError: {swa} is not {full} ({})",
                hp.path.display()
            )));
        }
    }
    let method = hp.map.get("topk_method").and_then(Value::as_str);
    if method != Some("noaux_tc") {
        return Err(Error::reference(format!(
            "AssertionError: topk_method is {method:?}, not \"noaux_tc\""
        )));
    }
    Ok(())
}

impl TextModel for MimoV2 {
    /// The trunk and the three prediction layers. The releases the reference reads through
    /// other paths (the fused q/k/v of FP8 V2.5, stored per tensor-parallel rank; V2.6's
    /// MXFP4 experts) are refused as not yet read.
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        let q = hp.map.get("quantization_config");
        let method = q
            .and_then(|q| q.get("quant_method"))
            .and_then(Value::as_str);
        let fused_fp8 = method == Some("fp8")
            && names
                .iter()
                .any(|n| n.ends_with(".self_attn.qkv_proj.weight_scale_inv"));
        let mxfp4 = q.and_then(|q| q.get("store_dtype")).and_then(Value::as_str) == Some("mxfp4");
        if fused_fp8 || mxfp4 {
            let what = match fused_fp8 {
                true => "FP8 q/k/v fused per tensor-parallel rank (qkv_proj)",
                false => "MXFP4 experts (store_dtype mxfp4)",
            };
            return Err(Unsupported::NotYet(format!(
                "{}: MiMo V2's {what} is not read yet",
                hp.path.display()
            ))
            .into());
        }
        Ok(hp.int(&["num_hidden_layers"])? + NEXTN)
    }

    /// A sink without `.weight` gets one.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.contains("attention_sink") && !name.ends_with(".weight") {
            return base::filter_tensors(&format!("{name}.weight"));
        }
        base::filter_tensors(name)
    }

    /// `TextModel`'s keys, then kv heads and the sliding window's pattern per block (the
    /// prediction layers' sliding), the value width, the experts, the rotated width, the RMS
    /// epsilon (`layernorm_epsilon`), the value scale and the prediction layers.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        check(hp)?;
        let k = |s: &str| cx.key(s);
        let (full, swa) = (
            hp.int(&["num_key_value_heads"])?,
            hp.int(&["swa_num_key_value_heads"])?,
        );
        let field = "hybrid_layer_pattern";
        let mut pattern = hp
            .map
            .get(field)
            .and_then(Value::as_array)
            .ok_or_else(|| Error::field(&hp.path, field, "missing, or not a list"))?
            .iter()
            .map(|v| {
                v.as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| Error::field(&hp.path, field, format!("{v} is not a count")))
            })
            .collect::<Result<Vec<i32>>>()?;
        pattern.extend([1; NEXTN as usize]);
        let heads = pattern
            .iter()
            .map(|&p| base::count32(hp, "num_key_value_heads", if p == 1 { swa } else { full }))
            .map(|n| n.map(|n| n as i32))
            .collect::<Result<Vec<i32>>>()?;
        kv.i32s(&k("attention.head_count_kv"), heads);
        kv.u32(
            &k("attention.sliding_window"),
            base::int32(hp, &["sliding_window"])?,
        );
        kv.i32s(&k("attention.sliding_window_pattern"), pattern);
        kv.u32(
            &k("attention.value_length"),
            base::int32(hp, &["v_head_dim"])?,
        );
        kv.u32(&k("expert_count"), base::int32(hp, &["n_routed_experts"])?);
        kv.u32(
            &k("expert_feed_forward_length"),
            base::int32(hp, &["moe_intermediate_size"])?,
        );
        let partial = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::reference("KeyError: 'partial_rotary_factor'"))?;
        let rot = (hp.int(&["head_dim"])? as f64 * partial) as u32;
        kv.u32(&k("rope.dimension_count"), rot);
        let eps = match hp.map.get("layernorm_epsilon") {
            None => 1e-5,
            Some(_) => hp.float(&["layernorm_epsilon"])?,
        };
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        if let Some(scale) = hp.opt_float(&["attention_value_scale"])? {
            kv.f32(&k("attention.value_scale"), scale);
        }
        kv.u32(&k("nextn_predict_layers"), NEXTN as u32);
        Ok(())
    }

    /// A prediction layer's tensors moved to block `num_hidden_layers + k`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let Some(rest) = name.strip_prefix("model.mtp.layers.") else {
            return base::yield_as(name, Rearrange::default());
        };
        let (k, tail) = rest.split_once('.').unwrap_or((rest, ""));
        let k: u64 = k
            .parse()
            .map_err(|_| Error::reference(format!("{name}: not a prediction layer's tensor")))?;
        if k >= NEXTN {
            return Err(Error::reference(format!(
                "AssertionError: MTP layer index {k} >= _n_nextn ({NEXTN})"
            )));
        }
        let n = cx.hp().int(&["num_hidden_layers"])?;
        base::yield_as(
            &format!("model.layers.{}.{tail}", n + k),
            Rearrange::default(),
        )
    }

    /// Stacked `gate`, `up`, `down`, counted by `n_routed_experts`.
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["n_routed_experts"],
            marker: ".mlp.experts.",
            packed: &[],
            weights: &["gate_proj", "up_proj", "down_proj"],
            ..super::qwen::qwen_experts()
        })
    }
}
