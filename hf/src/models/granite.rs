//! `conversion/granite.py` (the dense classes and the mixtures of experts).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, View, Yields};
use super::llama::Llama;
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;
use crate::tables::{self, ArchTable};
use serde_json::Value;

/// `GraniteModel(LlamaModel)`.
pub(crate) struct Granite;

impl TextModel for Granite {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    /// The vision model's tensors are dropped, then Llama's filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("encoder.")
            || name.contains("image_")
            || name.contains("layerwise_projectors")
            || name.contains("spatial_projectors")
        {
            return None;
        }
        Llama.filter_tensors(cx, name)
    }

    /// Llama's keys without `head_dim` (popped first), then the multipliers that are set.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        if hp.map.contains_key("spatial_target_layers")
            || hp.map.contains_key("deepstack_layer_map")
        {
            return Err(crate::error::Error::not_yet(
                "Granite 4 Vision's deepstack mapping is not written yet",
            ));
        }
        let mut popped = hp.clone();
        popped.map.remove("head_dim");
        Llama.set_gguf_parameters(&cx.with_hparams(&popped), kv)?;
        let scales = [
            ("attention_multiplier", "attention.scale"),
            ("embedding_multiplier", "embedding_scale"),
            ("residual_multiplier", "residual_scale"),
            ("logits_scaling", "logit_scale"),
        ];
        for (from, key) in scales {
            // `if x := hparams.get(...)`: a zero or a null is not written.
            if let Some(v) = hp.opt_float(&[from])?.filter(|v| *v != 0.0) {
                kv.f32(&cx.key(key), v);
            }
        }
        Ok(())
    }
}

/// `GraniteSWAModel(GraniteModel)`: interleaved sliding-window attention.
pub(crate) struct GraniteSwa;

impl TextModel for GraniteSwa {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Granite)
    }

    /// The attention sinks are named as weights, then Granite's filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match name.ends_with("sinks") {
            true => Granite.filter_tensors(cx, &format!("{name}.weight")),
            false => Granite.filter_tensors(cx, name),
        }
    }

    /// Granite's keys, the window (128 by default), which layers slide (`layer_types`, else
    /// all but every fourth) and which rotate (`no_rope_layers`, where given).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Granite.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let window = hp.opt_int(&["sliding_window"])?.unwrap_or(128);
        kv.u32(&cx.key("attention.sliding_window"), window as u32);
        let pattern = match hp
            .map
            .get("layer_types")
            .filter(|t| crate::vocab::truthy(t))
        {
            Some(types) => base::sliding_layers(hp, types)?,
            None => (0..cx.block_count).map(|i| i % 4 != 0).collect(),
        };
        kv.bools(&cx.key("attention.sliding_window_pattern"), pattern);
        if let Some(serde_json::Value::Array(layers)) = hp.map.get("no_rope_layers") {
            if !layers.is_empty() {
                let rope = layers.iter().map(crate::vocab::truthy).collect();
                kv.bools(&cx.key("attention.rope_pattern"), rope);
            }
        }
        Ok(())
    }
}

/// The mixtures' `expert_shared_feed_forward_length`, where `shared_intermediate_size` is set.
fn shared_width(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let shared = cx.hp().opt_int(&["shared_intermediate_size"])?;
    if let Some(n) = shared.filter(|&n| n != 0) {
        kv.u32(&cx.key("expert_shared_feed_forward_length"), n as u32);
    }
    Ok(())
}

/// Whether a fused gate/up of `shape` holds two halves of `part` rows on its second-last axis.
fn halves(shape: &[u64], part: u64) -> bool {
    shape.len() >= 2 && shape[shape.len() - 2] == 2 * part
}

/// `GraniteMoeModel(GraniteModel)`: `GraniteMoeForCausalLM`, `GraniteMoeSharedForCausalLM`.
/// The experts' gate and up are stored fused (`input_linear`, `[experts, 2·ffn, hidden]`),
/// as is the shared expert's (`[2·shared, hidden]`).
pub(crate) struct GraniteMoe;

impl TextModel for GraniteMoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Granite)
    }

    /// Granite's keys, then the shared expert's width where it is set.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Granite.set_gguf_parameters(cx, kv)?;
        shared_width(cx, kv)
    }

    /// The fused gate/up cut in two along their rows (within each expert), under GGUF names;
    /// without routed experts the shared expert is the block's feed-forward.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let bid = base::block_of(name);
        let gguf = |t: Tensor| format_name(t, bid, ".weight");
        let fused = |key: &str| -> Result<u64> {
            let part = hp.int(&[key])?;
            match halves(shape, part) {
                true => Ok(part),
                false => Err(Error::field(
                    &hp.path,
                    key,
                    format!("{name} is {shape:?}: not two halves of {part} rows"),
                )),
            }
        };
        if name.ends_with("block_sparse_moe.input_linear.weight") {
            let ff = fused("intermediate_size")?;
            let [n, _, cols] = shape[..] else {
                return Err(Error::field(
                    &hp.path,
                    "intermediate_size",
                    format!("{name} is {shape:?}, not [experts, rows, columns]"),
                ));
            };
            let half = |h| View::middle_half(n, ff, cols, h).alone();
            return Ok(vec![
                (gguf(Tensor::FFN_GATE_EXP), half(0)),
                (gguf(Tensor::FFN_UP_EXP), half(1)),
            ]);
        }
        let has_experts = hp.opt_int(&["num_local_experts"])?.is_some_and(|n| n != 0);
        if name.ends_with("shared_mlp.input_linear.weight") {
            let s = fused("shared_intermediate_size")?;
            let rows = |a, b| Rearrange {
                rows: Some((a, b)),
                ..Rearrange::default()
            };
            let (gate, up) = match has_experts {
                true => (Tensor::FFN_GATE_SHEXP, Tensor::FFN_UP_SHEXP),
                false => (Tensor::FFN_GATE, Tensor::FFN_UP),
            };
            return Ok(vec![(gguf(gate), rows(0, s)), (gguf(up), rows(s, 2 * s))]);
        }
        if !has_experts && name.ends_with("shared_mlp.output_linear.weight") {
            return base::yield_as(&gguf(Tensor::FFN_DOWN), Rearrange::default());
        }
        Granite.modify_tensors(cx, name, shape)
    }

    /// None stored one by one (Mixtral's, which Llama has, are not Granite's).
    fn experts(&self) -> Option<Experts> {
        None
    }
}

/// `GraniteMoeSWAModel(GraniteSWAModel)`: `GraniteMoeSWAForCausalLM`. The experts' gate and
/// up are kept fused (`ffn_gate_up_exps`), as the shared expert's are (`ffn_up_shexp`).
pub(crate) struct GraniteMoeSwa;

impl TextModel for GraniteMoeSwa {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&GraniteSwa)
    }

    /// GraniteSWA's keys, then the shared expert's width where it is set.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        GraniteSwa.set_gguf_parameters(cx, kv)?;
        shared_width(cx, kv)
    }

    /// The experts (`experts.gate_up_proj` as transformers holds them, or Granite's
    /// `input_linear`) and the shared expert under GGUF names, gate and up left fused.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let bid = base::block_of(name);
        let gguf =
            |t: Tensor| base::yield_as(&format_name(t, bid, ".weight"), Rearrange::default());
        let fused = |part: u64| -> Result<()> {
            match halves(shape, part) {
                true => Ok(()),
                false => Err(Error::reference(format!(
                    "AssertionError: {name} is {shape:?}: the merged FFN tensor must be 2 × {part} rows"
                ))),
            }
        };
        if name.ends_with("block_sparse_moe.experts.gate_up_proj")
            || name.ends_with("block_sparse_moe.input_linear.weight")
        {
            fused(hp.int(&["intermediate_size"])?)?;
            return gguf(Tensor::FFN_GATE_UP_EXP);
        }
        if name.ends_with("block_sparse_moe.experts.down_proj") {
            return gguf(Tensor::FFN_DOWN_EXP);
        }
        if name.ends_with("shared_mlp.input_linear.weight") {
            let part = match hp.map.get("shared_intermediate_size") {
                Some(_) => hp.int(&["shared_intermediate_size"])?,
                None => hp.int(&["intermediate_size"])?,
            };
            fused(part)?;
            return gguf(Tensor::FFN_UP_SHEXP);
        }
        if name.ends_with("shared_mlp.output_linear.weight") {
            return gguf(Tensor::FFN_DOWN_SHEXP);
        }
        GraniteSwa.modify_tensors(cx, name, shape)
    }

    /// None stored one by one (Mixtral's, which Llama has, are not Granite's).
    fn experts(&self) -> Option<Experts> {
        None
    }
}

/// `GraniteHybridModel(Mamba2Model, GraniteMoeModel)`: `GraniteMoeHybridForCausalLM` (Granite
/// 4) and `BambaForCausalLM`. Mamba-2 layers beside Granite's attention layers (q and k
/// permuted), with or without experts; its config read as written, the Mamba keys also found
/// under a `mamba_` prefix. Without any Mamba layer it is written as Granite (MoE).
pub(crate) struct GraniteHybrid;

/// `find_hparam(keys)` with the `mamba_`-prefixed keys tried after the plain ones.
pub(crate) fn prefixed<'a>(hp: &'a Hparams, keys: &[&str]) -> Option<(String, &'a Value)> {
    let all = keys
        .iter()
        .map(|k| (*k).to_owned())
        .chain(keys.iter().map(|k| format!("mamba_{k}")));
    all.into_iter()
        .find_map(|k| hp.map.get(&k).map(|v| (k.clone(), v)))
}

/// [`prefixed`]'s value as a count; the reference's error where none is present.
pub(crate) fn prefixed_int(hp: &Hparams, keys: &[&str]) -> Result<u64> {
    match prefixed(hp, keys) {
        Some((k, v)) => Ok(u64::from(base::u32_of(hp, &k, v)?)),
        None => Err(Error::field(&hp.path, keys[0], "missing")),
    }
}

/// `get_attn_layers`: `layer_types`' "attention" entries, else `attn_layer_indices`, else
/// every `attn_layer_period`-th layer from `attn_layer_offset`.
fn attn_layers(hp: &Hparams, blocks: u64) -> Result<Vec<u64>> {
    if let Some(Value::Array(types)) = hp
        .map
        .get("layer_types")
        .filter(|v| crate::vocab::truthy(v))
    {
        return Ok((0..)
            .zip(types)
            .filter(|(_, t)| t.as_str() == Some("attention"))
            .map(|(i, _)| i)
            .collect());
    }
    if let Some(Value::Array(ids)) = hp
        .map
        .get("attn_layer_indices")
        .filter(|v| crate::vocab::truthy(v))
    {
        return ids
            .iter()
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    Error::field(&hp.path, "attn_layer_indices", "not layer numbers")
                })
            })
            .collect();
    }
    let period = hp
        .opt_int(&["attn_layer_period"])?
        .filter(|&p| p != 0)
        .ok_or_else(|| {
            Error::reference("AssertionError: Didn't find attn_layer_indices or attn_layer_period")
        })?;
    let offset = hp.opt_int(&["attn_layer_offset"])?.ok_or_else(|| {
        Error::reference("AssertionError: No attention layer offset set with attn_layer_period")
    })?;
    Ok((0..blocks).filter(|i| i % period == offset).collect())
}

/// `__init__`'s Mamba widths: the inner width (`expand` × the model's) and the groups.
fn hybrid_widths(hp: &Hparams) -> Result<(u64, u64)> {
    let d_model = prefixed_int(hp, &["mamba_head_dim", "hidden_size", "d_model"])?;
    let groups = prefixed_int(hp, &["n_groups", "num_groups"])?;
    let d_inner = prefixed_int(hp, &["expand", "num_heads"])? * d_model;
    Ok((d_inner, groups))
}

/// A hybrid's layers and Mamba widths, as `__init__` leaves them: which layers attend,
/// which are Mamba layers, the inner width and the groups.
pub(crate) struct Layout {
    pub attn: Vec<u64>,
    pub ssm: Vec<u64>,
    pub d_inner: u64,
    pub groups: u64,
}

impl Layout {
    /// `GraniteHybridModel.__init__`'s: every layer that does not attend is a Mamba layer.
    fn granite(hp: &Hparams, blocks: u64) -> Result<Layout> {
        let attn = attn_layers(hp, blocks)?;
        let ssm = (0..blocks).filter(|i| !attn.contains(i)).collect();
        let (d_inner, groups) = hybrid_widths(hp)?;
        Ok(Layout {
            attn,
            ssm,
            d_inner,
            groups,
        })
    }
}

/// `GraniteHybridModel.set_gguf_parameters` for `layout`: Granite MoE's keys, then the Mamba
/// layers', kv heads only in the attention layers, and RoPE only for Bamba (or without Mamba
/// layers; else an arbitrary context length).
pub(crate) fn hybrid_keys(cx: &Ctx, kv: &mut Kv, layout: &Layout) -> Result<()> {
    GraniteMoe.set_gguf_parameters(cx, kv)?;
    let hp = cx.hp();
    let k = |s: &str| cx.key(s);
    kv.u32(
        &k("ssm.conv_kernel"),
        prefixed_int(hp, &["conv_kernel", "d_conv"])? as u32,
    );
    let state = ["state_size", "d_state", "state_dim", "ssm_state_size"];
    kv.u32(&k("ssm.state_size"), prefixed_int(hp, &state)? as u32);
    kv.u32(&k("ssm.group_count"), layout.groups as u32);
    kv.u32(&k("ssm.inner_size"), layout.d_inner as u32);
    kv.u32(
        &k("ssm.time_step_rank"),
        prefixed_int(hp, &["n_heads", "num_heads"])? as u32,
    );
    let n_kv = prefixed_int(hp, &["num_key_value_heads", "n_head_kv"])?;
    let heads: Vec<i32> = (0..cx.block_count)
        .map(|i| {
            if layout.attn.contains(&i) {
                n_kv as i32
            } else {
                0
            }
        })
        .collect();
    if let Some(dim) = hp.opt_int(&["attn_rotary_emb"])?.filter(|&d| d != 0) {
        kv.u32(&k("rope.dimension_count"), dim as u32);
    }
    kv.i32s(&k("attention.head_count_kv"), heads);
    let bamba = hp
        .map
        .get("architectures")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|c| c.as_str() == Some("BambaForCausalLM")));
    let rope = bamba || layout.ssm.is_empty();
    kv.bool(&k("rope.scaling.finetuned"), rope);
    if !rope {
        kv.u32(&k("context_length"), 1 << 20);
    }
    let d_head = match prefixed(hp, &["d_head"]) {
        None | Some((_, Value::Null)) => 64,
        Some((key, v)) => Some(u64::from(base::u32_of(hp, &key, v)?))
            .filter(|&d| d != 0)
            .unwrap_or(64),
    };
    if !matches!(hp.map.get("hidden_act"), None | Some(Value::Null))
        && hp.map.get("hidden_act").and_then(Value::as_str) != Some("silu")
    {
        return Err(Error::reference(
            "AssertionError: Only SILU activation supported",
        ));
    }
    if layout.d_inner % d_head != 0 {
        return Err(Error::reference(format!(
            "AssertionError: SSM inner size {} not a multiple of head dim {d_head}",
            layout.d_inner
        )));
    }
    Ok(())
}

/// `GraniteHybridModel.modify_tensors` for `layout`: the fused experts and shared expert as
/// Granite MoE's; a Mamba layer's tensors as Mamba-2's, an attention layer's as Granite
/// MoE's, the rest unchanged.
pub(crate) fn hybrid_tensor(cx: &Ctx, name: &str, shape: &[u64], layout: &Layout) -> Yields {
    if name.ends_with("block_sparse_moe.input_linear.weight") || name.contains("shared_mlp") {
        return GraniteMoe.modify_tensors(cx, name, shape);
    }
    let Some(bid) = base::block_of(name) else {
        return base::yield_as(name, Rearrange::default());
    };
    if layout.ssm.contains(&bid) {
        return super::mamba::mamba2_tensor(cx, name, shape, layout.d_inner, layout.groups);
    }
    if layout.attn.contains(&bid) {
        return GraniteMoe.modify_tensors(cx, name, shape);
    }
    base::yield_as(name, Rearrange::default())
}

/// `GraniteHybridModel.set_vocab`: Mamba-2's, the vocabulary padded to a multiple of 8 (of 1
/// without Mamba layers).
pub(crate) fn hybrid_vocab(cx: &Ctx, kv: &mut Kv, layout: &Layout) -> Result<()> {
    let mut hp = cx.hp().clone();
    let multiple = if layout.ssm.is_empty() { 1 } else { 8 };
    hp.map
        .insert("pad_vocab_size_multiple".into(), multiple.into());
    super::mamba::padded_vocab(&cx.with_hparams(&hp), kv, 16, false)
}

impl TextModel for GraniteHybrid {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&GraniteMoe)
    }

    /// Granite (MoE) where no layer is a Mamba layer.
    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        let blocks = hp.int(&["num_hidden_layers"]).unwrap_or(0);
        match Layout::granite(hp, blocks) {
            Ok(l) if l.ssm.is_empty() => {
                let experts = prefixed(hp, &["num_experts_per_tok", "num_experts_per_token"])
                    .is_some_and(|(_, v)| crate::vocab::truthy(v));
                match experts {
                    true => &tables::GRANITE_MOE,
                    false => &tables::GRANITE,
                }
            }
            _ => line,
        }
    }

    /// Mamba-2's renames, then Granite's filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        GraniteMoe.filter_tensors(cx, &super::mamba::mamba2_name(name))
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        hybrid_vocab(cx, kv, &Layout::granite(cx.hp(), cx.block_count)?)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        hybrid_keys(cx, kv, &Layout::granite(cx.hp(), cx.block_count)?)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        hybrid_tensor(cx, name, shape, &Layout::granite(cx.hp(), cx.block_count)?)
    }
}

/// `GraniteSpeechMmprojModel`: Granite Speech's projector (a conformer encoder, its batch
/// norms folded into a scale and a shift, and a Q-Former over windows of its frames).
pub(crate) struct GraniteSpeech;

/// The parts of a conformer block's batch norm, in the group's order.
const BATCH_NORM: [&str; 4] = ["weight", "bias", "running_mean", "running_var"];

/// A batch norm's `weight / sqrt(running_var + 1e-5)` and `bias - running_mean · that`, in
/// f32 arithmetic: the reference widens every type but F16 to F32 before `modify_tensors`
/// (an F16 norm, folded in F16's, is not converted yet).
fn fold_batch_norm(
    into: &str,
    dtype: crate::safetensors::Dtype,
    parts: &[Vec<f32>],
) -> Result<Vec<(String, Vec<f32>)>> {
    if dtype == crate::safetensors::Dtype::F16 {
        return Err(Error::not_yet(format!(
            "{into}: a batch norm stored as F16 (folded in F16 arithmetic by the reference)"
        )));
    }
    let [w, b, mean, var] = parts else {
        return Err(Error::reference(format!("{into}: not its four tensors")));
    };
    let scale: Vec<f32> = w
        .iter()
        .zip(var)
        .map(|(w, v)| w / (v + 1e-5).sqrt())
        .collect();
    let shift = b
        .iter()
        .zip(mean)
        .zip(&scale)
        .map(|((b, m), a)| b - m * a)
        .collect();
    Ok(vec![
        (format!("{into}.weight"), scale),
        (format!("{into}.bias"), shift),
    ])
}

impl TextModel for GraniteSpeech {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::AUDIO)
    }

    /// The encoder's config (`encoder_config`) as the audio hparams, its fields under the
    /// names the keys read.
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        let g = mmproj::global_config(hp);
        let Some(Value::Object(m)) = g.get("encoder_config") else {
            return;
        };
        let mut m = m.clone();
        let int = |m: &serde_json::Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
        if let (Some(h), Some(f)) = (int(&m, "hidden_dim"), int(&m, "feedforward_mult")) {
            m.insert("intermediate_size".into(), (h * f).into());
        }
        mmproj::rename(&mut m, "hidden_size", "hidden_dim");
        mmproj::rename(&mut m, "num_attention_heads", "num_heads");
        mmproj::rename(&mut m, "num_hidden_layers", "num_layers");
        hp.map = m;
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        mmproj::n_embd_text(hp)?;
        if !hp.raw.get("encoder_config").is_some_and(Value::is_object) {
            return Err(Error::reference(
                "ValueError: vision_config / audio_config not found in hparams",
            ));
        }
        hp.int(&mmproj::N_BLOCK_KEYS)
    }

    /// The encoder's sizes, then the conformer's and the projector's.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::AUDIO.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "granite_speech");
        let int = |key: &str| base::int32(hp, &[key]);
        kv.u32("clip.audio.num_mel_bins", int("input_dim")?);
        kv.f32("clip.audio.attention.layer_norm_epsilon", 1e-5);
        kv.u32("clip.audio.chunk_size", int("context_size")?);
        kv.u32("clip.audio.conv_kernel_size", int("conv_kernel_size")?);
        kv.u32("clip.audio.max_pos_emb", int("max_pos_emb")?);
        let global = |key: &str| -> Result<u32> {
            let v = hp
                .raw
                .get(key)
                .ok_or_else(|| Error::field(&hp.path, key, "missing (KeyError)"))?;
            base::u32_of(hp, key, v)
        };
        kv.u32("clip.audio.projector.window_size", global("window_size")?);
        kv.u32(
            "clip.audio.projector.downsample_rate",
            global("downsample_rate")?,
        );
        let heads = hp
            .raw
            .get("projector_config")
            .and_then(|p| p.get("num_attention_heads"))
            .ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "projector_config.num_attention_heads",
                    "missing (KeyError)",
                )
            })?;
        kv.u32(
            "clip.audio.projector.head_count",
            base::u32_of(hp, "projector_config.num_attention_heads", heads)?,
        );
        Ok(())
    }

    /// The encoder's and projector's convolutions F32.
    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<base::Force> {
        if (name.contains("encoder") || name.contains("projector"))
            && name.contains(".conv")
            && name.contains(".weight")
        {
            return Some(base::Force::Type(ggufrw::quant::GgmlType::F32));
        }
        mmproj::AUDIO.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.contains("attention_dists") || name.contains("num_batches_tracked") {
            return None;
        }
        mmproj::AUDIO.filter_tensors(cx, name)
    }

    /// A conformer block's batch norm, held until its four tensors are in, then folded.
    fn gather(&self, _cx: &Ctx, name: &str) -> Option<base::Gather> {
        if !name.contains("batch_norm") || !name.contains("encoder.layers.") {
            return None;
        }
        let bid = base::block_of(name)?;
        let into = format!("encoder.layers.{bid}.conv.batch_norm");
        let part = BATCH_NORM
            .iter()
            .position(|p| name == format!("{into}.{p}"))?;
        Some(base::Gather {
            into,
            part,
            named: false,
            of: BATCH_NORM.len(),
            stack: false,
            fold: Some(fold_batch_norm),
        })
    }

    /// `to_kv` cut into `to_k` and `to_v`; the pointwise convolutions' and the depthwise
    /// one's axis of 1 dropped.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.contains(".attn.to_kv.weight") {
            let parts = ["to_k", "to_v"].map(|p| name.replace("to_kv", p));
            return base::equal_parts(name, shape, &parts);
        }
        let mut change = Rearrange::default();
        let pointwise = name.contains("up_conv") || name.contains("down_conv");
        match shape {
            [a, b, 1] if pointwise && name.ends_with(".weight") => {
                change.reshape = Some(([*a, *b, 0, 0], 2));
            }
            [a, 1, c] if name.contains("depth_conv") && name.ends_with(".weight") => {
                change.reshape = Some(([*a, *c, 0, 0], 2));
            }
            _ => {}
        }
        base::yield_as(name, change)
    }
}

/// `GraniteSpeechPlusMmprojModel(GraniteSpeechMmprojModel)`: Granite Speech with the
/// encoder's hidden layers `cat_hidden_layers` joined to its output before the projector.
pub(crate) struct GraniteSpeechPlus;

impl TextModel for GraniteSpeechPlus {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&GraniteSpeech)
    }

    /// Granite Speech's keys, then the joined layers, whose width the projector's
    /// `encoder_hidden_size` must be.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        GraniteSpeech.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let field = "encoder_config.cat_hidden_layers";
        let layers = match hp.map.get("cat_hidden_layers") {
            None | Some(Value::Null) => return Ok(()),
            Some(v) => v
                .as_array()
                .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<i64>>>())
                .ok_or_else(|| Error::field(&hp.path, field, "not a list of layers"))?,
        };
        if layers.is_empty() {
            return Ok(());
        }
        kv.i32s(
            "clip.audio.feature_layer",
            layers.iter().map(|&l| l as i32).collect(),
        );
        let expected = hp.int(&["hidden_dim"])? * (layers.len() as u64 + 1);
        let projector = hp
            .raw
            .get("projector_config")
            .and_then(|p| p.get("encoder_hidden_size"))
            .and_then(Value::as_u64);
        if projector != Some(expected) {
            return Err(Error::reference(format!(
                "ValueError: Projector encoder_hidden_size ({}) does not match expected \
                 concatenated dimension ({expected}): hidden_dim × (len(cat_hidden_layers) + 1)",
                projector.map_or("missing".to_owned(), |p| p.to_string())
            )));
        }
        Ok(())
    }
}
