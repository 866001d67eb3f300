//! `conversion/granite.py` (the dense classes and the mixtures of experts).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, View, Yields};
use super::llama::Llama;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;

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
