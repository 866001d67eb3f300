//! `conversion/kimi_linear.py` (`KimiLinearModel`: Moonshot's Kimi Linear).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use super::deepseek;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `KimiLinearModel`: `KimiLinearForCausalLM`, `KimiLinearModel`. Kimi's delta attention (KDA:
/// q/k/v through short convolutions, a low-rank forget gate and output gate) on most layers,
/// DeepSeek's latent attention on `linear_attn_config.full_attn_layers`, Mixtral-named experts
/// with shared ones and the routing's bias, dense leading layers.
pub(crate) struct KimiLinear;

/// Whether the config is transformers 5's (`layer_types`, `linear_*`, `mlp_layer_types`)
/// rather than the published one (`linear_attn_config`, `first_k_dense_replace`), which is
/// what transformers 5 writes when it saves a Kimi Linear it loaded. The reference reads only
/// the published fields (a `KeyError` on the other form); ggufrw reads both, the same model.
fn transformers5(hp: &Hparams) -> bool {
    !hp.map.contains_key("linear_attn_config") && hp.map.contains_key("layer_types")
}

/// `linear_attn_config.full_attn_layers`: the latent-attention layers, counted from 1 (from
/// `layer_types`' `full_attention` entries in transformers 5's form).
fn full_attn_layers(hp: &Hparams) -> Result<Vec<i64>> {
    if transformers5(hp) {
        let field = "layer_types";
        let types = hp.map[field]
            .as_array()
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<&str>>>())
            .ok_or_else(|| Error::field(&hp.path, field, "not a list of layer kinds"))?;
        return Ok((1..)
            .zip(types)
            .filter(|(_, t)| *t == "full_attention")
            .map(|(i, _)| i)
            .collect());
    }
    let field = "linear_attn_config.full_attn_layers";
    let config = hp
        .map
        .get("linear_attn_config")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::reference("KeyError: 'linear_attn_config'"))?;
    config
        .get("full_attn_layers")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>())
        .ok_or_else(|| Error::field(&hp.path, field, "missing, or not a list of layer numbers"))
}

/// `linear_attn_config[key]` where present and not null, as a 32-bit count (transformers 5's
/// `tf5_key` in its form).
fn linear_attn_int(hp: &Hparams, key: &str, tf5_key: &str) -> Result<Option<u32>> {
    if transformers5(hp) {
        return opt32(hp, &[tf5_key]);
    }
    let value = hp
        .map
        .get("linear_attn_config")
        .and_then(|c| c.get(key))
        .filter(|v| !v.is_null());
    value
        .map(|v| base::u32_of(hp, &format!("linear_attn_config.{key}"), v))
        .transpose()
}

/// `first_k_dense_replace`; in transformers 5's form the `dense` entries leading
/// `mlp_layer_types`, which must be followed by `sparse` ones only (the one layout the
/// published field can say).
fn leading_dense(hp: &Hparams) -> Result<u32> {
    let field = "mlp_layer_types";
    if hp.map.contains_key("first_k_dense_replace") || !transformers5(hp) {
        return base::int32(hp, &["first_k_dense_replace"]);
    }
    let types = hp
        .map
        .get(field)
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<&str>>>())
        .ok_or_else(|| Error::field(&hp.path, field, "missing, or not a list of layer kinds"))?;
    let dense = types.iter().take_while(|t| **t == "dense").count();
    if types[dense..].iter().any(|t| *t != "sparse") {
        return Err(Error::field(
            &hp.path,
            field,
            "not dense layers followed by sparse ones (first_k_dense_replace cannot say it)",
        ));
    }
    Ok(dense as u32)
}

/// Kimi's delta attention's short convolutions (`[channels, kernel]`, or `[channels, 1,
/// kernel]` as stored) written as `[1, channels, 1, kernel]`, where `name` is one (Kimi Linear's
/// and Ling 3's).
pub(crate) fn short_conv_shape(name: &str, shape: &[u64]) -> Option<([u64; 4], usize)> {
    let convs = [".q_conv1d.weight", ".k_conv1d.weight", ".v_conv1d.weight"];
    if !convs.iter().any(|c| name.ends_with(c)) {
        return None;
    }
    match shape {
        [inner, conv] | [inner, _, conv] => Some(([1, *inner, 1, *conv], 4)),
        _ => None,
    }
}

/// The delta attention's `dt_bias` under the step's bias's name (`dt_proj.bias`).
pub(crate) fn dt_bias_name(name: &str) -> Option<String> {
    name.strip_suffix(".dt_bias")
        .map(|stem| format!("{stem}.dt_proj.bias"))
}

/// The first of `keys` present and not null, as a 32-bit count.
fn opt32(hp: &Hparams, keys: &[&str]) -> Result<Option<u32>> {
    hp.opt_int(keys)?
        .map(|n| base::count32(hp, keys[0], n))
        .transpose()
}

impl TextModel for KimiLinear {
    /// `TextModel`'s keys with one kv head, then a kv head on the latent-attention layers
    /// only, the delta attention's convolution and head width, the latent attention's widths
    /// and the mixture's keys.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        hp.map.insert("num_key_value_heads".into(), 1.into());
        let cx = cx.with_hparams(&hp);
        base::set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        kv.u32(&k("vocab_size"), base::int32(&hp, &["vocab_size"])?);
        let full = full_attn_layers(&hp)?;
        let kv_heads = (0..hp.int(&["num_hidden_layers"])?)
            .map(|il| i32::from(full.contains(&(il as i64 + 1))))
            .collect();
        kv.i32s(&k("attention.head_count_kv"), kv_heads);
        if let Some(conv) =
            linear_attn_int(&hp, "short_conv_kernel_size", "linear_conv_kernel_dim")?
        {
            kv.u32(&k("ssm.conv_kernel"), conv);
        }
        if let Some(width) = linear_attn_int(&hp, "head_dim", "linear_head_dim")? {
            kv.u32(&k("kda.head_dim"), width);
        }
        if let Some(q) = opt32(&hp, &["q_lora_rank", "n_lora_q"])? {
            kv.u32(&k("attention.q_lora_rank"), q);
        }
        let required = |keys: &[&str]| {
            opt32(&hp, keys)?.ok_or_else(|| Error::field(&hp.path, keys[0], "missing"))
        };
        let lora = required(&["kv_lora_rank", "n_lora_kv"])?;
        kv.u32(&k("attention.kv_lora_rank"), lora);
        let rope = required(&["qk_rope_head_dim", "n_rot"])?;
        kv.u32(&k("rope.dimension_count"), rope);
        kv.u32(&k("attention.key_length"), lora + rope);
        if let Some(width) = opt32(&hp, &["n_embd_head_k_mla"])? {
            kv.u32(&k("attention.key_length_mla"), width);
        } else if let Some(nope) = opt32(&hp, &["qk_nope_head_dim"])? {
            kv.u32(&k("attention.key_length_mla"), nope + rope);
        }
        let v = match opt32(&hp, &["n_embd_head_v_mla"])? {
            Some(v) => Some(v),
            None => opt32(&hp, &["v_head_dim"])?,
        };
        if let Some(width) = v {
            kv.u32(&k("attention.value_length_mla"), width);
        }
        for (key, name) in [
            ("moe_intermediate_size", "expert_feed_forward_length"),
            ("num_shared_experts", "expert_shared_count"),
        ] {
            kv.u32(&k(name), base::int32(&hp, &[key])?);
        }
        kv.u32(&k("leading_dense_block_count"), leading_dense(&hp)?);
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        Ok(())
    }

    /// A dense layer's MLP as published (`mlp.{gate,up,down}_proj`) where transformers 5 saved
    /// it under the mixture's prefix (`block_sparse_moe.{gate,up,down}_proj`: its
    /// `save_original_format` renames every layer's `mlp.`), which the reference cannot map.
    fn published_name(&self, name: &str) -> Option<String> {
        ["gate_proj.", "up_proj.", "down_proj."]
            .iter()
            .find_map(|p| {
                let from = format!(".block_sparse_moe.{p}");
                name.contains(&from)
                    .then(|| name.replace(&from, &format!(".mlp.{p}")))
            })
    }

    /// The short convolutions as `[1, channels, 1, kernel]`, `A_log` as `-exp(A_log)`,
    /// `dt_bias` as the step's bias, `kv_b_proj` cut per head.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let change = Rearrange {
            reshape: short_conv_shape(name, shape),
            neg_exp: name.ends_with(".A_log"),
            ..Rearrange::default()
        };
        if let Some(step) = dt_bias_name(name) {
            return base::yield_as(&step, change);
        }
        if name.ends_with("kv_b_proj.weight") {
            let hp = cx.hp();
            let heads = hp.int(&["num_key_value_heads"])?;
            let v = opt32(hp, &["n_embd_head_v_mla", "v_head_dim"])?
                .ok_or_else(|| Error::field(&hp.path, "v_head_dim", "missing"))?;
            let geometry = (hp.int(&["qk_nope_head_dim"])?, u64::from(v));
            return deepseek::split_kv_b(name, shape, heads, geometry, "num_key_value_heads");
        }
        base::yield_as(name, change)
    }

    /// MiniMax-M2's: Mixtral's names, counted by `num_local_experts` or `num_experts`.
    fn experts(&self) -> Option<Experts> {
        Some(super::minimax::minimax_experts())
    }

    /// GPT-2's BPE from `tokenizer.json` (the reference's first try; its tiktoken fallback,
    /// Kimi's published `tiktoken.model`, is not read).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}
