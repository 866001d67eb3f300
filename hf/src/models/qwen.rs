//! `conversion/qwen.py`.

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `Qwen2Model`.
pub(crate) struct Qwen2;

impl TextModel for Qwen2 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::pooling(cx, kv)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        // The bare model's names are the causal model's without `model.`.
        let name = match cx.class {
            "Qwen2Model" => format!("model.{name}"),
            _ => name.to_owned(),
        };
        base::yield_as(&name, Rearrange::default())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if !base::sentencepiece(cx, kv)? {
            base::gpt2(cx, kv)?;
        }
        Ok(())
    }
}

/// `Qwen3Model(Qwen2Model)`.
pub(crate) struct Qwen3;

impl TextModel for Qwen3 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        if qwen3_reranker(cx)? {
            return Err(Error::not_yet("Qwen3 rerankers are not converted yet"));
        }
        base::pooling(cx, kv)
    }
}

/// The experts of Qwen's mixtures (`mlp.experts.{xid}.{w}`).
fn qwen_experts() -> Experts {
    Experts {
        count_keys: &["num_local_experts", "num_experts"],
        marker: "experts",
        expert: "model.layers.{bid}.mlp.experts.{xid}.{w}.weight",
        merged: "model.layers.{bid}.mlp.experts.{w}.weight",
        weights: ["down_proj", "gate_proj", "up_proj"],
    }
}

/// What `Qwen2MoeModel.set_gguf_parameters` adds.
fn moe_parameters(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    base::set_gguf_parameters(cx, kv)?;
    let hp = cx.hp();
    if let Some(n) = hp.opt_int(&["moe_intermediate_size"])? {
        kv.u32(&cx.key("expert_feed_forward_length"), n as u32);
    }
    if let Some(n) = hp.opt_int(&["shared_expert_intermediate_size"])? {
        kv.u32(&cx.key("expert_shared_feed_forward_length"), n as u32);
    }
    Ok(())
}

/// `Qwen2MoeModel` (its vocabulary is `TextModel`'s: BPE only).
pub(crate) struct Qwen2Moe;

impl TextModel for Qwen2Moe {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        moe_parameters(cx, kv)
    }

    fn experts(&self) -> Option<Experts> {
        Some(qwen_experts())
    }
}

/// `Qwen3Model._is_qwen3_reranker`.
fn qwen3_reranker(cx: &Ctx) -> Result<bool> {
    let dir = &cx.dir.path;
    let hp = cx.hp();
    let readme = cx.dir.file("README.md");
    if readme.exists() {
        let text = std::fs::read_to_string(&readme)
            .map_err(|e| Error::io(&readme, e))?
            .to_lowercase();
        if text.contains("# qwen3-reranker") || text.contains("# qwen3-vl-reranker") {
            return Ok(true);
        }
    }
    let arch = hp.architecture().unwrap_or_default();
    let text = |k: &str| {
        hp.map
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let hints = [
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        text("_name_or_path"),
        text("model_type"),
        arch.clone(),
    ];
    if hints
        .iter()
        .map(|h| h.to_lowercase())
        .any(|h| h.contains("qwen3-reranker") || h.contains("qwen3-vl-reranker"))
    {
        return Ok(true);
    }
    Ok(arch.to_lowercase().contains("sequenceclassification"))
}
