//! `conversion/llama.py`.

use super::base::{self, Ctx, Rearrange, ScalarKey, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use crate::vocab;
use serde_json::Value;

/// `LlamaModel`: `LlamaForCausalLM`, `MistralForCausalLM`, …
pub(crate) struct Llama;

impl TextModel for Llama {
    /// SmolVLM2's text model has no `num_attention_heads`: 32.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        if class == "VLlama3ForCausalLM" && !hp.map.contains_key("num_attention_heads") {
            hp.map.insert("num_attention_heads".into(), 32.into());
        }
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(&name.replace("text_model.", ""))
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        base::vocab_and_rope_keys(cx, kv)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        // The bare model's names are the causal model's without `model.`.
        let name = match cx.class {
            "LlamaModel" => format!("model.{name}"),
            _ => name.to_owned(),
        };
        base::permuted(&name, permutation(cx, &name)?)
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        llama3_rope_freqs(cx, 8.0)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
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
    if name.contains("block_sparse_moe.experts") {
        return Err(Error::not_yet(format!(
            "{name}: Mixtral's experts are not converted yet"
        )));
    }
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
