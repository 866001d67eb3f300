//! `conversion/qwen.py`.

use super::base::{self, Ctx, Experts, LateInt, Rearrange, TextModel, View, Yields};
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

/// The experts of Qwen's mixtures (`mlp.experts.{xid}.{w}`), also OLMoE's (copied from them).
pub(crate) fn qwen_experts() -> Experts {
    Experts {
        count_keys: &["num_local_experts", "num_experts"],
        marker: "experts",
        unless: "",
        packed: &[
            "mlp.experts.gate_up_proj",
            "mlp.experts.gate_up_proj.weight",
            "mlp.experts.down_proj",
            "mlp.experts.down_proj.weight",
        ],
        expert: "model.layers.{bid}.mlp.experts.{xid}.{w}.weight",
        merged: "model.layers.{bid}.mlp.experts.{w}.weight",
        weights: &["down_proj", "gate_proj", "up_proj"],
    }
}

/// What `Qwen2MoeModel.set_gguf_parameters` adds.
pub(crate) fn moe_parameters(cx: &Ctx, kv: &mut Kv) -> Result<()> {
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

    /// A block's experts stored packed: `down_proj` `[experts, hidden, ffn]` as it is,
    /// `gate_up_proj` `[experts, 2·ffn, hidden]` cut into gate and up.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let stem = name.strip_suffix(".weight").unwrap_or(name);
        if stem.ends_with("mlp.experts.down_proj") || stem.ends_with("mlp.experts.gate_up_proj") {
            return packed_experts(cx, name, stem, shape, false);
        }
        base::yield_as(name, Rearrange::default())
    }

    fn experts(&self) -> Option<Experts> {
        Some(qwen_experts())
    }
}

/// `RND1Model(Qwen2MoeModel)`: `RND1`, a diffusion model on Qwen 3's mixture.
pub(crate) struct Rnd1;

impl TextModel for Rnd1 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2Moe)
    }

    /// Qwen 2 MoE's keys, attention that is not causal and the mask token.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        moe_parameters(cx, kv)?;
        super::dream::unmasked(cx, kv)
    }
}

/// Packed experts, read as the config's widths say. The reference cuts `gate_up_proj` along
/// one axis whatever its shape: the second (`[experts, 2·ffn, hidden]`, Qwen's layout) or,
/// for a class whose published checkpoints store the pair transposed (`hub_transposed`:
/// Qwen3-VL's `[experts, hidden, 2·ffn]`, `down_proj` `[experts, ffn, hidden]`), the last. A
/// checkpoint stored the other way round would come out of the reference as a model whose
/// shapes contradict its config, so such a tensor is read the other way instead; one that is
/// neither is refused. Without `moe_intermediate_size` the reference's cut is made.
pub(crate) fn packed_experts(
    cx: &Ctx,
    name: &str,
    stem: &str,
    shape: &[u64],
    hub_transposed: bool,
) -> Yields {
    let hp = cx.hp();
    let hidden = hp.opt_int(&["hidden_size"])?;
    let ff = hp.opt_int(&["moe_intermediate_size"])?;
    let bad = |want: String| {
        Error::field(
            &hp.path,
            "moe_intermediate_size",
            format!("{name} is {shape:?}, not {want} or its last two axes swapped"),
        )
    };
    let [n, a, b] = shape[..] else {
        return Err(Error::reference(format!(
            "Unexpected shape for {name}: {shape:?}"
        )));
    };
    if stem.ends_with("down_proj") {
        let out = format!("{stem}.weight");
        let as_is = base::yield_as(&out, Rearrange::default());
        // the stored `[experts, rows, cols]` the reference writes as it is
        let (Some(h), Some(f)) = (hidden, ff) else {
            return match hub_transposed {
                true => base::yield_as(&out, View::transposed(n, a, b).alone()),
                false => as_is,
            };
        };
        let (plain, swapped) = match hub_transposed {
            true => ((f, h), (h, f)),
            false => ((h, f), (f, h)),
        };
        return match (a, b) {
            s if s == plain && hub_transposed => {
                base::yield_as(&out, View::transposed(n, a, b).alone())
            }
            s if s == plain => as_is,
            s if s == swapped && hub_transposed => as_is,
            s if s == swapped => base::yield_as(&out, View::transposed(n, a, b).alone()),
            _ => Err(bad(format!("[{n}, {}, {}]", plain.0, plain.1))),
        };
    }
    let stem = stem.trim_end_matches(".gate_up_proj");
    let parts = [
        format!("{stem}.gate_proj.weight"),
        format!("{stem}.up_proj.weight"),
    ];
    // `[n, 2·f, h]` cut along its middle axis, or `[n, h, 2·f]` along its last and transposed
    let middle = |f: u64, h: u64| [0, 1].map(|p| View::middle_half(n, f, h, p));
    let last = |h: u64, f: u64| {
        [0, 1].map(|p| View {
            offset: p * f,
            axes: [(n, h * 2 * f), (f, 1), (h, 2 * f)],
            three: true,
        })
    };
    let views: [View; 2] = match (hidden, ff) {
        (Some(h), Some(f)) if hub_transposed && (a, b) == (h, 2 * f) => last(h, f),
        (Some(h), Some(f)) if (a, b) == (2 * f, h) => middle(f, h),
        (Some(h), Some(f)) if (a, b) == (h, 2 * f) => last(h, f),
        (Some(h), Some(f)) if hub_transposed => return Err(bad(format!("[{n}, {h}, {}]", 2 * f))),
        (Some(h), Some(f)) => return Err(bad(format!("[{n}, {}, {h}]", 2 * f))),
        _ if hub_transposed && b % 2 == 0 => last(a, b / 2),
        _ if !hub_transposed && a % 2 == 0 => middle(a / 2, b),
        _ => {
            return Err(Error::reference(format!(
                "Unexpected gate_up_proj shape for {name}: {shape:?}"
            )))
        }
    };
    Ok(parts.into_iter().zip(views.map(View::alone)).collect())
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

/// `DFlashModel(Qwen3Model)`: `DFlashDraftModel` and `DFlash2DraftModel`, block-diffusion
/// drafts that read their target's hidden states; their vocabulary is the target's.
pub(crate) struct DFlash;

/// `dflash_config`'s `key`, else the config's own.
fn dflash_value<'h>(hp: &'h crate::config::Hparams, key: &str) -> Option<&'h Value> {
    let inner = hp.map.get("dflash_config").and_then(|c| c.get(key));
    inner.or_else(|| hp.map.get(key)).filter(|v| !v.is_null())
}

impl TextModel for DFlash {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3)
    }

    /// Names without `model.` get it; a sink gets `.weight`.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let mut name = match name.starts_with("model.") {
            true => name.to_owned(),
            false => format!("model.{name}"),
        };
        if name.contains("sink") && !name.ends_with(".weight") {
            name.push_str(".weight");
        }
        Qwen3.filter_tensors(cx, &name)
    }

    /// Qwen 3's keys, then the draft's: its rotated width, value scale, block size,
    /// convolution and selector sizes, logit and embedding scales, the target layers it reads
    /// (the inputs of the layers after them), its window, causality, and M-RoPE's sections
    /// where the target has them.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let inner = hp.map.get("dflash_config");
        let own = |k: &str| inner.and_then(|c| c.get(k)).filter(|v| !v.is_null());
        let float = |v: &Value, k: &str| {
            v.as_f64()
                .ok_or_else(|| Error::field(&hp.path, k, "not a number"))
        };
        let head = match hp.opt_int(&["head_dim"])? {
            Some(d) if d != 0 => d,
            _ => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
        };
        if let Some(p) = cx
            .rope()
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
        {
            kv.u32(&cx.key("rope.dimension_count"), (head as f64 * p) as u32);
        }
        if let Some(v) = own("attention_value_scale") {
            kv.f32(
                &cx.key("attention.value_scale"),
                float(v, "attention_value_scale")?,
            );
        }
        let block = own("block_size").or_else(|| hp.map.get("block_size"));
        let block = match block {
            Some(v) => base::u32_of(hp, "block_size", v)?,
            None => 16,
        };
        kv.u32(&cx.key("block_size"), block);
        if own("conv_kernel_size").is_some() {
            for k in [
                "conv_kernel_size",
                "conv_group_size",
                "selector_rank",
                "selector_top_k",
            ] {
                let v = own(k).ok_or_else(|| Error::reference(format!("KeyError: '{k}'")))?;
                kv.u32(&cx.key(k), base::u32_of(hp, k, v)?);
            }
        }
        if let Some(v) = dflash_value(hp, "output_multiplier") {
            kv.f32(&cx.key("logit_scale"), float(v, "output_multiplier")?);
        }
        if let Some(v) = dflash_value(hp, "final_logit_softcapping") {
            let cap = float(v, "final_logit_softcapping")?;
            if cap > 0.0 {
                kv.f32(&cx.key("final_logit_softcapping"), cap);
            }
        }
        if let Some(v) = dflash_value(hp, "input_embedding_scale") {
            kv.f32(
                &cx.key("embedding_scale"),
                float(v, "input_embedding_scale")?,
            );
        }
        if let Some(ids) = dflash_value(hp, "target_layer_ids").and_then(Value::as_array) {
            if !ids.is_empty() {
                let ids = ids
                    .iter()
                    .map(|v| v.as_i64().map(|i| (i + 1) as i32))
                    .collect::<Option<Vec<i32>>>()
                    .ok_or_else(|| {
                        Error::field(&hp.path, "target_layer_ids", "not layer numbers")
                    })?;
                kv.i32s(&cx.key("target_layers"), ids);
            }
        }
        let use_swa = own("use_swa").is_some_and(crate::vocab::truthy);
        let sliding = hp
            .map
            .get("use_sliding_window")
            .is_some_and(crate::vocab::truthy)
            || use_swa;
        let window = own("swa_window_size")
            .filter(|v| crate::vocab::truthy(v))
            .or_else(|| hp.map.get("sliding_window"))
            .filter(|v| crate::vocab::truthy(v));
        if let (true, Some(w)) = (sliding, window) {
            let pattern = match use_swa {
                true => vec![true; cx.block_count as usize],
                false => match hp.map.get("layer_types") {
                    Some(t) if !t.is_null() => base::sliding_layers(hp, t)?,
                    _ => Vec::new(),
                },
            };
            kv.u32(
                &cx.key("attention.sliding_window"),
                base::u32_of(hp, "sliding_window", w)?,
            );
            kv.bools(&cx.key("attention.sliding_window_pattern"), pattern);
        }
        let causal = hp
            .map
            .get("is_causal")
            .filter(|v| !v.is_null())
            .or_else(|| own("causal"));
        if let Some(c) = causal {
            kv.bool(&cx.key("attention.causal"), crate::vocab::truthy(c));
        }
        if target_uses_mrope(cx)? {
            kv.i32s(
                &cx.key("rope.dimension_sections"),
                vec![(head / 2) as i32, 0, 0, 0],
            );
        }
        Ok(())
    }

    /// Interleaved-RoPE checkpoints' q, k and their norms made NeoX's; the codebooks named as
    /// weights.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let neox = hp
            .map
            .get("rope_is_neox_style")
            .is_none_or(crate::vocab::truthy);
        const ROPE: [&str; 4] = [
            "self_attn.q_proj.weight",
            "self_attn.k_proj.weight",
            "self_attn.q_norm.weight",
            "self_attn.k_norm.weight",
        ];
        if !neox && ROPE.iter().any(|s| name.ends_with(s)) {
            return Err(Error::not_yet(format!(
                "{name}: interleaved-RoPE DFlash checkpoints (rope_is_neox_style false) are not \
                 converted yet"
            )));
        }
        match name {
            "model.candidate_selector.predecessor_codebook"
            | "model.candidate_selector.successor_codebook" => {
                Qwen3.modify_tensors(cx, &format!("{name}.weight"), shape)
            }
            _ => Qwen3.modify_tensors(cx, name, shape),
        }
    }

    /// A mask embedding (`mask_embedding.pt`) is a pickle: refused.
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        if cx.dir.has("mask_embedding.pt") {
            return Err(Error::not_yet(
                "mask_embedding.pt is a pickle, which ggufrw does not read",
            ));
        }
        Qwen3.generate_extra_tensors(cx)
    }

    /// The target's vocabulary, as the target's own class reads it (with the draft's
    /// config), then the mask token.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let target = cx.target.ok_or_else(|| {
            Error::reference(
                "ValueError: DFlash draft model requires --target-model-dir to be specified. \
                 Please provide the path to the target model directory containing the tokenizer.",
            )
        })?;
        let class = target.hparams.architecture()?;
        let on_target = Ctx { dir: target, ..*cx };
        // `target_cls is not type(self)`, by the Python classes the names are registered to.
        let py_class = |c: &str| super::reference_class(c).map(|r| r.class);
        let target_class = py_class(&class);
        if target_class == py_class(cx.class) {
            Qwen3.set_vocab(&on_target, kv)?;
        } else if matches!(target_class, Some("DFlashModel" | "DSparkModel")) {
            // The target's class would read its own target, the same folder, without end.
            return Err(Error::reference(format!(
                "RecursionError: the target model {class} is itself a draft of another kind"
            )));
        } else {
            super::for_class(&class)?.1.set_vocab(&on_target, kv)?;
        }
        let mask = cx
            .hp()
            .map
            .get("dflash_config")
            .and_then(|c| c.get("mask_token_id"));
        if let Some(id) = mask.filter(|v| !v.is_null()) {
            kv.u32(
                "tokenizer.ggml.mask_token_id",
                base::u32_of(cx.hp(), "mask_token_id", id)?,
            );
        }
        Ok(())
    }
}

/// Whether the target's RoPE has M-RoPE sections.
fn target_uses_mrope(cx: &Ctx) -> Result<bool> {
    let Some(target) = cx.target else {
        return Ok(false);
    };
    let config = target.json("config.json")?.unwrap_or_default();
    let config = config.get("text_config").unwrap_or(&config);
    let rope = ["rope_parameters", "rope_scaling"]
        .iter()
        .find_map(|k| config.get(*k).filter(|v| crate::vocab::truthy(v)));
    Ok(rope.is_some_and(|r| r.get("mrope_section").is_some()))
}

/// `DSparkModel(DFlashModel)`: DFlash with a semi-autoregressive Markov head (and maybe a
/// confidence head), a draft vocabulary of its own mapped to the target's by `d2t`.
pub(crate) struct DSpark;

/// The draft's vocabulary size: `draft_vocab_size`, else `vocab_size`.
fn dspark_vocab(hp: &crate::config::Hparams) -> Result<(u64, u64)> {
    let n_vocab = hp.int(&["vocab_size"])?;
    let draft = match hp.opt_int(&["draft_vocab_size"])? {
        Some(d) if d != 0 => d,
        _ => n_vocab,
    };
    Ok((draft, n_vocab))
}

impl TextModel for DSpark {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DFlash)
    }

    /// The speculators' `transformer_layer_config` laid over the config, and both schemas'
    /// draft fields gathered in `dflash_config` as DFlash has them.
    fn init_hparams(&self, _class: &str, hp: &mut crate::config::Hparams) {
        if let Some(Value::Object(layer)) = hp.map.get("transformer_layer_config").cloned() {
            hp.map.extend(layer);
        }
        if hp.map.contains_key("dflash_config") {
            return;
        }
        let mut inner = serde_json::Map::new();
        if let Some(aux) = hp
            .map
            .get("aux_hidden_state_layer_ids")
            .and_then(Value::as_array)
        {
            let ids: Vec<Value> = aux
                .iter()
                .filter_map(Value::as_i64)
                .map(|i| (i - 1).into())
                .collect();
            let mask = hp.map.get("mask_token_id").cloned().unwrap_or(Value::Null);
            inner.insert("mask_token_id".into(), mask);
            inner.insert("target_layer_ids".into(), Value::Array(ids));
        } else {
            for k in ["target_layer_ids", "mask_token_id"] {
                if let Some(v) = hp.map.get(k) {
                    inner.insert(k.into(), v.clone());
                }
            }
        }
        hp.map.insert("dflash_config".into(), Value::Object(inner));
    }

    /// The Markov head must be vanilla and the draft vocabulary within the target's; then
    /// DFlash's keys, whether the first token is sampled from the anchor, and whether a
    /// confidence head is there.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let head = hp.map.get("markov_head_type").and_then(Value::as_str);
        if let Some(h) = head.filter(|h| *h != "vanilla") {
            return Err(Error::reference(format!(
                "ValueError: unsupported markov_head_type {h:?} (only 'vanilla' is supported)"
            )));
        }
        let (draft, n_vocab) = dspark_vocab(hp)?;
        if draft > n_vocab {
            return Err(Error::reference(format!(
                "ValueError: draft_vocab_size {draft} exceeds vocab_size {n_vocab}"
            )));
        }
        DFlash.set_gguf_parameters(cx, kv)?;
        let raw = &cx.dir.hparams.map;
        let anchor = match raw.get("sample_from_anchor") {
            Some(v) => crate::vocab::truthy(v),
            None => {
                !raw.contains_key("transformer_layer_config")
                    && !raw.contains_key("aux_hidden_state_layer_ids")
            }
        };
        kv.bool(&cx.key("sample_from_anchor"), anchor);
        let confidence = cx.names.iter().any(|n| n.contains("confidence_head.proj"));
        kv.bool(&cx.key("has_confidence_head"), confidence);
        Ok(())
    }

    /// `t2d` is not used at run time.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        match name {
            "t2d" => None,
            _ => DFlash.filter_tensors(cx, name),
        }
    }

    /// `d2t` as absolute target ids, written last.
    fn late_int64(&self, _cx: &Ctx, name: &str) -> Option<LateInt> {
        (name == "model.d2t").then(|| LateInt {
            name: "d2t".to_owned(),
            values: dspark_d2t,
        })
    }

    /// Without a vocabulary of its own the draft's output is the target's: dropped.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let (draft, n_vocab) = dspark_vocab(cx.hp())?;
        if draft == n_vocab && name.ends_with("lm_head.weight") {
            return Ok(Vec::new());
        }
        DFlash.modify_tensors(cx, name, shape)
    }

    /// A smaller draft vocabulary needs its map to the target's.
    fn after_tensors(&self, cx: &Ctx, _early: &mut Kv) -> Result<()> {
        let (draft, n_vocab) = dspark_vocab(cx.hp())?;
        let has_map = cx
            .names
            .iter()
            .any(|n| DSpark.filter_tensors(cx, n).as_deref() == Some("model.d2t"));
        if draft < n_vocab && !has_map {
            return Err(Error::reference(format!(
                "ValueError: draft_vocab_size {draft} < vocab_size {n_vocab} but no d2t table found"
            )));
        }
        Ok(())
    }
}

/// `d2t` as absolute target ids: one a draft token, each plus its index, inside the
/// vocabulary and none twice.
fn dspark_d2t(cx: &Ctx, stored: Vec<i64>) -> Result<Vec<i64>> {
    let (draft, n_vocab) = dspark_vocab(cx.hp())?;
    if stored.len() as u64 != draft {
        return Err(Error::reference(format!(
            "ValueError: d2t size {} does not match draft_vocab_size {draft}",
            stored.len()
        )));
    }
    base::absolute_ids(&stored, n_vocab as i64, "")
}

/// `_QwenMtpMixin`'s prediction layers: `mtp_num_hidden_layers`, else as many as the
/// checkpoint's `mtp.layers.{i}` (Qwen3-Next's configs do not say); none is the reference's
/// failed assertion.
fn mtp_layers(hp: &crate::config::Hparams, names: &[String]) -> Result<u64> {
    if let Some(n) = hp.opt_int(&["mtp_num_hidden_layers"])?.filter(|&n| n > 0) {
        return Ok(n);
    }
    let found = names
        .iter()
        .filter_map(|n| {
            let n = base::filter_tensors(n)?;
            let rest = n.strip_prefix("model.").unwrap_or(&n);
            let (i, _) = rest.strip_prefix("mtp.layers.")?.split_once('.')?;
            i.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| i.parse::<u64>().ok())?
        })
        .max();
    match found {
        Some(i) => Ok(i + 1),
        None => Err(Error::reference(
            "AssertionError: no mtp_num_hidden_layers in the config and no mtp.layers.* \
             tensors in the checkpoint (the reference asserts one of them)",
        )),
    }
}

/// `_QwenMtpMixin.filter_tensors`: `mtp.layers.{i}` becomes block `num_hidden_layers + i`,
/// the prediction layer's projection and norms that block's `eh_proj`, `enorm`, `hnorm`
/// and `shared_head.norm`.
fn mtp_filter(cx: &Ctx, name: &str) -> Option<String> {
    let name = base::filter_tensors(name)?;
    let name = match name.strip_prefix("model.mtp.") {
        Some(rest) => format!("mtp.{rest}"),
        None => name,
    };
    if !name.starts_with("mtp.") {
        return Some(name);
    }
    let layers = cx.hp().int(&["num_hidden_layers"]).ok()?;
    let parts: Vec<&str> = name.splitn(4, '.').collect();
    match parts[..] {
        [_, "layers", i, rest] if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => {
            let i: u64 = i.parse().ok()?;
            Some(format!("model.layers.{}.{rest}", layers + i))
        }
        [_, part, suffix] => {
            let stem = format!("mtp.{part}");
            let Some((_, to, _)) = base::MTP_SHARED.iter().find(|(s, _, _)| *s == stem) else {
                return Some(name);
            };
            Some(format!("model.layers.{layers}.{to}.{suffix}"))
        }
        _ => Some(name),
    }
}

/// `Qwen3NextModel(_QwenMtpMixin, Qwen2MoeModel)`: Qwen's mixture with gated linear attention
/// (Gated DeltaNet) in three layers of four, zero-centred norms and prediction layers.
pub(crate) struct Qwen3Next;

impl TextModel for Qwen3Next {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen2Moe)
    }

    fn block_count(&self, hp: &crate::config::Hparams, names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + mtp_layers(hp, names)?)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        mtp_filter(cx, name)
    }

    /// Qwen 2 MoE's keys, the prediction layers, the linear attention's sizes, which layers
    /// are linear and the rotated part of each head.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        moe_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let layers = hp.int(&["num_hidden_layers"])?;
        if cx.block_count > layers {
            kv.u32(&k("nextn_predict_layers"), (cx.block_count - layers) as u32);
        }
        let need = |key: &str| hp.int(&[key]);
        kv.u32(
            &k("ssm.conv_kernel"),
            need("linear_conv_kernel_dim")? as u32,
        );
        kv.u32(&k("ssm.state_size"), need("linear_key_head_dim")? as u32);
        kv.u32(&k("ssm.group_count"), need("linear_num_key_heads")? as u32);
        kv.u32(
            &k("ssm.time_step_rank"),
            need("linear_num_value_heads")? as u32,
        );
        let inner = need("linear_value_head_dim")? * need("linear_num_value_heads")?;
        kv.u32(&k("ssm.inner_size"), inner as u32);
        if let Some(types) = hp.map.get("layer_types").filter(|v| !v.is_null()) {
            let types = types
                .as_array()
                .ok_or_else(|| Error::field(&hp.path, "layer_types", "not a list"))?;
            if types.len() as u64 != layers {
                return Err(Error::reference(format!(
                    "ValueError: layer_types has {} entries, expected num_hidden_layers ({layers})",
                    types.len()
                )));
            }
            let mut recurrent: Vec<bool> = types
                .iter()
                .map(|t| t.as_str() == Some("linear_attention"))
                .collect();
            recurrent.resize(cx.block_count as usize, false);
            kv.bools(&k("attention.recurrent_layers"), recurrent);
        }
        let interval = hp.opt_int(&["full_attention_interval"])?.unwrap_or(4);
        kv.u32(&k("full_attention_interval"), interval as u32);
        let head = base::head_dim(hp)? as f64;
        let rope = (head * base::partial_rotary_or(cx, 0.25)) as u32;
        kv.u32(&k("rope.dimension_count"), rope);
        Ok(())
    }

    /// `A_log` as `-exp(A_log)`, `dt_bias` named `dt_proj.bias`, the convolution squeezed,
    /// the zero-centred norms (not the linear attention's own) plus one; the fused
    /// `in_proj_qkvz`, stored `[q, k, v, z]` a key head, cut into q, k and v then z, each
    /// part's heads together.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut change = Rearrange::default();
        let mut name = name.to_owned();
        if name.ends_with(".A_log") {
            change.neg_exp = true;
        } else if let Some(stem) = name.strip_suffix(".dt_bias") {
            name = format!("{stem}.dt_proj.bias");
        } else if name.contains("conv1d") {
            change.squeeze = true;
        } else if name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight") {
            change.add = 1.0;
        }
        if name.contains("in_proj_qkvz.weight") {
            return qkvz(cx, &name, shape);
        }
        let mut out = Qwen2Moe.modify_tensors(cx, &name, shape)?;
        for (_, c) in &mut out {
            c.neg_exp |= change.neg_exp;
            c.squeeze |= change.squeeze;
            c.add += change.add;
        }
        Ok(out)
    }
}

/// Qwen3-Next's `in_proj_qkvz` as `attn_qkv` (every key head's q, then k, then v) and
/// `attn_gate` (z). A tensor whose rows are not the config's heads is refused: the
/// reference's reshape would take other rows for the heads.
fn qkvz(cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
    let hp = cx.hp();
    let need = |key: &str| hp.int(&[key]);
    let (hk, hv) = (need("linear_key_head_dim")?, need("linear_value_head_dim")?);
    let (nk, nv) = (
        need("linear_num_key_heads")?,
        need("linear_num_value_heads")?,
    );
    if nk == 0 || nv % nk != 0 {
        return Err(Error::field(
            &hp.path,
            "linear_num_value_heads",
            format!("{nv} value heads are not a multiple of {nk} key heads"),
        ));
    }
    let v = nv / nk * hv;
    let sizes = [hk, hk, v, v];
    let rows = shape.first().copied().unwrap_or(0);
    if shape.len() != 2 || rows != nk * (2 * hk + 2 * v) {
        return Err(Error::field(
            &hp.path,
            "linear_num_key_heads",
            format!(
                "{name} is {shape:?}: its rows are not {nk} key heads of q, k ({hk} rows each), \
                 v and z ({v} rows each)"
            ),
        ));
    }
    let bid = base::block_of(name);
    let part = |t: crate::tables::Tensor, from: u8, to: u8| {
        let count = nk * sizes[from as usize..to as usize].iter().sum::<u64>();
        let change = Rearrange {
            named: true,
            rows: Some((0, count)),
            order: base::Order::Segments {
                heads: nk,
                sizes,
                from,
                to,
            },
            ..Rearrange::default()
        };
        (crate::names::format_name(t, bid, ".weight"), change)
    };
    Ok(vec![
        part(crate::tables::Tensor::ATTN_QKV, 0, 3),
        part(crate::tables::Tensor::ATTN_GATE, 3, 4),
    ])
}

/// `_LinearAttentionVReorderBase(Qwen3NextModel)` with `_Qwen35MRopeMixin`: Qwen 3.5 and 3.6,
/// dense (`qwen35`) and mixtures (`qwen35moe`), whose linear attention stores q/k/v, z, a
/// and b apart; where value heads outnumber key heads, the value heads are reordered from
/// grouped by key head to tiled, in every tensor that has them.
pub(crate) struct Qwen35;

impl TextModel for Qwen35 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen3Next)
    }

    /// Qwen3-Next's keys, and interleaved M-RoPE sections always (`[11, 11, 10, 0]` where the
    /// config gives none).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Qwen3Next.set_gguf_parameters(cx, kv)?;
        if !cx.rope().contains_key("mrope_section") {
            kv.i32s(&cx.key("rope.dimension_sections"), vec![11, 11, 10, 0]);
        }
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut out = Qwen3Next.modify_tensors(cx, name, shape)?;
        if let Some((rows, cols)) = v_reorder(cx, name, shape)? {
            for (_, c) in &mut out {
                c.order = rows;
                c.cols = cols;
            }
        }
        Ok(out)
    }
}

/// `_LinearAttentionVReorderBase.modify_tensors`' reordering of a linear-attention tensor's
/// value heads, `[key head, value head of it, dim]` → `[value head of it, key head, dim]`,
/// as an order of its rows and one of its columns; `None` where nothing moves.
fn v_reorder(cx: &Ctx, name: &str, shape: &[u64]) -> Result<Option<(base::Order, base::Order)>> {
    let hp = cx.hp();
    let nk = hp.opt_int(&["linear_num_key_heads"])?.unwrap_or(0);
    let nv = hp.opt_int(&["linear_num_value_heads"])?.unwrap_or(0);
    if nk == 0 || nv == 0 || nk == nv || !name.contains("linear_attn.") {
        return Ok(None);
    }
    let (hk, hv) = (
        hp.int(&["linear_key_head_dim"])?,
        hp.int(&["linear_value_head_dim"])?,
    );
    let swapped = |skip: u64, block: u64| base::Order::Swapped {
        skip,
        outer: nk,
        inner: nv / nk,
        block,
    };
    let stored = base::Order::Stored;
    let qk = 2 * hk * nk;
    Ok(Some(if name.contains(".in_proj_qkv.") {
        (swapped(qk, hv), stored)
    } else if name.contains(".in_proj_z.") {
        (swapped(0, hv), stored)
    } else if name.contains(".in_proj_b.") || name.contains(".in_proj_a.") {
        (swapped(0, 1), stored)
    } else if name.contains(".A_log") || name.contains(".dt_bias") || name.contains(".dt_proj") {
        match shape.len() {
            1 => (swapped(0, 1), stored),
            _ => (stored, swapped(0, 1)),
        }
    } else if name.contains(".conv1d") {
        (swapped(qk, hv), stored)
    } else if name.contains(".out_proj.") {
        (stored, swapped(0, hv))
    } else {
        return Ok(None);
    }))
}

/// `MiniCPMV4_6TextModel(Qwen3_5TextModel)`: `MiniCPMV4_6ForConditionalGeneration`'s text
/// half, Qwen 3.5 without its merger and its prediction layers' tensors (the config's count
/// still makes blocks of them, as the reference counts them).
pub(crate) struct MiniCpmV46;

impl TextModel for MiniCpmV46 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Qwen35)
    }

    /// The checkpoint's prediction layers are dropped before they are counted: only the
    /// config's count makes blocks.
    fn block_count(&self, hp: &crate::config::Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + mtp_layers(hp, &[])?)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("model.merger.") || name.starts_with("mtp") {
            return None;
        }
        mtp_filter(cx, name)
    }
}
