//! `conversion/llama.py`.

use super::base::{self, Ctx, Experts, LateInt, Rearrange, ScalarKey, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::model_dir::ModelDir;
use crate::names::format_name;
use crate::tables::{self, ArchTable, Tensor};
use crate::vocab;
use serde_json::{Map, Value};

/// `LlamaModel`: `LlamaForCausalLM`, `MistralForCausalLM`, …
pub(crate) struct Llama;

impl TextModel for Llama {
    /// SmolVLM2's text model has no `num_attention_heads`: 32.
    /// SmolVLM2's missing head count; a speculators draft's (`Eagle3Speculator`) layer
    /// config lifted to the top, as `index_tensors` lifts it.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        if let Some(Value::Object(layer)) = hp.map.get("transformer_layer_config").cloned() {
            hp.map.extend(layer);
        }
        if class == "VLlama3ForCausalLM" && !hp.map.contains_key("num_attention_heads") {
            hp.map.insert("num_attention_heads".into(), 32.into());
        }
    }

    /// An EAGLE-3 draft (`draft_vocab_size`, one layer) is written as `eagle3`.
    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        match is_eagle3(hp) {
            true => &tables::EAGLE3,
            false => line,
        }
    }

    /// An EAGLE-3 draft's: which target layers it reads, their width, and where its norms go.
    fn init_keys(&self, cx: &Ctx, early: &mut Kv) -> Result<()> {
        if !is_eagle3(cx.hp()) {
            return Ok(());
        }
        let target = eagle3_target(cx)?;
        let raw = cx.dir.json("config.json")?.unwrap_or_default();
        let target_config = merged_text_config(target)?;
        let path = target.file("config.json");
        let count = |k: &str| {
            target_config
                .get(k)
                .and_then(Value::as_i64)
                .ok_or_else(|| Error::field(&path, k, "missing or not a count"))
        };
        let layers: Vec<i32> = match raw
            .get("eagle_aux_hidden_state_layer_ids")
            .filter(|v| vocab::truthy(v))
        {
            Some(ids) => ids
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_i64().map(|x| x as i32)).collect())
                .ok_or_else(|| {
                    Error::field(
                        &cx.hp().path,
                        "eagle_aux_hidden_state_layer_ids",
                        "not a list of layer numbers",
                    )
                })?,
            None => {
                let n = count("num_hidden_layers")? as i32;
                vec![2, n / 2, n - 3]
            }
        };
        early.i32s(&cx.key("target_layers"), layers);
        let width = match raw.get("target_hidden_size").filter(|v| !v.is_null()) {
            Some(v) => base::u32_of(cx.hp(), "target_hidden_size", v)?,
            None => u32::try_from(count("hidden_size")?)
                .map_err(|_| Error::field(&path, "hidden_size", "not a 32-bit count"))?,
        };
        early.u32(&cx.key("target_hidden_size"), width);
        let flag = |k: &str| raw.get(k).is_some_and(vocab::truthy);
        early.bool(
            &cx.key("norm_before_residual"),
            flag("norm_before_residual"),
        );
        early.bool(&cx.key("norm_before_fc"), flag("norm_before_fc"));
        Ok(())
    }

    /// An EAGLE-3 draft's one layer (`midlayer.`, or the speculators' `layers.0.`) is
    /// named as layer 0 of the model.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = match is_eagle3(cx.hp()) {
            true => match (
                name.strip_prefix("midlayer."),
                name.strip_prefix("layers.0."),
            ) {
                (Some(rest), _) | (None, Some(rest)) => format!("model.layers.0.{rest}"),
                _ => name.to_owned(),
            },
            false => name.to_owned(),
        };
        base::filter_tensors(&name.replace("text_model.", ""))
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::vocab_and_rope_keys(cx, kv)
    }

    /// `d2t`, the draft-to-target token map, as absolute target ids.
    fn late_int64(&self, cx: &Ctx, name: &str) -> Option<LateInt> {
        (name == "d2t" && is_eagle3(cx.hp())).then(|| LateInt {
            name: "d2t".to_owned(),
            values: d2t_values,
        })
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if is_eagle3(cx.hp()) {
            if let Some(yields) = eagle3_tensor(name) {
                return yields;
            }
        }
        llama_tensor(cx, name, shape)
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        llama3_rope_freqs(cx, 8.0)
    }

    /// Mixtral's (`block_sparse_moe.experts.{xid}.w{1,2,3}`), counted by `num_local_experts`
    /// alone.
    fn experts(&self) -> Option<Experts> {
        Some(mixtral_experts())
    }

    /// An EAGLE-3 draft's is its target's (read with the draft's config).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if is_eagle3(cx.hp()) {
            let target = eagle3_target(cx)?;
            return llama_vocab(&Ctx { dir: target, ..*cx }, kv);
        }
        llama_vocab(cx, kv)
    }
}

/// Mixtral's experts (`block_sparse_moe.experts.{xid}.w{1,2,3}`), counted by
/// `num_local_experts` alone and stacked under `layers.{bid}.feed_forward.experts` (Arctic's
/// and MiniMax-01's too).
pub(crate) fn mixtral_experts() -> Experts {
    Experts {
        count_keys: &["num_local_experts"],
        marker: "block_sparse_moe.experts",
        unless: "",
        packed: &[],
        expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{w}.weight",
        merged: "layers.{bid}.feed_forward.experts.{w}.weight",
        weights: &["w1", "w2", "w3"],
    }
}

/// `LlamaModel.modify_tensors` but EAGLE-3's: Llama's q/k permutation.
fn llama_tensor(cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
    // The bare model's names are the causal model's without `model.`.
    let name = match cx.class {
        "LlamaModel" => format!("model.{name}"),
        _ => name.to_owned(),
    };
    base::permuted(&name, permutation(cx, &name)?)
}

/// Whether `LlamaModel.__init__` takes the config for an EAGLE-3 draft.
fn is_eagle3(hp: &Hparams) -> bool {
    hp.map.contains_key("draft_vocab_size")
        && hp.map.get("num_hidden_layers").and_then(Value::as_i64) == Some(1)
}

/// The target's folder, which an EAGLE-3 draft needs.
fn eagle3_target<'a>(cx: &Ctx<'a>) -> Result<&'a ModelDir> {
    cx.target.ok_or_else(|| {
        Error::reference(
            "ValueError: EAGLE-3 model requires --target-model-dir to be specified. Please \
             provide the path to the target model directory to read config.json",
        )
    })
}

/// A folder's `config.json` as written, with its `text_config` laid over it.
fn merged_text_config(dir: &ModelDir) -> Result<Map<String, Value>> {
    let path = dir.file("config.json");
    let config = dir
        .json("config.json")?
        .ok_or_else(|| Error::io(&path, std::io::ErrorKind::NotFound.into()))?;
    let mut map = config.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(text)) = config.get("text_config") {
        map.extend(text.clone());
    }
    Ok(map)
}

/// An EAGLE-3 draft's own tensors: the fused target features' projection (kept under its
/// own name), their norm, the hidden-state norm; the target-to-draft map is dropped.
fn eagle3_tensor(name: &str) -> Option<Yields> {
    let named = |n: String| {
        let change = Rearrange {
            named: true,
            ..Rearrange::default()
        };
        base::yield_as(&n, change)
    };
    match name {
        "fc.weight" => Some(named(name.to_owned())),
        "input_norm.weight" => Some(named(format_name(Tensor::ENC_OUTPUT_NORM, None, ".weight"))),
        "t2d" => Some(Ok(Vec::new())),
        _ if name.ends_with(".hidden_norm.weight") => Some(named(format_name(
            Tensor::ATTN_NORM_2,
            base::block_of(name),
            ".weight",
        ))),
        _ => None,
    }
}

/// `d2t` as absolute target ids: each entry plus its index, every one inside the target's
/// vocabulary and none twice.
fn d2t_values(cx: &Ctx, stored: Vec<i64>) -> Result<Vec<i64>> {
    let target = eagle3_target(cx)?;
    let vocab_size = merged_text_config(target)?
        .get("vocab_size")
        .and_then(Value::as_i64)
        .ok_or_else(|| Error::field(&target.file("config.json"), "vocab_size", "missing"))?;
    base::absolute_ids(&stored, vocab_size, "EAGLE-3 ")
}

/// `LlamaModel.set_vocab` on `cx`'s folder.
fn llama_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    if let Some(tc) = cx.dir.json("tokenizer_config.json")? {
        if let Some(v) = tc.get("add_prefix_space").filter(|v| !v.is_null()) {
            kv.bool("tokenizer.ggml.add_space_prefix", vocab::truthy(v));
        }
        if tc.get("tokenizer_class").and_then(Value::as_str) == Some("HybridDNATokenizer") {
            return Err(Error::not_yet(
                "HybridDNATokenizer vocabularies are not converted yet",
            ));
        }
    }
    if cx.dir.has("tekken.json") && !cx.dir.has("tokenizer.json") {
        return Err(Error::not_yet(
            "Mistral tekken vocabularies are not converted yet",
        ));
    }
    if !base::sentencepiece(cx, kv)? {
        if llama_hf_style(cx)? {
            base::llama_hf(cx, kv)?;
        } else {
            base::gpt2(cx, kv)?;
        }
    }
    let vocab_size = cx.hp().opt_int(&["vocab_size"])?.unwrap_or(32000);
    if vocab_size == 32016 {
        return Err(Error::not_yet(
            "CodeLlama's infill tokens are not written yet",
        ));
    }
    if vocab_size == 49152 {
        kv.bool("tokenizer.ggml.add_bos_token", false);
    }
    Ok(())
}

/// `ArceeModel(LlamaModel)`.
pub(crate) struct Arcee;

impl TextModel for Arcee {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Llama.set_gguf_parameters(cx, kv)?;
        base::pooling(cx, kv)
    }
}

/// `ApertusModel(LlamaModel)`: no q/k permutation (`undo_permute = False`), and the xIELU
/// activation's parameters written as one array key each instead of as tensors.
pub(crate) struct Apertus;

impl TextModel for Apertus {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::yield_as(name, Rearrange::default())
    }

    fn scalar_key(&self, _cx: &Ctx, name: &str) -> Option<ScalarKey> {
        [
            (".act_fn.alpha_n", "xielu.alpha_n"),
            (".act_fn.alpha_p", "xielu.alpha_p"),
            (".act_fn.beta", "xielu.beta"),
            (".act_fn.eps", "xielu.eps"),
        ]
        .into_iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|(_, key)| ScalarKey::PerBlock(key))
    }
}

/// The head count of `LlamaModel.permute` for a q or k projection.
fn permutation(cx: &Ctx, name: &str) -> Result<Option<u64>> {
    let hp = cx.hp();
    let n_head = hp.int(&["n_heads", "num_attention_heads"])?;
    let n_kv = hp.int(&["n_kv_heads", "num_key_value_heads"])?;
    if name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias") {
        return Ok(Some(n_head));
    }
    if name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias") {
        return Ok(Some(if n_kv != n_head { n_kv } else { n_head }));
    }
    Ok(None)
}

/// Whether `LlamaHfVocab` takes the tokenizer (a BPE model with byte fallback and a sequence
/// decoder, not Llama 3's).
fn llama_hf_style(cx: &Ctx) -> Result<bool> {
    let Some(t) = cx.dir.json("tokenizer.json")? else {
        return Ok(false);
    };
    let model = t.get("model").cloned().unwrap_or(Value::Null);
    let bpe = model.get("type").and_then(Value::as_str) == Some("BPE");
    let flag = |k: &str, d: bool| model.get(k).map(vocab::truthy).unwrap_or(d);
    let llama3 = bpe && flag("ignore_merges", false) && !flag("byte_fallback", true);
    if llama3 {
        return Ok(false);
    }
    let sequence = t
        .get("decoder")
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        == Some("Sequence");
    Ok(bpe && flag("byte_fallback", false) && sequence)
}

/// `rope_freqs.weight` where the RoPE type is `llama3` (`factor` defaulting to
/// `default_factor`), as `LlamaModel.generate_extra_tensors` makes it.
pub(crate) fn llama3_rope_freqs(cx: &Ctx, default_factor: f64) -> Result<Vec<(String, Vec<f32>)>> {
    let params = base::rope_params(&cx.rope());
    let is_llama3 = params
        .get("rope_type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.to_lowercase() == "llama3");
    if params.is_empty() || !is_llama3 {
        return Ok(Vec::new());
    }
    let f = |k: &str, d: f64| params.get(k).and_then(Value::as_f64).unwrap_or(d);
    let hp = cx.hp();
    let dim = match hp.opt_int(&["head_dim"])? {
        Some(d) => d,
        None => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
    };
    let out = llama3_factors(
        f("rope_theta", 10000.0),
        dim,
        f("factor", default_factor),
        f("low_freq_factor", 1.0),
        f("high_freq_factor", 4.0),
        f("original_max_position_embeddings", 8192.0),
    );
    Ok(vec![(base::extra_name(Tensor::ROPE_FREQS), out)])
}

/// Llama 3's RoPE factors (`rope_freqs.weight`), one per pair of a head's dimensions, as
/// `LlamaModel.generate_extra_tensors` computes them.
pub(crate) fn llama3_factors(
    base: f64,
    dim: u64,
    factor: f64,
    low: f64,
    high: f64,
    old: f64,
) -> Vec<f32> {
    let low_wavelen = old / low;
    let high_wavelen = old / high;
    let steps = (high - low) as f32;
    // torch computes in float32 throughout: Python numbers meeting a float32 tensor are
    // cast to float32 (comparisons too), and a number divided by a tensor is the tensor's
    // reciprocal times the number (`Tensor.__rtruediv__`).
    let (factor, low, old) = (factor as f32, low as f32, old as f32);
    let (low_wavelen, high_wavelen) = (low_wavelen as f32, high_wavelen as f32);
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    let base32 = base as f32;
    let mut out = Vec::new();
    for i in (0..dim).step_by(2) {
        let exponent = i as f32 / dim as f32;
        let freq = 1.0f32 / base32.powf(exponent);
        let wavelen = (1.0 / freq) * two_pi;
        let v = if wavelen < high_wavelen {
            1.0
        } else if wavelen > low_wavelen {
            factor
        } else {
            let smooth = ((1.0 / wavelen) * old - low) / steps;
            1.0 / ((1.0 - smooth) / factor + smooth)
        };
        out.push(v);
    }
    out
}

/// `Llama4Model(LlamaModel)`: `Llama4ForCausalLM` and the text half of
/// `Llama4ForConditionalGeneration` (Llama 4); no q/k permutation,
/// GPT-2's BPE, experts stored packed and transposed.
pub(crate) struct Llama4;

impl TextModel for Llama4 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    /// `intermediate_size` is the experts' width and `intermediate_size_mlp` the dense
    /// layers': the reference swaps them back.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        Llama.init_hparams(class, hp);
        let moe = hp.map.get("intermediate_size").cloned();
        if let (Some(moe), Some(mlp)) = (moe, hp.map.get("intermediate_size_mlp").cloned()) {
            hp.map.insert("intermediate_size_moe".into(), moe);
            hp.map.insert("intermediate_size".into(), mlp);
        }
    }

    /// Llama's keys, then the interleaving of expert layers, the experts' width, and no
    /// sliding window where every layer attends fully.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        if !hp.map.contains_key("intermediate_size_moe") {
            return Err(Error::field(&hp.path, "intermediate_size_mlp", "missing"));
        }
        Llama.set_gguf_parameters(cx, kv)?;
        let step = hp.int(&["interleave_moe_layer_step"])?;
        kv.u32(&cx.key("interleave_moe_layer_step"), step as u32);
        let ff = hp.int(&["intermediate_size_moe"])?;
        kv.u32(&cx.key("expert_feed_forward_length"), ff as u32);
        if let Some(Value::Array(types)) = hp.map.get("layer_types") {
            if types.iter().all(|t| t.as_str() == Some("full_attention")) {
                kv.u32(&cx.key("attention.sliding_window"), 0);
            }
        }
        Ok(())
    }

    /// The experts' `gate_up_proj` (`[experts, hidden, 2·ffn]`) transposed and cut into gate
    /// and up; their `down_proj` (`[experts, ffn, hidden]`) transposed.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let packed = || match shape[..] {
            [n, rows, cols] => Ok((n, rows, cols)),
            _ => Err(Error::reference(format!(
                "{name} is {shape:?}, not the packed experts' shape"
            ))),
        };
        if name.contains("gate_up_proj") {
            let (n, hidden, two_ff) = packed()?;
            let ff = two_ff / 2;
            let half = |offset| View {
                offset,
                axes: [(n, hidden * two_ff), (ff, 1), (hidden, two_ff)],
                three: true,
            };
            return Ok(vec![
                (
                    name.replace("gate_up_proj", "gate_proj.weight"),
                    half(0).alone(),
                ),
                (
                    name.replace("gate_up_proj", "up_proj.weight"),
                    half(ff).alone(),
                ),
            ]);
        }
        if name.ends_with("down_proj") {
            let (n, ff, hidden) = packed()?;
            let t = View::transposed(n, ff, hidden);
            return base::yield_as(&format!("{name}.weight"), t.alone());
        }
        base::yield_as(name, Rearrange::default())
    }

    /// None stored one by one.
    fn experts(&self) -> Option<Experts> {
        None
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}

/// `JanusProModel(LlamaModel)`: `JanusForConditionalGeneration`'s text half (Janus-Pro), its
/// vision encoder, aligners, image tokenizer and generation head left out.
pub(crate) struct JanusPro;

impl TextModel for JanusPro {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        const SKIPPED: [&str; 6] = [
            "model.vision_model.",
            "model.aligner.",
            "model.vqmodel.",
            "model.generation_embeddings.",
            "model.generation_aligner.",
            "model.generation_head.",
        ];
        if SKIPPED.iter().any(|p| name.starts_with(p)) {
            return None;
        }
        Llama.filter_tensors(cx, name)
    }
}

/// `Sarashina2VLTextModel(LlamaModel)`: `Sarashina2VisionForCausalLM`'s text half, stored under
/// `llm.`; a top-level `norm.` is the vision side's.
pub(crate) struct Sarashina2Vl;

impl TextModel for Sarashina2Vl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Llama)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if let Some(rest) = name.strip_prefix("llm.") {
            return Llama.filter_tensors(cx, rest);
        }
        if name.starts_with("norm.") {
            return None;
        }
        Llama.filter_tensors(cx, name)
    }
}

/// `JanusProVisionModel`: Janus-Pro's projector (its SigLIP tower, the aligner's layers as
/// the projector's; the image generation's parts left out).
pub(crate) struct JanusProVision;

impl TextModel for JanusProVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&super::mmproj::VISION)
    }

    /// `intermediate_size` from `mlp_ratio` where the config gives only the ratio.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        super::mmproj::VISION.init_hparams(class, hp);
        let m = &mut hp.map;
        if !m.contains_key("intermediate_size") {
            let ratio = m.get("mlp_ratio").and_then(Value::as_f64);
            let hidden = m.get("hidden_size").and_then(Value::as_f64);
            if let (Some(r), Some(h)) = (ratio, hidden) {
                // Python's round: halves to even
                m.insert(
                    "intermediate_size".into(),
                    ((h * r).round_ties_even() as i64).into(),
                );
            }
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        super::mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "janus_pro");
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-6);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        super::mmproj::activation_key(hp, kv);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        const GENERATION: [&str; 8] = [
            "model.vqmodel.",
            "vqmodel.",
            "model.generation_embeddings.",
            "generation_embeddings.",
            "model.generation_aligner.",
            "generation_aligner.",
            "model.generation_head.",
            "generation_head.",
        ];
        if GENERATION.iter().any(|p| name.starts_with(p)) {
            return None;
        }
        super::mmproj::VISION.filter_tensors(cx, name)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let aligner = ["model.aligner.", "aligner."]
            .iter()
            .find_map(|p| name.strip_prefix(p));
        if let Some(local) = aligner {
            let suffix = if name.ends_with(".bias") {
                ".bias"
            } else {
                ".weight"
            };
            let index = if local.starts_with("fc1.") {
                0
            } else if let Some(rest) = local.strip_prefix("hidden_layers.") {
                let i = rest.split('.').next().and_then(|i| i.parse::<u64>().ok());
                match (i, rest.contains('.')) {
                    (Some(i), true) => i + 1,
                    _ => {
                        return Err(Error::reference(format!(
                            "ValueError: Unexpected Janus aligner tensor name: {name}"
                        )))
                    }
                }
            } else {
                return Err(Error::reference(format!(
                    "ValueError: Unsupported Janus aligner tensor: {name}"
                )));
            };
            let new_name =
                crate::names::format_name(crate::tables::Tensor::V_MMPROJ, Some(index), suffix);
            return Ok(vec![super::mmproj::named(new_name)]);
        }
        if name.starts_with("model.vision_model.") || name.starts_with("vision_model.") {
            return base::yield_as(name, Rearrange::default());
        }
        Ok(Vec::new())
    }
}
