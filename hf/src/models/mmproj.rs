//! `conversion/base.py`'s `MmprojModel`: the projector file (`--mmproj`, architecture
//! `clip`) of a vision or audio model, its encoder and the projection into the text model.
//! A projector class is a [`TextModel`] whose parent is [`VISION`] or [`AUDIO`] (or
//! [`BOTH`]): the trait's methods are the same Python methods, `MmprojModel`'s here.

use super::base::{self, Ctx, Force, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use ggufrw::quant::GgmlType;
use serde_json::{Map, Value};

/// `MmprojModel` with its encoders (`has_vision_encoder`, `has_audio_encoder`).
pub(crate) struct Mmproj {
    /// `has_vision_encoder`.
    pub vision: bool,
    /// `has_audio_encoder`.
    pub audio: bool,
}

/// A vision projector (`MmprojModel`'s defaults).
pub(crate) const VISION: Mmproj = Mmproj {
    vision: true,
    audio: false,
};

/// An audio projector.
pub(crate) const AUDIO: Mmproj = Mmproj {
    vision: false,
    audio: true,
};

/// A projector of both encoders.
pub(crate) const BOTH: Mmproj = Mmproj {
    vision: true,
    audio: true,
};

/// `MmprojModel.n_block_keys`.
pub(crate) const N_BLOCK_KEYS: [&str; 8] = [
    "n_layers",
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "depth",
    "layers",
    "encoder_layers",
    "vt_num_hidden_layers",
];

/// `self.global_config`: the config as loaded, with `text_config` and `audio_config`
/// present (empty where the config has none).
pub(crate) fn global_config(hp: &Hparams) -> Map<String, Value> {
    let mut g = hp.raw.clone();
    for k in ["text_config", "audio_config"] {
        g.entry(k).or_insert_with(|| Value::Object(Map::new()));
    }
    g
}

/// `get_vision_config()`.
fn vision_config(global: &Map<String, Value>) -> Option<&Value> {
    global.get("vision_config").filter(|v| !v.is_null())
}

/// `get_audio_config()`: `whisper_config` where the (loaded) config has one.
fn audio_config(global: &Map<String, Value>) -> Option<&Value> {
    let key = if global.contains_key("whisper_config") {
        "whisper_config"
    } else {
        "audio_config"
    };
    global.get(key).filter(|v| !v.is_null())
}

/// `self.n_embd_text`: the text model's width, `{**hparams, **text_config}`'s.
pub(crate) fn n_embd_text(hp: &Hparams) -> Result<u64> {
    let g = global_config(hp);
    let mut text = g.clone();
    if let Some(Value::Object(tc)) = g.get("text_config") {
        for (k, v) in tc {
            text.insert(k.clone(), v.clone());
        }
    }
    let n = match text.get("hidden_size") {
        Some(v) => v.as_u64(),
        None => text.get("n_embd").and_then(Value::as_u64),
    };
    match n {
        Some(n) if n > 0 => Ok(n),
        _ => Err(Error::reference(
            "AssertionError: n_embd not found in hparams",
        )),
    }
}

/// A truthy JSON value as Python's `or` sees it (an empty object is false).
fn truthy(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| match v {
        Value::Object(o) => !o.is_empty(),
        other => crate::vocab::truthy(other),
    })
}

impl Mmproj {
    /// `find_vparam(keys)`.
    fn vparam<'a>(hp: &'a Hparams, keys: &[&str]) -> Result<&'a Value> {
        hp.find(keys).ok_or_else(|| {
            Error::field(
                &hp.path,
                format!("vision_config.{}", keys.join("|")),
                "missing (KeyError: could not find any of them)",
            )
        })
    }
}

/// `find_vparam(keys)` as a count.
pub(crate) fn vparam_u32(hp: &Hparams, keys: &[&str]) -> Result<u32> {
    let v = Mmproj::vparam(hp, keys)?;
    base::u32_of(hp, keys[0], v)
}

impl TextModel for Mmproj {
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        // `self.hparams = self.hparams_vision or self.hparams_audio or self.hparams`
        let g = global_config(hp);
        let own = truthy(vision_config(&g))
            .or_else(|| truthy(audio_config(&g)))
            .cloned();
        if let Some(Value::Object(m)) = own {
            hp.map = m;
        }
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        n_embd_text(hp)?;
        let g = global_config(hp);
        if vision_config(&g).is_none() && audio_config(&g).is_none() {
            return Err(Error::reference(
                "ValueError: vision_config / audio_config not found in hparams",
            ));
        }
        if self.vision && self.audio {
            return Ok(128);
        }
        hp.int(&N_BLOCK_KEYS)
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        if name.contains("language_model.") {
            return None;
        }
        let mut name = name.to_owned();
        if name.ends_with("e_score_correction_bias") {
            name = name.replace("e_score_correction_bias", "e_score_correction.bias");
        }
        Some(name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        kv.u32("general.file_type", cx.file_type);
        if self.vision {
            kv.bool("clip.has_vision_encoder", true);
            kv.u32(
                "clip.vision.projection_dim",
                base::count32(hp, "hidden_size", n_embd_text(hp)?)?,
            );
            kv.u32("clip.vision.image_size", vparam_u32(hp, &["image_size"])?);
            kv.u32("clip.vision.patch_size", vparam_u32(hp, &["patch_size"])?);
            kv.u32(
                "clip.vision.embedding_length",
                vparam_u32(hp, &["hidden_size", "width", "vt_hidden_size"])?,
            );
            kv.u32(
                "clip.vision.feed_forward_length",
                vparam_u32(hp, &["intermediate_size", "vt_intermediate_size"])?,
            );
            kv.u32("clip.vision.block_count", vparam_u32(hp, &N_BLOCK_KEYS)?);
            kv.u32(
                "clip.vision.attention.head_count",
                vparam_u32(
                    hp,
                    &[
                        "num_attention_heads",
                        "num_heads",
                        "heads",
                        "vt_num_attention_heads",
                    ],
                )?,
            );
            let pre = preprocessor_config(cx)?;
            kv.f32s("clip.vision.image_mean", floats(&pre, "image_mean", cx)?);
            kv.f32s("clip.vision.image_std", floats(&pre, "image_std", cx)?);
        }
        if self.audio {
            // the audio config: the class's own hparams unless it has a vision tower too
            let audio;
            let ap = if self.vision {
                let g = global_config(hp);
                let Some(Value::Object(m)) = audio_config(&g) else {
                    return Err(Error::field(&hp.path, "audio_config", "missing"));
                };
                audio = Hparams {
                    map: m.clone(),
                    ..hp.clone()
                };
                &audio
            } else {
                hp
            };
            kv.bool("clip.has_audio_encoder", true);
            kv.u32(
                "clip.audio.projection_dim",
                base::count32(hp, "hidden_size", n_embd_text(hp)?)?,
            );
            let aparam = |keys: &[&str]| -> Result<u32> {
                let v = ap.find(keys).ok_or_else(|| {
                    Error::field(
                        &ap.path,
                        format!("audio_config.{}", keys.join("|")),
                        "missing (KeyError: could not find any of them)",
                    )
                })?;
                base::u32_of(ap, keys[0], v)
            };
            kv.u32("clip.audio.embedding_length", aparam(&["hidden_size"])?);
            kv.u32(
                "clip.audio.feed_forward_length",
                aparam(&["intermediate_size"])?,
            );
            kv.u32("clip.audio.block_count", aparam(&N_BLOCK_KEYS)?);
            kv.u32(
                "clip.audio.attention.head_count",
                aparam(&["num_attention_heads"])?,
            );
        }
        Ok(())
    }

    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        _name: &str,
        new_name: &str,
        _bid: Option<u64>,
        _n_dims: usize,
    ) -> Option<Force> {
        (new_name.contains(".patch_embd.weight") || new_name.contains(".patch_merger.weight"))
            .then(|| f16_or_f32(cx))
    }

    fn set_vocab(&self, _cx: &Ctx, _kv: &mut Kv) -> Result<()> {
        Ok(())
    }
}

/// F16 where the outtype is F16, else F32: the type the projectors force their convolutions to.
pub(crate) fn f16_or_f32(cx: &Ctx) -> Force {
    Force::Type(match cx.file_type {
        1 => GgmlType::F16,
        _ => GgmlType::F32,
    })
}

/// A SigLIP tower's name as the Hub publishes it: transformers 5 saves `vision_tower.X` for
/// the published `vision_tower.vision_model.X` (Gemma 3, LFM2-VL), which the reference cannot
/// map; ggufrw reads both (beyond the reference), and the tests hold its output for the first
/// to the reference's for the second.
pub(crate) fn siglip_tower(name: &str) -> String {
    match name.strip_prefix("vision_tower.") {
        Some(rest) if !rest.starts_with("vision_model.") => {
            format!("vision_tower.vision_model.{rest}")
        }
        _ => name.to_owned(),
    }
}

/// `hparams[to] = hparams.get(from)`: a field copied under the name the keys read (null where
/// the config has none).
pub(crate) fn rename(m: &mut Map<String, Value>, to: &str, from: &str) {
    let v = m.get(from).cloned().unwrap_or(Value::Null);
    m.insert(to.into(), v);
}

/// `use_gelu` or `use_silu` for the tower's `hidden_act` (case aside), neither for another.
pub(crate) fn activation_key(hp: &Hparams, kv: &mut Kv) {
    let act = match hp.map.get("hidden_act") {
        Some(Value::String(s)) => s.to_lowercase(),
        _ => String::new(),
    };
    match act.as_str() {
        "gelu" => kv.bool("clip.use_gelu", true),
        "silu" => kv.bool("clip.use_silu", true),
        _ => {}
    }
}

/// The processor's pixel bounds (`min_pixels`, `max_pixels`) as the keys, which the family
/// requires; `int(...)` of a float where `truncate`.
pub(crate) fn pixel_bounds(cx: &Ctx, kv: &mut Kv, truncate: bool) -> Result<()> {
    let pre = preprocessor_config(cx)?;
    let path = cx.dir.file("preprocessor_config.json");
    for (key, field) in [
        ("clip.vision.image_min_pixels", "min_pixels"),
        ("clip.vision.image_max_pixels", "max_pixels"),
    ] {
        let v = pre
            .get(field)
            .ok_or_else(|| Error::field(&path, field, "missing (the reference's KeyError)"))?;
        let n = match (v.as_u64(), v.as_f64()) {
            (Some(n), _) => Some(n),
            (None, Some(f)) if truncate && f >= 0.0 => Some(f as u64),
            _ => None,
        };
        let n = n
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Error::field(&path, field, format!("{v} is not a pixel count")))?;
        kv.u32(key, n);
    }
    Ok(())
}

/// `n_wa_pattern` of evenly spaced full-attention blocks (`fullatt_block_indexes`), written
/// where there are any; `who` names the family in the reference's refusal.
pub(crate) fn window_pattern(hp: &Hparams, kv: &mut Kv, who: &str) -> Result<bool> {
    let full: Vec<u64> = match hp.map.get("fullatt_block_indexes") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_u64).collect(),
        _ => Vec::new(),
    };
    let Some(first) = full.first() else {
        return Ok(false);
    };
    let pattern = first + 1;
    if full
        .windows(2)
        .any(|w| w[1].checked_sub(w[0]) != Some(pattern))
    {
        return Err(Error::reference(format!(
            "ValueError: Invalid {who}fullatt_block_indexes: {full:?}"
        )));
    }
    kv.u32(
        "clip.vision.n_wa_pattern",
        base::count32(hp, "fullatt_block_indexes", pattern)?,
    );
    Ok(true)
}

/// A Conv3D patch embedding (`[c1, c2, 2, kh, kw]`) yielded as two Conv2Ds,
/// `v.patch_embd.weight` and `.weight.1`: `data_torch[:, :, t, ...]` for each temporal patch
/// `t`, read through a strided view.
pub(crate) fn conv3d_halves(name: &str, shape: &[u64], why: &str) -> Yields {
    let &[c1, c2, kt, kh, kw] = shape else {
        return Err(Error::reference(format!(
            "{name}: {shape:?} is not a Conv3D weight"
        )));
    };
    if kt != 2 {
        return Err(Error::reference(why.to_owned()));
    }
    let patch = base::extra_name(Tensor::V_ENC_EMBD_PATCH);
    let half = |t: u64| Rearrange {
        view: Some(View {
            offset: t * kh * kw,
            axes: [(c1 * c2, kt * kh * kw), (1, 0), (kh * kw, 1)],
            three: false,
        }),
        reshape: Some(([c1, c2, kh, kw], 4)),
        named: true,
        ..Rearrange::default()
    };
    Ok(vec![
        (patch.clone(), half(0)),
        (format!("{patch}.1"), half(1)),
    ])
}

/// A tensor yielded under its GGUF name (`yield (new_name, data_torch)`, or a name that
/// `map_tensor_name` maps to itself).
pub(crate) fn named(name: String) -> (String, Rearrange) {
    let change = Rearrange {
        named: true,
        ..Rearrange::default()
    };
    (name, change)
}

/// `self.preprocessor_config`: `preprocessor_config.json` (its `media_proc_cfg` lifted),
/// then `processor_config.json` (its `image_processor` lifted) over it.
pub(crate) fn preprocessor_config(cx: &Ctx) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for (file, nested) in [
        ("preprocessor_config.json", "media_proc_cfg"),
        ("processor_config.json", "image_processor"),
    ] {
        if let Some(v) = cx.dir.json(file)? {
            let Value::Object(cfg) = v.as_ref() else {
                return Err(Error::field(&cx.dir.file(file), "(root)", "not an object"));
            };
            let mut cfg = cfg.clone();
            if let Some(Value::Object(inner)) = cfg.get(nested).cloned() {
                cfg.extend(inner);
            }
            out.extend(cfg);
        }
    }
    Ok(out)
}

/// A list of numbers of the preprocessor config, as float32.
fn floats(pre: &Map<String, Value>, key: &str, cx: &Ctx) -> Result<Vec<f32>> {
    let path = cx.dir.file("preprocessor_config.json");
    let where_ = || path.as_path();
    let Some(v) = pre.get(key) else {
        return Err(Error::field(
            where_(),
            key,
            "missing (the reference's KeyError: no preprocessor_config.json or \
             processor_config.json gives it)",
        ));
    };
    let list = v
        .as_array()
        .ok_or_else(|| Error::field(where_(), key, format!("{v} is not a list")))?;
    list.iter()
        .map(|x| {
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| Error::field(where_(), key, format!("{x} is not a number")))
        })
        .collect()
}
