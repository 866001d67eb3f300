//! `conversion/ultravox.py`'s projectors: Whisper's encoder as Qwen2-Audio, Voxtral and
//! Audio Flamingo 3 carry it.

use super::base::{self, Ctx, Force, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::config::Hparams;
use crate::error::Result;
use crate::kv::Kv;
use ggufrw::quant::GgmlType;

/// `WhisperEncoderModel`: Qwen2-Audio's projector (Whisper's encoder, its convolutions' biases
/// as columns, the projector's names kept apart from a vision one's).
pub(crate) struct WhisperEncoder;

impl TextModel for WhisperEncoder {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::AUDIO)
    }

    /// Whisper's config names its widths `d_model` and `encoder_ffn_dim`.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::AUDIO.init_hparams(class, hp);
        let m = &mut hp.map;
        if !m.contains_key("hidden_size") && !m.contains_key("intermediate_size") {
            mmproj::rename(m, "hidden_size", "d_model");
            mmproj::rename(m, "intermediate_size", "encoder_ffn_dim");
            mmproj::rename(m, "num_attention_heads", "encoder_attention_heads");
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::AUDIO.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "qwen2a");
        let bins = hp.int(&["num_mel_bins"])?;
        kv.u32(
            "clip.audio.num_mel_bins",
            base::count32(hp, "num_mel_bins", bins)?,
        );
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.audio.attention.layer_norm_epsilon", eps);
        Ok(())
    }

    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        if name.contains(".conv") && name.contains(".weight") {
            return Some(Force::Type(GgmlType::F16));
        }
        mmproj::AUDIO.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match name.starts_with("multi_modal_projector") {
            true => mmproj::AUDIO.filter_tensors(cx, &format!("audio.{name}")),
            false => mmproj::AUDIO.filter_tensors(cx, name),
        }
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let change = Rearrange {
            unsqueeze: name.contains("conv1.bias") || name.contains("conv2.bias"),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}

/// `VoxtralWhisperEncoderModel`.
pub(crate) struct Voxtral;

impl TextModel for Voxtral {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&WhisperEncoder)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        WhisperEncoder.set_gguf_parameters(cx, kv)?;
        kv.string("clip.projector_type", "voxtral");
        // intermediate_size // hidden_size
        kv.u32("clip.audio.projector.stack_factor", 4);
        Ok(())
    }
}

/// `AudioFlamingo3WhisperEncoderModel`.
pub(crate) struct AudioFlamingo3;

impl TextModel for AudioFlamingo3 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&WhisperEncoder)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        WhisperEncoder.set_gguf_parameters(cx, kv)?;
        kv.string("clip.projector_type", "musicflamingo");
        Ok(())
    }

    /// Its convolutions were trained in BF16: F32, not F16.
    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        if name.contains(".conv") && name.contains(".weight") {
            return Some(Force::Type(GgmlType::F32));
        }
        WhisperEncoder.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }
}

/// `UltravoxWhisperEncoderModel`: Ultravox's projector (Whisper's encoder, frames stacked
/// `stack_factor` at a time into a SwiGLU projector).
pub(crate) struct Ultravox;

impl TextModel for Ultravox {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&WhisperEncoder)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        WhisperEncoder.set_gguf_parameters(cx, kv)?;
        kv.string("clip.projector_type", "ultravox");
        stack_factor(cx, kv, "stack_factor", None)
    }
}

/// `add_audio_stack_factor(global_config[key])` (or `.get(key, default)`).
fn stack_factor(cx: &Ctx, kv: &mut Kv, key: &str, default: Option<u64>) -> Result<()> {
    let hp = cx.hp();
    let g = mmproj::global_config(hp);
    let n = match (g.get(key), default) {
        (Some(v), _) => base::u32_of(hp, key, v)?,
        (None, Some(d)) => d as u32,
        (None, None) => {
            return Err(crate::error::Error::reference(format!(
                "KeyError: '{key}' ({})",
                hp.path.display()
            )))
        }
    };
    kv.u32("clip.audio.projector.stack_factor", n);
    Ok(())
}

/// `MERaLiONWhisperEncoderModel`: MERaLiON 2's projector (Whisper's encoder under
/// `speech_encoder.`, its config `speech_config`; the speech adapter's four projections and
/// the norm before them named as the reference names them, its other tensors left out; the
/// text decoder left out).
pub(crate) struct Meralion;

impl TextModel for Meralion {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&WhisperEncoder)
    }

    /// `get_audio_config()` is `speech_config`.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        match hp.raw.get("speech_config").cloned() {
            Some(speech) => hp.raw.insert("audio_config".into(), speech),
            None => hp.raw.remove("audio_config"),
        };
        hp.raw.remove("whisper_config");
        WhisperEncoder.init_hparams(class, hp);
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        WhisperEncoder.set_gguf_parameters(cx, kv)?;
        kv.string("clip.projector_type", "meralion");
        stack_factor(cx, kv, "speech_mlp_scale_factor", Some(15))
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("text_decoder.") {
            return None;
        }
        match name.strip_prefix("speech_encoder.") {
            Some(rest) => WhisperEncoder.filter_tensors(cx, &format!("audio_tower.{rest}")),
            None => WhisperEncoder.filter_tensors(cx, name),
        }
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let suffix = name.rsplit('.').next().unwrap_or("");
        let named = |gguf: String| {
            let change = Rearrange {
                named: true,
                ..Rearrange::default()
            };
            base::yield_as(&format!("{gguf}.{suffix}"), change)
        };
        if name.starts_with("ln_speech.") {
            return named("mm.a.norm_pre".into());
        }
        if name.starts_with("speech_audio_adapter.") {
            let parts = [
                ".mlp_adapter.0.",
                ".gate_proj.",
                ".pool_proj.",
                ".out_proj.",
            ];
            return match parts.iter().position(|p| name.contains(p)) {
                Some(i) => named(format!("mm.a.mlp.{i}")),
                None => Ok(Vec::new()),
            };
        }
        WhisperEncoder.modify_tensors(cx, name, shape)
    }
}
