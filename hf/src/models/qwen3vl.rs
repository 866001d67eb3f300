//! `conversion/qwen3vl.py`: the text halves of Qwen3-VL and its mixture (their vision towers
//! are the projector's, not converted here).

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use super::qwen::{self, Qwen2Moe, Qwen3};
use crate::error::Result;
use crate::kv::Kv;
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
