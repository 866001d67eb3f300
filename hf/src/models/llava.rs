//! `conversion/llava.py`'s projector: Pixtral's vision tower as LLaVA and Mistral 3 carry
//! it (the text halves are Llama's and Mistral 3's).

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names;
use crate::tables::Tensor;
use serde_json::Value;

/// `LlavaVisionModel`: a Pixtral tower (q and k permuted as Llama's), the `[IMG_BREAK]`
/// token's embedding where the checkpoint's embeddings are not the language model's.
pub(crate) struct LlavaVision;

/// `LightOnOCRVisionModel`: LLaVA's Pixtral tower under LightOnOCR's names, without the
/// `[IMG_BREAK]` token.
pub(crate) struct LightOnOcrVision;

impl TextModel for LightOnOcrVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&LlavaVision)
    }

    /// `use_break_tok = False`: no token looked up.
    fn init_keys(&self, _cx: &Ctx, _early: &mut Kv) -> Result<()> {
        Ok(())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        LlavaVision.set_gguf_parameters(cx, kv)?;
        kv.string("clip.projector_type", "lightonocr");
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = name
            .replace("model.vision_encoder.", "vision_tower.")
            .replace("model.vision_projection.", "multi_modal_projector.");
        LlavaVision.filter_tensors(cx, &name)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if VISION_PREFIXES.iter().any(|p| name.starts_with(p)) {
            return LlavaVision.modify_tensors(cx, name, shape);
        }
        // `img_break_tok_id` stays -1: every other tensor is skipped
        Ok(Vec::new())
    }
}

/// The tower and projector prefixes `modify_tensors` converts.
const VISION_PREFIXES: [&str; 6] = [
    "multi_modal_projector.",
    "vision_tower.",
    "vision_encoder.",
    "vision_language_adapter.",
    "patch_merger.",
    "pre_mm_projector_norm",
];

fn model_type(hp: &Hparams) -> &str {
    hp.map
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `get_token_id("[IMG_BREAK]")`: `tokenizer_config.json`'s added tokens, then
/// `tokenizer.json`'s.
fn img_break_id(cx: &Ctx) -> Result<u64> {
    const TOKEN: &str = "[IMG_BREAK]";
    let config = cx.dir.json("tokenizer_config.json")?.ok_or_else(|| {
        Error::field(
            &cx.dir.file("tokenizer_config.json"),
            "(file)",
            "missing (the reference opens it for the [IMG_BREAK] token)",
        )
    })?;
    if let Some(Value::Object(added)) = config.get("added_tokens_decoder") {
        for (id, token) in added {
            if token.get("content").and_then(Value::as_str) == Some(TOKEN) {
                return id.parse().map_err(|_| {
                    Error::field(
                        &cx.dir.file("tokenizer_config.json"),
                        "added_tokens_decoder",
                        format!("{id:?} is not a token id"),
                    )
                });
            }
        }
    }
    let tokenizer = cx.dir.json("tokenizer.json")?.ok_or_else(|| {
        Error::field(
            &cx.dir.file("tokenizer.json"),
            "(file)",
            "missing (the reference opens it for the [IMG_BREAK] token)",
        )
    })?;
    let added = tokenizer.get("added_tokens").and_then(Value::as_array);
    for token in added.into_iter().flatten() {
        if token.get("content").and_then(Value::as_str) == Some(TOKEN) {
            if let Some(id) = token.get("id").and_then(Value::as_u64) {
                return Ok(id);
            }
        }
    }
    Err(Error::reference(format!(
        "ValueError: Token '{TOKEN}' not found in tokenizer config."
    )))
}

impl TextModel for LlavaVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// Pixtral's `layer_norm_eps`, which its config does not carry (modeling_pixtral.py's).
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        if model_type(hp) == "pixtral" && !hp.map.contains_key("layer_norm_eps") {
            hp.map.insert("layer_norm_eps".into(), 1e-5.into());
        }
    }

    /// `__init__`'s refusals: a tower other than Pixtral's, a tokenizer without
    /// `[IMG_BREAK]` (checked where the folder is read: [`TextModel::modify_tensors`]).
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        let n = mmproj::VISION.block_count(hp, names)?;
        match model_type(hp) {
            "pixtral" => Ok(n),
            other => Err(Error::reference(format!(
                "ValueError: Unsupported model type: {other}"
            ))),
        }
    }

    fn init_keys(&self, cx: &Ctx, _early: &mut Kv) -> Result<()> {
        img_break_id(cx).map(|_| ())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "pixtral");
        kv.f32(
            "clip.vision.attention.layer_norm_epsilon",
            hp.float(&["layer_norm_eps"])?,
        );
        match hp.map.get("hidden_act").and_then(Value::as_str) {
            Some("silu") => kv.bool("clip.use_silu", true),
            Some("gelu") => kv.bool("clip.use_gelu", true),
            other => {
                return Err(Error::field(
                    &hp.path,
                    "vision_config.hidden_act",
                    format!("{other:?}: Unsupported hidden_act (ValueError)"),
                ))
            }
        }
        if let Some(v) = hp.raw.get("spatial_merge_size") {
            kv.u32(
                "clip.vision.spatial_merge_size",
                base::u32_of(hp, "spatial_merge_size", v)?,
            );
        }
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        if VISION_PREFIXES.iter().any(|p| name.starts_with(p)) {
            let heads = hp.int(&["num_attention_heads"])?;
            let qk = [
                "q_proj.weight",
                "q_proj.bias",
                "k_proj.weight",
                "k_proj.bias",
            ];
            let order = match qk.iter().any(|s| name.ends_with(s)) {
                true => Order::LlamaHeads(heads),
                false => Order::Stored,
            };
            let change = Rearrange {
                order,
                ..Rearrange::default()
            };
            return base::yield_as(name, change);
        }
        let id = img_break_id(cx)?;
        if id > 0 && name.contains("embed_tokens.weight") {
            let change = Rearrange {
                rows: Some((id, id + 1)),
                squeeze: true,
                named: true,
                ..Rearrange::default()
            };
            let new_name = names::format_name(Tensor::V_TOK_EMBD_IMG_BREAK, None, "");
            return Ok(vec![(new_name, change)]);
        }
        Ok(Vec::new())
    }
}
