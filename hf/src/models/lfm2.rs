//! `conversion/lfm2.py`: Liquid's LFM2 (short convolutions beside attention) and its mixture.

use super::base::{self, Ctx, Experts, ExtraFileTensor, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `LFM2Model`: `Lfm2ForCausalLM`, `LFM2ForCausalLM`. `TextModel`'s keys with kv heads only
/// where a layer attends, the convolution's cache length and the feed-forward width as the
/// block computes it; the convolutions squeezed to 2-D.
pub(crate) struct Lfm2;

/// `num_key_value_heads` per layer: the config's where `attends(layer_type)`, else 0.
fn kv_heads_per_layer(hp: &Hparams, attends: fn(&str) -> bool) -> Result<Hparams> {
    let mut hp = hp.clone();
    let n = hp.int(&["num_key_value_heads"])?;
    let types = match hp.map.get("layer_types") {
        Some(Value::Array(t)) => t.clone(),
        _ => {
            return Err(Error::field(
                &hp.path,
                "layer_types",
                "missing or not a list",
            ))
        }
    };
    let heads: Vec<Value> = types
        .iter()
        .map(|t| match t.as_str() {
            Some(t) if attends(t) => n.into(),
            Some(_) => 0.into(),
            None => Value::Null,
        })
        .collect();
    if heads.iter().any(Value::is_null) {
        return Err(Error::field(
            &hp.path,
            "layer_types",
            "not a list of strings",
        ));
    }
    hp.map
        .insert("num_key_value_heads".into(), Value::Array(heads));
    Ok(hp)
}

/// `ConformerAudioModel.is_audio_tensor`: the audio model's tensors (LFM2-Audio).
fn is_audio_tensor(name: &str) -> bool {
    [
        "audio",
        "codebook",
        "conformer",
        "depth_embedding",
        "depthformer",
        "depth_linear",
    ]
    .iter()
    .any(|p| name.contains(p))
}

/// `_add_feed_forward_length`: `block_ff_dim` (or `intermediate_size`), cut to two thirds,
/// scaled and rounded up to `block_multiple_of` where `block_auto_adjust_ff_dim` asks.
fn feed_forward_length(hp: &Hparams) -> Result<u64> {
    let mut ff = hp.int(&["block_ff_dim", "intermediate_size"])?;
    let auto = hp
        .map
        .get("block_auto_adjust_ff_dim")
        .ok_or_else(|| Error::field(&hp.path, "block_auto_adjust_ff_dim", "missing"))?;
    let multiplier = hp
        .map
        .get("block_ffn_dim_multiplier")
        .ok_or_else(|| Error::field(&hp.path, "block_ffn_dim_multiplier", "missing"))?;
    let multiple = hp.int(&["block_multiple_of"])?;
    if crate::vocab::truthy(auto) {
        ff = (2 * ff) / 3;
        if !multiplier.is_null() {
            let m = multiplier.as_f64().ok_or_else(|| {
                Error::field(&hp.path, "block_ffn_dim_multiplier", "not a number")
            })?;
            // `int(m * ff)`: the product in doubles, truncated
            ff = (m * ff as f64).trunc() as u64;
        }
        if multiple == 0 {
            return Err(Error::field(&hp.path, "block_multiple_of", "is 0"));
        }
        ff = multiple * ff.div_ceil(multiple);
    }
    Ok(ff)
}

/// The convolutions' `[channels, 1, kernel]` weights as `[channels, kernel]`.
fn squeezed(name: &str) -> Yields {
    let change = Rearrange {
        squeeze: name.contains("conv.conv"),
        ..Rearrange::default()
    };
    base::yield_as(name, change)
}

impl TextModel for Lfm2 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = kv_heads_per_layer(cx.hp(), |t| t != "conv")?;
        let cx = cx.with_hparams(&hp);
        base::set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&k("shortconv.l_cache"), hp.int(&["conv_L_cache"])? as u32);
        kv.f32(
            &k("attention.layer_norm_rms_epsilon"),
            hp.float(&["norm_eps"])?,
        );
        kv.u32(&k("feed_forward_length"), feed_forward_length(&hp)? as u32);
        Ok(())
    }

    /// The audio model's tensors dropped; LFM2-Audio's `lfm.` read as `model.`.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if is_audio_tensor(name) {
            return None;
        }
        base::filter_tensors(&name.replace("lfm.", "model."))
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        squeezed(name)
    }
}

/// `LFM2MoeModel`: `Lfm2MoeForCausalLM`. LFM2's layers with sigmoid-routed experts (and their
/// routing bias) past the dense leading layers.
pub(crate) struct Lfm2Moe;

impl TextModel for Lfm2Moe {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = kv_heads_per_layer(cx.hp(), |t| t == "full_attention")?;
        let cx = cx.with_hparams(&hp);
        base::set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        for (key, gguf) in [
            ("moe_intermediate_size", "expert_feed_forward_length"),
            ("num_dense_layers", "leading_dense_block_count"),
        ] {
            kv.u32(&k(gguf), hp.int(&[key])? as u32);
        }
        kv.u32(&k("expert_gating_func"), 2);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&k("shortconv.l_cache"), hp.int(&["conv_L_cache"])? as u32);
        Ok(())
    }

    /// The routing bias named as a bias.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        match name.strip_suffix(".expert_bias") {
            Some(stem) => base::filter_tensors(&format!("{stem}.expert_bias.bias")),
            None => base::filter_tensors(name),
        }
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        squeezed(name)
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_local_experts", "num_experts"],
            marker: "experts",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.feed_forward.experts.{xid}.{w}.weight",
            merged: "layers.{bid}.feed_forward.experts.{w}.weight",
            weights: &["w1", "w2", "w3"],
        })
    }
}

/// `LFM2ColBertModel(LFM2Model)`: `Lfm2Model`, `Lfm2BidirectionalModel` (LFM2's embedding and
/// ColBERT models). The bare model's names given `model.`, its pooling, for the bidirectional
/// class no causal attention, and sentence-transformers' `1_Dense` projection where the folder
/// has one: `dense_2.weight`, first in the file, its output width a key.
pub(crate) struct Lfm2ColBert;

/// The `1_Dense` module's weights and the tensor the reference takes from them.
const DENSE: (&str, &str) = ("1_Dense/model.safetensors", "linear.weight");

impl TextModel for Lfm2ColBert {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Lfm2)
    }

    /// The projection, its output width written as `add_embedding_length_out` when loaded.
    fn extra_file_tensor(&self, dir: &crate::model_dir::ModelDir) -> Option<ExtraFileTensor> {
        Some(ExtraFileTensor {
            path: dir.path.join(DENSE.0),
            from: DENSE.1,
            into: "dense_2.weight",
            width_key: Some("embedding_length_out"),
        })
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Lfm2.set_gguf_parameters(cx, kv)?;
        if cx.class == "Lfm2BidirectionalModel" {
            kv.bool(&cx.key("attention.causal"), false);
        }
        base::pooling(cx, kv)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let name = match name.starts_with("dense_2") {
            true => name.to_owned(),
            false => format!("model.{name}"),
        };
        Lfm2.modify_tensors(cx, &name, shape)
    }
}

/// `LFM2VLModel`: LFM2-VL's projector (SigLIP 2's NaFlex tower, whose patch embedding is a
/// linear layer over 16×16 HWC patches, written as the Conv2D it stands for; the blocks
/// `vision_feature_layer` drops left out of the count).
pub(crate) struct Lfm2Vl;

impl TextModel for Lfm2Vl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&super::mmproj::VISION)
    }

    /// A dynamic resolution's tower has no image size: the reference's.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        super::mmproj::VISION.init_hparams(class, hp);
        hp.map.insert("image_size".into(), 256.into());
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        super::mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "lfm2");
        kv.f32(
            "clip.vision.attention.layer_norm_epsilon",
            hp.float(&["layer_norm_eps"])?,
        );
        let factor = match hp.raw.get("downsample_factor") {
            Some(v) => base::u32_of(hp, "downsample_factor", v)?,
            None => 2,
        };
        kv.u32("clip.vision.projector.scale_factor", factor);
        kv.bool("clip.use_gelu", true);
        // Python's index: -1 keeps every block, -2 drops the last
        let layer = match hp.raw.get("vision_feature_layer") {
            Some(v) => v.as_i64().ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "vision_feature_layer",
                    format!("{v} is not a layer"),
                )
            })?,
            None => -1,
        };
        let blocks = hp.int(&["num_hidden_layers", "depth", "num_layers"])? as i64;
        let kept = blocks + layer + 1;
        let kept = u32::try_from(kept).map_err(|_| {
            Error::field(
                &hp.path,
                "vision_feature_layer",
                format!("{layer} drops more than the {blocks} blocks"),
            )
        })?;
        kv.u32("clip.vision.block_count", kept);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = name
            .replace("model.vision_tower.", "vision_tower.")
            .replace("model.multi_modal_projector.", "multi_modal_projector.");
        super::mmproj::VISION.filter_tensors(cx, &super::mmproj::siglip_tower(&name))
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.contains("patch_embedding.weight") {
            // `view(n, 16, 16, 3).permute(0, 3, 1, 2)`
            let &[n, k] = shape else {
                return Err(Error::reference(format!(
                    "{name}: {shape:?} is not a matrix"
                )));
            };
            if k != 16 * 16 * 3 {
                return Err(Error::reference(format!(
                    "RuntimeError: {name}: {k} columns cannot be viewed as 16×16 patches of 3 channels"
                )));
            }
            let change = Rearrange {
                cols: base::Order::Swapped {
                    skip: 0,
                    outer: 256,
                    inner: 3,
                    block: 1,
                },
                reshape: Some(([n, 3, 16, 16], 4)),
                ..Rearrange::default()
            };
            return base::yield_as(name, change);
        }
        base::yield_as(name, Rearrange::default())
    }
}
