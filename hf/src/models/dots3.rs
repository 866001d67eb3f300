//! `conversion/dots3.py` (`Dots3NoteModel`: the text model of rednote's dots3-note).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use super::deepseek::{self, DeepseekV2};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `Dots3NoteModel(DeepseekV2Model)`: `Dots3NoteForCausalLM`, `Dots3NoteTextForCausalLM` and
/// the text half of `Dots3NoteForConditionalGeneration`. DeepSeek V3.2's latent attention,
/// indexer and experts, with a second latent geometry (`swa_*`) on the sliding-window layers
/// and on the prediction layer, which is kept and counted as a block where the checkpoint has
/// its embeddings (`model.mtp.embed_tokens`).
pub(crate) struct Dots3Note;

/// The prediction layer's own token embeddings, whose presence counts it.
const MTP_EMBED: &str = "model.mtp.embed_tokens.weight";

/// Whether block `bid` uses the sliding-window geometry: a layer `layer_types` marks so, and
/// the prediction layer past the trunk.
fn swa_layer(hp: &Hparams, bid: u64) -> Result<bool> {
    if bid >= hp.int(&["num_hidden_layers"])? {
        return Ok(true);
    }
    let types = layer_types(hp)?;
    Ok(types.get(bid as usize).and_then(Value::as_str) == Some("sliding_attention"))
}

fn layer_types(hp: &Hparams) -> Result<&Vec<Value>> {
    hp.map
        .get("layer_types")
        .ok_or_else(|| Error::reference("KeyError: 'layer_types'"))?
        .as_array()
        .ok_or_else(|| Error::field(&hp.path, "layer_types", "not a list"))
}

/// `__init__`'s checks: the one form of the model the converter reads (`ValueError` each).
fn check(hp: &Hparams) -> Result<()> {
    let refuse = |why: &str| Err(Error::reference(format!("ValueError: {why}")));
    let get = |key: &str| hp.map.get(key);
    let is_str = |key: &str, default: &str, want: &str| match get(key) {
        None => default == want,
        Some(v) => v.as_str() == Some(want),
    };
    if (layer_types(hp)?.len() as u64) < hp.int(&["num_hidden_layers"])? {
        return refuse("layer_types is shorter than num_hidden_layers");
    }
    if get("use_dsa").is_some_and(|v| v != &Value::Bool(true)) {
        return refuse("dots3-note conversion requires use_dsa=true");
    }
    if !is_str("normalization", "RMSNorm", "RMSNorm") || !is_str("final_norm", "RMSNorm", "RMSNorm")
    {
        return refuse("dots3-note conversion only supports RMSNorm");
    }
    if get("k_rope_only_layernorm").is_some_and(|v| v != &Value::Bool(true)) {
        return refuse("dots3-note conversion requires k_rope_only_layernorm=true");
    }
    let sigmoid = get("scoring_func").and_then(Value::as_str) == Some("sigmoid");
    if !is_str("topk_method", "noaux_tc", "noaux_tc") || !sigmoid {
        return refuse("dots3-note conversion only supports noaux_tc/sigmoid expert gating");
    }
    let one = |key: &str| get(key).is_none_or(|v| v.as_f64() == Some(1.0));
    if !one("n_group") || !one("topk_group") {
        return refuse("dots3-note conversion does not support grouped expert routing");
    }
    let truthy = |key: &str| get(key).is_some_and(crate::vocab::truthy);
    if truthy("use_dynamic_rsf") || truthy("moe_gating_fp32") {
        return refuse("dots3-note conversion does not support use_dynamic_rsf/moe_gating_fp32");
    }
    for key in ["attention_gate_type", "swa_attention_gate_type"] {
        if !is_str(key, "headwise", "headwise") {
            let v = get(key).map_or("None".into(), |v| format!("{v}"));
            return refuse(&format!(
                "dots3-note conversion only supports headwise attention gate, got {key}={v}"
            ));
        }
    }
    let nope = hp.int(&["swa_qk_nope_head_dim"])?;
    let rope = hp.int(&["swa_qk_rope_head_dim"])?;
    let head = match get("swa_head_dim") {
        None => 256,
        Some(_) => hp.int(&["swa_head_dim"])?,
    };
    if nope + rope != head {
        return refuse("swa_head_dim must equal swa_qk_nope_head_dim + swa_qk_rope_head_dim");
    }
    if rope != hp.int(&["qk_rope_head_dim"])? {
        return refuse("swa_qk_rope_head_dim must match qk_rope_head_dim");
    }
    Ok(())
}

impl TextModel for Dots3Note {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    /// The trunk, and the prediction layer where its embeddings are stored; the config is
    /// checked first.
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        check(hp)?;
        let mtp = names.iter().any(|n| n == MTP_EMBED);
        Ok(hp.int(&["num_hidden_layers"])? + u64::from(mtp))
    }

    /// DeepSeek V2's filter with the prediction layer kept, and the towers dropped.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        deepseek::filter(cx, name, false)
            .filter(|n| !n.starts_with("vision_encoder.") && !n.starts_with("audio_encoder."))
    }

    /// GPT-2's BPE with its merges, and eot `<|endofassistant|>` by its id among the added
    /// tokens.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        super::glm::gpt2_with_added_specials(cx, kv, &[("eot", "<|endofassistant|>")])
    }

    /// DeepSeek V2's keys with a head count per block (the sliding-window layers' own) and no
    /// `head_dim`, then the sliding-window layers' window, pattern and latent geometry, the
    /// prediction layer, and the indexer (its heads, width, top k and the layers it serves).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut hp = cx.hp().clone();
        let (full, swa) = (
            hp.int(&["num_attention_heads"])?,
            hp.int(&["swa_num_attention_heads"])?,
        );
        let heads = (0..cx.block_count)
            .map(|il| Ok(if swa_layer(&hp, il)? { swa } else { full }))
            .collect::<Result<Vec<u64>>>()?;
        hp.map.insert("num_attention_heads".into(), heads.into());
        hp.map.remove("head_dim");
        let cx = cx.with_hparams(&hp);
        DeepseekV2.set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        let n_layer = hp.int(&["num_hidden_layers"])?;
        let pattern = (0..n_layer)
            .map(|il| swa_layer(&hp, il))
            .collect::<Result<Vec<bool>>>()?;
        let rank = hp.int(&["swa_kv_lora_rank"])?;
        kv.u32(
            &k("attention.sliding_window"),
            base::int32(&hp, &["sliding_window_size"])?,
        );
        kv.bools(&k("attention.sliding_window_pattern"), pattern.clone());
        let rope = hp.int(&["swa_qk_rope_head_dim"])?;
        let nope = hp.int(&["swa_qk_nope_head_dim"])?;
        for (key, v) in [
            ("attention.kv_lora_rank_swa", rank),
            ("attention.key_length_swa", rank + rope),
            ("attention.value_length_swa", rank),
            ("attention.key_length_mla_swa", nope + rope),
            (
                "attention.value_length_mla_swa",
                hp.int(&["swa_v_head_dim"])?,
            ),
        ] {
            kv.u32(&k(key), base::count32(&hp, key, v)?);
        }
        if hp.int(&["swa_q_lora_rank"])? != hp.int(&["q_lora_rank"])? {
            return Err(Error::reference(
                "ValueError: dots3-note conversion assumes a shared q_lora_rank for both layer kinds",
            ));
        }
        if cx.block_count > n_layer {
            kv.u32(
                &k("nextn_predict_layers"),
                (cx.block_count - n_layer) as u32,
            );
        }
        deepseek::indexer_keys(&cx, kv)?;
        kv.bools(
            &k("attention.indexer.types"),
            pattern.iter().map(|s| !s).collect(),
        );
        Ok(())
    }

    /// The prediction layer's embeddings moved into its block; with
    /// `apply_mla_qkv_lora_rescale`, `sqrt(hidden_size / rank)` folded into the norms before
    /// the q and kv latents (each layer's own kv rank); `kv_b_proj` cut with its layer's
    /// heads and widths.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        if name == MTP_EMBED {
            let n = hp.int(&["num_hidden_layers"])?;
            return base::yield_as(
                &format!("model.layers.{n}.embed_tokens.weight"),
                Rearrange::default(),
            );
        }
        let Some(bid) = base::block_of(name) else {
            return DeepseekV2.modify_tensors(cx, name, shape);
        };
        let swa = swa_layer(hp, bid)?;
        let rescale = hp
            .map
            .get("apply_mla_qkv_lora_rescale")
            .is_some_and(crate::vocab::truthy);
        if rescale {
            let rank = if name.ends_with("q_a_layernorm.weight") {
                Some(hp.int(&["q_lora_rank"])?)
            } else if name.ends_with("kv_a_layernorm.weight") {
                Some(hp.int(&[if swa {
                    "swa_kv_lora_rank"
                } else {
                    "kv_lora_rank"
                }])?)
            } else {
                None
            };
            if let Some(rank) = rank {
                let h = hp.int(&["hidden_size"])?;
                let change = Rearrange {
                    scale: Some((h as f64 / rank as f64).sqrt() as f32),
                    ..Rearrange::default()
                };
                return base::yield_as(name, change);
            }
        }
        if !name.ends_with("kv_b_proj.weight") {
            return DeepseekV2.modify_tensors(cx, name, shape);
        }
        let field = |full: &'static str, sliding: &'static str| if swa { sliding } else { full };
        let heads_field = field("num_attention_heads", "swa_num_attention_heads");
        let heads = hp.int(&[heads_field])?;
        let geometry = (
            hp.int(&[field("qk_nope_head_dim", "swa_qk_nope_head_dim")])?,
            hp.int(&[field("v_head_dim", "swa_v_head_dim")])?,
        );
        deepseek::split_kv_b(name, shape, heads, geometry, heads_field)
    }
}
