//! `conversion/qwen3vl.py`: the text halves of Qwen3-VL and its mixture (their vision towers
//! are the projector's, not converted here).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use super::mmproj;
use super::qwen::{self, Qwen2Moe, Qwen3};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names;
use crate::tables::Tensor;
use serde_json::Value;

/// `add_num_deepstack_layers(len(vision_config.get("deepstack_visual_indexes", [])))`, the
/// vision config an omni model's thinker's where it has one.
fn deepstack_layers(cx: &Ctx, kv: &mut Kv) {
    let hp = cx.hp();
    let vision = match hp.map.get("thinker_config") {
        Some(thinker) => thinker.get("vision_config"),
        None => hp.map.get("vision_config"),
    };
    let n = vision
        .and_then(|v| v.get("deepstack_visual_indexes"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    kv.u32(&cx.key("n_deepstack_layers"), n as u32);
}

/// An omni model's text half is its thinker's: `thinker.` is dropped from every name first.
fn unthinker(cx: &Ctx, parent: &dyn TextModel, name: &str) -> Option<String> {
    parent.filter_tensors(cx, &name.replace("thinker.", ""))
}

/// `Qwen3VLTextModel(Qwen3Model)`: `Qwen3VLForConditionalGeneration`'s text half.
pub(crate) struct Qwen3Vl;

impl TextModel for Qwen3Vl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        unthinker(cx, &Qwen3, name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3.set_gguf_parameters(cx, kv)?;
        deepstack_layers(cx, kv);
        Ok(())
    }
}

/// `Qwen3VLMoeTextModel(Qwen3MoeModel)`: `Qwen3VLMoeForConditionalGeneration`'s text half,
/// whose published checkpoints store the packed experts transposed (`gate_up_proj`
/// `[experts, hidden, 2·ffn]`, `down_proj` `[experts, ffn, hidden]`).
pub(crate) struct Qwen3VlMoe;

impl TextModel for Qwen3VlMoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2Moe)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        unthinker(cx, &Qwen2Moe, name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        qwen::moe_parameters(cx, kv)?;
        deepstack_layers(cx, kv);
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let stem = name.strip_suffix(".weight").unwrap_or(name);
        if stem.ends_with("mlp.experts.down_proj") || stem.ends_with("mlp.experts.gate_up_proj") {
            return qwen::packed_experts(cx, name, stem, shape, true);
        }
        base::yield_as(name, Rearrange::default())
    }
}

/// `<|im_end|>`'s id in `tokenizer_config.json`'s `added_tokens_decoder` (the first entry that
/// is it), which the omni and speech classes make both bos and eos.
fn im_end(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let path = cx.dir.file("tokenizer_config.json");
    let config = cx.dir.json("tokenizer_config.json")?.ok_or_else(|| {
        crate::error::Error::reference(format!("File not found: {}", path.display()))
    })?;
    let found = config
        .get("added_tokens_decoder")
        .and_then(Value::as_object)
        .and_then(|m| {
            m.iter()
                .find(|(_, d)| d.get("content").and_then(Value::as_str) == Some("<|im_end|>"))
        });
    if let Some((id, _)) = found {
        let id: u32 = id.parse().map_err(|_| {
            crate::error::Error::field(
                &path,
                "added_tokens_decoder",
                format!("{id:?} is not an id"),
            )
        })?;
        kv.u32("tokenizer.ggml.bos_token_id", id);
        kv.u32("tokenizer.ggml.eos_token_id", id);
    }
    Ok(())
}

/// `Qwen3OmniMoeTextModel(Qwen3VLMoeTextModel)`: `Qwen3OmniMoeForConditionalGeneration`'s
/// thinker, with no deepstack layers and `<|im_end|>` as bos and eos.
pub(crate) struct Qwen3OmniMoe;

impl TextModel for Qwen3OmniMoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3VlMoe)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3VlMoe.set_vocab(cx, kv)?;
        im_end(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3VlMoe.set_gguf_parameters(cx, kv)?;
        kv.u32(&cx.key("n_deepstack_layers"), 0);
        Ok(())
    }
}

/// The ChatML template `Qwen3ASRTextModel` writes in place of the checkpoint's.
const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + \
message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ \
'<|im_start|>assistant\\n' }}{% endif %}";

/// `Qwen3ASRTextModel(Qwen3VLTextModel)`: `Qwen3ASRForConditionalGeneration`'s text half, with
/// no deepstack layers, ChatML as its template and `<|im_end|>` as bos and eos.
pub(crate) struct Qwen3Asr;

impl TextModel for Qwen3Asr {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3Vl)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3Vl.set_vocab(cx, kv)?;
        kv.string("tokenizer.chat_template", CHATML);
        im_end(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3Vl.set_gguf_parameters(cx, kv)?;
        kv.u32(&cx.key("n_deepstack_layers"), 0);
        Ok(())
    }
}

/// `Qwen3VLVisionModel`: the projector of Qwen3-VL, its mixture and Qwen 3.5: the Conv3D
/// patch embedding as two Conv2Ds, the merger's layers and the deepstack mergers named by
/// the vision blocks they follow.
pub(crate) struct Qwen3VlVision;

impl TextModel for Qwen3VlVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// `__init__`: `image_size` from the position embeddings where the config has none, and
    /// the heads and blocks under the names the keys read.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        let m = &mut hp.map;
        if !m.contains_key("image_size") {
            let n = m
                .get("num_position_embeddings")
                .and_then(Value::as_f64)
                .unwrap_or(2304.0);
            let patch = m.get("patch_size").and_then(Value::as_f64).unwrap_or(16.0);
            m.insert("image_size".into(), ((n.sqrt() * patch) as u64).into());
        }
        mmproj::rename(m, "num_attention_heads", "num_heads");
        mmproj::rename(m, "num_hidden_layers", "depth");
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "qwen3vl_merger");
        kv.bool("clip.use_gelu", true);
        if let Some(n) = hp.opt_int(&["spatial_merge_size"])? {
            kv.u32(
                "clip.vision.spatial_merge_size",
                base::count32(hp, "spatial_merge_size", n)?,
            );
        }
        let text = hp.raw.get("text_config");
        let eps = match text.and_then(|t| t.get("rms_norm_eps")) {
            Some(v) => v.as_f64().ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "text_config.rms_norm_eps",
                    format!("{v} is not a number"),
                )
            })?,
            None => 1e-6,
        };
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        let depth = hp.opt_int(&["num_hidden_layers"])?.unwrap_or(0);
        let mut deepstack = vec![false; depth as usize];
        for i in deepstack_indexes(hp)? {
            let Some(slot) = deepstack.get_mut(i as usize) else {
                return Err(Error::field(
                    &hp.path,
                    "vision_config.deepstack_visual_indexes",
                    format!("{i} is past the {depth} blocks (IndexError)"),
                ));
            };
            *slot = true;
        }
        if !deepstack.is_empty() {
            kv.bools("clip.vision.is_deepstack_layers", deepstack);
        }
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("lm_head.") || name.starts_with("mtp.") {
            return None;
        }
        let name = match name.strip_prefix("model.visual.") {
            Some(rest) => format!("visual.{rest}"),
            None => name.to_owned(),
        };
        if !name.starts_with("visual.") {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, &name)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        if let Some(rest) = name.strip_prefix("visual.deepstack_merger_list.") {
            let (i, target) = rest.split_once('.').unwrap_or((rest, ""));
            let indexes = deepstack_indexes(hp)?;
            let idx = i
                .parse::<usize>()
                .ok()
                .and_then(|i| indexes.get(i))
                .ok_or_else(|| {
                    Error::field(
                        &hp.path,
                        "vision_config.deepstack_visual_indexes",
                        format!("has no entry for {name} (IndexError)"),
                    )
                })?;
            let (part, suffix) = target.split_once('.').unwrap_or((target, ""));
            let tensor = match part {
                "norm" => Tensor::V_DS_NORM,
                "linear_fc1" => Tensor::V_DS_FC1,
                "linear_fc2" => Tensor::V_DS_FC2,
                _ => {
                    return Err(Error::reference(format!(
                        "ValueError: Unexpected deepstack tensor: {name}"
                    )))
                }
            };
            let new_name = names::format_name(tensor, Some(*idx), &format!(".{suffix}"));
            // `map_tensor_name` of a GGUF name: itself, within the blocks
            if *idx >= cx.block_count {
                return Err(Error::reference(format!(
                    "ValueError: Can not map tensor {new_name:?}"
                )));
            }
            return Ok(vec![mmproj::named(new_name)]);
        }
        if let Some(suffix) = name.strip_prefix("visual.merger.") {
            let (part, tail) = suffix.split_once('.').unwrap_or((suffix, ""));
            let new_name = match part {
                "linear_fc1" => names::format_name(Tensor::V_MMPROJ, Some(0), &format!(".{tail}")),
                "linear_fc2" => names::format_name(Tensor::V_MMPROJ, Some(2), &format!(".{tail}")),
                "norm" => names::format_name(Tensor::V_POST_NORM, None, &format!(".{tail}")),
                _ if part.starts_with("linear_fc") => {
                    return Err(Error::reference(format!(
                        "ValueError: unexpected fc index {} in {name}",
                        &part["linear_fc".len()..]
                    )))
                }
                _ => {
                    return Err(Error::reference(format!(
                        "ValueError: Unexpected merger tensor: {name}"
                    )))
                }
            };
            return Ok(vec![mmproj::named(new_name)]);
        }
        if name == "visual.patch_embed.proj.weight" {
            return mmproj::conv3d_halves(
                name,
                shape,
                "ValueError: Current implementation only supports temporal_patch_size of 2",
            );
        }
        if name == "visual.patch_embed.proj.bias" {
            let new_name = names::format_name(Tensor::V_ENC_EMBD_PATCH, None, ".bias");
            return Ok(vec![mmproj::named(new_name)]);
        }
        Ok(vec![(name.to_owned(), Rearrange::default())])
    }
}

/// `deepstack_visual_indexes` of the vision config (none: empty).
fn deepstack_indexes(hp: &Hparams) -> Result<Vec<u64>> {
    match hp.map.get("deepstack_visual_indexes") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    Error::field(
                        &hp.path,
                        "vision_config.deepstack_visual_indexes",
                        format!("{v} is not a block"),
                    )
                })
            })
            .collect(),
        Some(v) => Err(Error::field(
            &hp.path,
            "vision_config.deepstack_visual_indexes",
            format!("{v} is not a list"),
        )),
    }
}

/// `Glm4VVisionModel`: GLM-4.1V's, GLM-4.5V's and GLM-OCR's projector: Qwen3-VL's tower
/// reading, its own keys, the merger's tensors mapped by name.
pub(crate) struct Glm4vVision;

impl TextModel for Glm4vVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3VlVision)
    }

    /// `MmprojModel`'s keys, not Qwen3-VL's, then its own.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "glm4v");
        mmproj::activation_key(hp, kv);
        let eps = hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.starts_with("visual.merger.") {
            return Ok(vec![(name.to_owned(), Rearrange::default())]);
        }
        Qwen3VlVision.modify_tensors(cx, name, shape)
    }
}
