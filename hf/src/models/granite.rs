//! `conversion/granite.py` (the dense classes).

use super::base::{self, Ctx, TextModel};
use super::llama::Llama;
use crate::error::Result;
use crate::kv::Kv;

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
