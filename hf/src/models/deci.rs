//! `conversion/deci.py` (DeciLM, and NVIDIA's Nemotron models made of searched blocks).

use super::base::{self, Ctx, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `DeciModel`: `DeciLMForCausalLM`.
pub(crate) struct Deci;

/// Each block's attention heads, kv heads and feed-forward width from `block_configs`
/// (Llama-3.1-Nemotron-51B and its successors): an attention replaced by a linear layer keeps
/// its heads and has no kv heads, an attention-free block has neither, a block without a
/// feed-forward multiplier has no feed-forward.
struct Blocks {
    heads: Vec<u64>,
    kv_heads: Vec<u64>,
    ffn: Vec<u64>,
}

fn blocks(cx: &Ctx) -> Result<Option<Blocks>> {
    let hp = cx.hp();
    let Some(configs) = hp.map.get("block_configs") else {
        return Ok(None);
    };
    let bad = |m: String| Error::field(&hp.path, "block_configs", m);
    let configs = configs.as_array().ok_or_else(|| bad("not a list".into()))?;
    if configs.len() as u64 != cx.block_count {
        return Err(bad(format!(
            "{} blocks, the model has {}",
            configs.len(),
            cx.block_count
        )));
    }
    let n_head = hp.int(&["num_attention_heads"])?;
    let n_embd = hp.int(&["hidden_size"])?;
    let mut out = Blocks {
        heads: Vec::new(),
        kv_heads: Vec::new(),
        ffn: Vec::new(),
    };
    for (il, c) in configs.iter().enumerate() {
        let attn = c
            .get("attention")
            .ok_or_else(|| bad(format!("block {il} has no attention")))?;
        match attn.get("n_heads_in_group").filter(|v| !v.is_null()) {
            None => {
                let linear = attn.get("replace_with_linear") == Some(&Value::Bool(true));
                out.kv_heads.push(0);
                out.heads.push(if linear { n_head } else { 0 });
            }
            Some(g) => {
                let g = g
                    .as_u64()
                    .filter(|g| *g > 0)
                    .ok_or_else(|| bad(format!("block {il}: n_heads_in_group {g}")))?;
                out.kv_heads.push(n_head / g);
                out.heads.push(n_head);
            }
        }
        let mult = match c.get("ffn").and_then(|f| f.get("ffn_mult")) {
            None | Some(Value::Null) => 0.0,
            Some(m) => m
                .as_f64()
                .ok_or_else(|| bad(format!("block {il}: ffn_mult {m}")))?,
        };
        // int(2 * ffn_mult * n_embd / 3), rounded up to a multiple of 256
        let width = (2.0 * mult * n_embd as f64 / 3.0) as u64;
        out.ffn.push(width.div_ceil(256) * 256);
    }
    Ok(Some(out))
}

fn i32s(hp: &Hparams, what: &str, v: &[u64]) -> Result<Vec<i32>> {
    v.iter()
        .map(|&n| {
            i32::try_from(n).map_err(|_| Error::field(&hp.path, what, format!("{n} too large")))
        })
        .collect()
}

impl TextModel for Deci {
    /// Searched blocks: their own keys, per-block heads, kv heads and feed-forward widths;
    /// DeciLM-7B: `TextModel`'s keys with per-layer kv heads. Then the vocabulary size and the
    /// rotated width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        if let Some(b) = blocks(cx)? {
            if let Some(t) = cx.rope().get("rope_theta").and_then(Value::as_f64) {
                kv.f32(&k("rope.freq_base"), t);
            }
            kv.i32s(
                &k("attention.head_count_kv"),
                i32s(hp, "block_configs", &b.kv_heads)?,
            );
            kv.i32s(
                &k("attention.head_count"),
                i32s(hp, "block_configs", &b.heads)?,
            );
            kv.i32s(
                &k("feed_forward_length"),
                i32s(hp, "block_configs", &b.ffn)?,
            );
            kv.u32(&k("block_count"), cx.block_count as u32);
            kv.u32(
                &k("context_length"),
                hp.int(&["max_position_embeddings"])? as u32,
            );
            let n_embd = hp.int(&["hidden_size"])?;
            kv.u32(&k("embedding_length"), n_embd as u32);
            kv.f32(
                &k("attention.layer_norm_rms_epsilon"),
                hp.float(&["rms_norm_eps"])?,
            );
            let head = n_embd / hp.int(&["num_attention_heads"])?.max(1);
            kv.u32(&k("attention.key_length"), head as u32);
            kv.u32(&k("attention.value_length"), head as u32);
            kv.u32("general.file_type", cx.file_type);
        } else {
            base::set_gguf_parameters(cx, kv)?;
            if let Some(list) = hp.map.get("num_key_value_heads_per_layer") {
                let per_layer = kv_per_layer(hp, list)?;
                if per_layer.len() as u64 != cx.block_count {
                    return Err(Error::field(
                        &hp.path,
                        "num_key_value_heads_per_layer",
                        format!(
                            "{} layers, the model has {}",
                            per_layer.len(),
                            cx.block_count
                        ),
                    ));
                }
                let v = i32s(hp, "num_key_value_heads_per_layer", &per_layer)?;
                kv.i32s(&k("attention.head_count_kv"), v);
            }
        }
        base::vocab_and_rope_keys(cx, kv)
    }

    /// Llama's q/k permutation (weights and biases), with each block's own head counts.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let Some(proj) = base::qk_projection(name, true) else {
            return base::permuted(name, None);
        };
        let mut n_head = hp.int(&["num_attention_heads"])?;
        let mut n_kv = hp.opt_int(&["num_key_value_heads"])?;
        if let Some(bid) = base::block_of(name).map(|b| b as usize) {
            if let Some(list) = hp.map.get("num_key_value_heads_per_layer") {
                n_kv = kv_per_layer(hp, list)?.get(bid).copied();
            } else if let Some(b) = blocks(cx)? {
                n_kv = b.kv_heads.get(bid).copied();
                n_head = b.heads.get(bid).copied().unwrap_or(n_head);
            }
        }
        let heads = match (proj, n_kv) {
            (base::Proj::K, Some(kv)) => kv,
            _ => n_head,
        };
        base::permuted(name, Some(heads))
    }

    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        super::llama::llama3_rope_freqs(cx, 8.0)
    }

    /// Llama 3's BPE where the vocabulary has its size (128256, also the default), else the
    /// llama-hf reading (DeciLM-7B).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        match cx.hp().opt_int(&["vocab_size"])?.unwrap_or(128256) {
            128256 => base::gpt2(cx, kv),
            _ => base::llama_hf(cx, kv),
        }
    }
}

fn kv_per_layer(hp: &Hparams, list: &Value) -> Result<Vec<u64>> {
    list.as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect())
        .ok_or_else(|| {
            Error::field(
                &hp.path,
                "num_key_value_heads_per_layer",
                "not a list of counts",
            )
        })
}
