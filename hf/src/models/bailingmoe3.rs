//! `conversion/bailingmoe3.py` (`BailingMoeV3Model`: inclusionAI's Ling 3).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use super::deepseek;
use super::kimi_linear;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use serde_json::Value;

/// `BailingMoeV3Model`: `BailingMoeV3ForCausalLM` (Ling 3). Kimi's delta attention (KDA:
/// q/k/v with short convolutions, a full-rank forget gate, a safe gate's bound) on most
/// layers, DeepSeek's latent attention with a head-wise gate on every `layer_group_size`-th
/// and the tail, experts with shared ones and the routing's bias, prediction layers counted.
pub(crate) struct BailingMoeV3;

/// `is_full_attention(bid)`: latent attention on every `layer_group_size`-th layer, the layers
/// past the last whole group and the prediction layers.
fn full_attention(hp: &Hparams, bid: u64) -> Result<bool> {
    let n = hp.int(&["num_hidden_layers"])?;
    let group = hp.int(&["layer_group_size"])?;
    if group == 0 {
        return Err(Error::field(&hp.path, "layer_group_size", "0"));
    }
    Ok(bid >= n || (bid + 1) % group == 0 || bid >= n / group * group)
}

impl TextModel for BailingMoeV3 {
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    /// `expert_bias` becomes `expert_bias.bias`.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        super::bailingmoe::expert_bias_filter(name)
    }

    /// `TextModel`'s keys with one kv head, then a kv head on the latent-attention layers
    /// only, the delta attention's convolution, head width, safe gate and bound, the latent
    /// attention's widths, the mixture, SwiGLU clamps and the prediction layers. The forms of
    /// the model the reference cannot write are refused first.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp0 = cx.hp();
        let truthy = |key: &str| hp0.map.get(key).is_some_and(crate::vocab::truthy);
        if !truthy("no_kda_lora") {
            return Err(Error::reference(
                "ValueError: BailingMoeV3 KDA LoRA projections are not supported",
            ));
        }
        if !truthy("kda_safe_gate") {
            return Err(Error::reference(
                "ValueError: BailingMoeV3 non-safe KDA gates are not supported",
            ));
        }
        let granularity = hp0.map.get("gated_attention_proj_granularity_type");
        if granularity.and_then(Value::as_str) != Some("head_wise") {
            return Err(Error::reference(
                "ValueError: BailingMoeV3 requires head-wise attention gates",
            ));
        }
        let mut hp = hp0.clone();
        hp.map.insert("num_key_value_heads".into(), 1.into());
        let cx = cx.with_hparams(&hp);
        base::set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        let kv_heads = (0..cx.block_count)
            .map(|il| Ok(i32::from(full_attention(&hp, il)?)))
            .collect::<Result<Vec<i32>>>()?;
        kv.i32s(&k("attention.head_count_kv"), kv_heads);
        let int = |key: &str| base::int32(&hp, &[key]);
        kv.u32(&k("vocab_size"), int("vocab_size")?);
        kv.u32(&k("ssm.conv_kernel"), int("short_conv_kernel_size")?);
        kv.u32(&k("kda.head_dim"), int("head_dim")?);
        let safe = hp
            .opt_bool(&["kda_safe_gate"])?
            .ok_or_else(|| Error::field(&hp.path, "kda_safe_gate", "not a boolean"))?;
        kv.bool(&k("kda.safe_gate"), safe);
        kv.f32(&k("kda.gate_lower_bound"), hp.float(&["kda_lower_bound"])?);
        let (lora, nope, rope) = (
            int("kv_lora_rank")?,
            int("qk_nope_head_dim")?,
            int("qk_rope_head_dim")?,
        );
        if let Some(q) = hp.opt_int(&["q_lora_rank"])? {
            kv.u32(&k("attention.q_lora_rank"), q as u32);
        }
        kv.u32(&k("attention.kv_lora_rank"), lora);
        kv.u32(&k("rope.dimension_count"), rope);
        kv.u32(&k("attention.key_length"), lora + rope);
        kv.u32(&k("attention.key_length_mla"), nope + rope);
        kv.u32(&k("attention.value_length_mla"), int("v_head_dim")?);
        kv.u32(
            &k("expert_feed_forward_length"),
            int("moe_intermediate_size")?,
        );
        kv.u32(
            &k("expert_shared_feed_forward_length"),
            int("moe_shared_expert_intermediate_size")?,
        );
        let shared = match hp.map.get("num_shared_experts") {
            None => 1,
            Some(_) => int("num_shared_experts")?,
        };
        kv.u32(&k("expert_shared_count"), shared);
        kv.u32(
            &k("leading_dense_block_count"),
            int("first_k_dense_replace")?,
        );
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        let norm = hp
            .opt_bool(&["norm_topk_prob"])?
            .ok_or_else(|| Error::reference("KeyError: 'norm_topk_prob'"))?;
        kv.bool(&k("expert_weights_norm"), norm);
        for (from, to) in [
            ("expert_swiglu_limit_list", "swiglu_clamp_exp"),
            ("share_expert_swiglu_limit_list", "swiglu_clamp_shexp"),
        ] {
            if let Some(values) = base::clamp_list(&hp, from, cx.block_count)? {
                kv.f32s(&k(to), values);
            }
        }
        let nextn = base::nextn_layers(&hp)?;
        if nextn > 0 {
            kv.u32(&k("nextn_predict_layers"), nextn as u32);
        }
        Ok(())
    }

    /// The short convolutions as `[1, channels, 1, kernel]`; `A_log` as `exp(A_log)`, a
    /// column; `dt_bias` as the step's bias; the forget and output gates named by their
    /// layer's kind; `kv_b_proj` cut per head.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let bid = base::block_of(name);
        if let Some(reshape) = kimi_linear::short_conv_shape(name, shape) {
            let change = Rearrange {
                reshape: Some(reshape),
                ..Rearrange::default()
            };
            return base::yield_as(name, change);
        }
        if name.ends_with(".A_log") {
            let n = shape.iter().product::<u64>();
            let change = Rearrange {
                exp: true,
                reshape: Some(([n, 1, 0, 0], 2)),
                ..Rearrange::default()
            };
            return base::yield_as(name, change);
        }
        if let Some(step) = kimi_linear::dt_bias_name(name) {
            return base::yield_as(&step, Rearrange::default());
        }
        if let Some(bid) = bid {
            if name.ends_with(".attention.f_proj.weight") {
                if full_attention(hp, bid)? {
                    return Err(Error::reference(format!(
                        "ValueError: unexpected f_proj on full-attention layer {bid}"
                    )));
                }
                let to = format_name(Tensor::SSM_F_A, Some(bid), ".weight");
                return base::yield_as(&to, Rearrange::default());
            }
            if name.ends_with(".attention.g_proj.weight") {
                let t = match full_attention(hp, bid)? {
                    true => Tensor::ATTN_GATE,
                    false => Tensor::SSM_G_A,
                };
                return base::yield_as(&format_name(t, Some(bid), ".weight"), Rearrange::default());
            }
            if name.ends_with(".attention.kv_b_proj.weight") {
                let heads = hp.int(&["num_attention_heads"])?;
                let geometry = (hp.int(&["qk_nope_head_dim"])?, hp.int(&["v_head_dim"])?);
                let split =
                    deepseek::split_kv_b(name, shape, heads, geometry, "num_attention_heads")?;
                let named = [Tensor::ATTN_K_B, Tensor::ATTN_V_B];
                return Ok(split
                    .into_iter()
                    .zip(named)
                    .map(|((_, change), t)| (format_name(t, Some(bid), ".weight"), change))
                    .collect());
            }
        }
        base::yield_as(name, Rearrange::default())
    }

    /// Stacked `down`, `gate`, `up`, counted by `num_experts`.
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_experts"],
            marker: ".mlp.experts.",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}

/// `BailingMoeV3VLModel(BailingMoeV3Model)`: the text half of
/// `BailingMoeV3VLForConditionalGeneration` (Ling 3 VL): Ling 3 with M-RoPE sections
/// (`mrope_section`, required, pairs summing to half the rotated width), its projector dropped.
pub(crate) struct BailingMoeV3Vl;

impl TextModel for BailingMoeV3Vl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&BailingMoeV3)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("linear_proj") {
            return None;
        }
        BailingMoeV3.filter_tensors(cx, name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        BailingMoeV3.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let sections = match hp.map.get("mrope_section") {
            None | Some(Value::Null) => {
                return Err(Error::reference(
                    "ValueError: BailingMoeV3VL requires mrope_section in the config",
                ))
            }
            Some(v) => v
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .take(3)
                        .map(Value::as_i64)
                        .collect::<Option<Vec<i64>>>()
                })
                .ok_or_else(|| Error::field(&hp.path, "mrope_section", "not a list of counts"))?,
        };
        let rope = hp.int(&["qk_rope_head_dim"])?;
        if sections.iter().sum::<i64>() * 2 != rope as i64 {
            return Err(Error::reference(format!(
                "ValueError: mrope_section {sections:?} counts rope pairs and must sum to \
                 qk_rope_head_dim / 2 = {}",
                rope / 2
            )));
        }
        let mut dims: Vec<i32> = sections.iter().map(|&s| s as i32).collect();
        dims.push(0);
        kv.i32s(&cx.key("rope.dimension_sections"), dims);
        Ok(())
    }
}
