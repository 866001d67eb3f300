//! `conversion/gptneox.py`, `conversion/bloom.py`, `conversion/falcon.py` and
//! `conversion/gpt2.py`: the decoders with a fused q/k/v and LayerNorm with biases.

use super::base::{self, Ctx, Gather, Order, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;

/// `GPTNeoXModel`: Pythia and GPT-NeoX.
pub(crate) struct GptNeoX;

impl TextModel for GptNeoX {
    /// It does not call `TextModel`'s, and writes no kv head count, no RoPE base and no file
    /// type.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let pct = cx.hp().float(&["rotary_pct"])?;
        parallel_keys(cx, kv, pct, None, &["layer_norm_eps"])
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let fused = name.starts_with("gpt_neox.layers.")
            && (name.ends_with(".attention.query_key_value.weight")
                || name.ends_with(".attention.query_key_value.bias"));
        base::yield_as(name, per_head_qkv(cx, fused)?)
    }
}

/// The keys GPT-NeoX's and StableLM's own `set_gguf_parameters` write: the context, width,
/// blocks, feed-forward, the rotated share of a head (`pct`), the heads (and kv heads where
/// given), whether the residual is parallel (by default it is) and the LayerNorm epsilon.
pub(crate) fn parallel_keys(
    cx: &Ctx,
    kv: &mut Kv,
    pct: f64,
    n_kv: Option<u64>,
    eps_keys: &[&str],
) -> Result<()> {
    let hp = cx.hp();
    let n = |key: &str| hp.int(&[key]);
    kv.u32(
        &cx.key("context_length"),
        n("max_position_embeddings")? as u32,
    );
    kv.u32(&cx.key("embedding_length"), n("hidden_size")? as u32);
    kv.u32(&cx.key("block_count"), cx.block_count as u32);
    kv.u32(
        &cx.key("feed_forward_length"),
        n("intermediate_size")? as u32,
    );
    let heads = n("num_attention_heads")?;
    if heads == 0 {
        return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
    }
    kv.u32(
        &cx.key("rope.dimension_count"),
        (pct * (n("hidden_size")? / heads) as f64) as u32,
    );
    kv.u32(&cx.key("attention.head_count"), heads as u32);
    if let Some(k) = n_kv {
        kv.u32(&cx.key("attention.head_count_kv"), k as u32);
    }
    let parallel = match hp.map.get("use_parallel_residual") {
        None => true,
        Some(v) => crate::vocab::truthy(v),
    };
    kv.bool(&cx.key("use_parallel_residual"), parallel);
    kv.f32(&cx.key("attention.layer_norm_epsilon"), hp.float(eps_keys)?);
    Ok(())
}

/// The fused q/k/v stored per head, written as all q, all k, all v.
fn per_head_qkv(cx: &Ctx, fused: bool) -> Result<Rearrange> {
    if !fused {
        return Ok(Rearrange::default());
    }
    let heads = cx.hp().int(&["n_head", "num_attention_heads"])?;
    Ok(Rearrange {
        order: Order::QkvPerHead(heads),
        ..Rearrange::default()
    })
}

/// `BloomModel`: `BloomForCausalLM`, `BloomModel`.
pub(crate) struct Bloom;

impl TextModel for Bloom {
    /// It does not call `TextModel`'s; the context is `seq_length`, else the embedding width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n_embed = hp.int(&["hidden_size", "n_embed"])?;
        let n_head = hp.int(&["n_head", "num_attention_heads"])?;
        let ctx = hp.opt_int(&["seq_length"])?.unwrap_or(n_embed);
        kv.u32(&cx.key("context_length"), ctx as u32);
        base::wide_ffn_keys(cx, kv, n_embed, n_head, n_head)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let name = name.replace("transformer.", "");
        let fused = name.starts_with("h.")
            && name
                .split('.')
                .nth(1)
                .is_some_and(|b| b.bytes().all(|c| c.is_ascii_digit()))
            && (name.ends_with(".self_attention.query_key_value.weight")
                || name.ends_with(".self_attention.query_key_value.bias"));
        base::yield_as(&name, per_head_qkv(cx, fused)?)
    }
}

/// `FalconModel`: `FalconForCausalLM`, `RWForCausalLM`.
pub(crate) struct Falcon;

impl TextModel for Falcon {
    /// It does not call `TextModel`'s: the context is 2048, the feed-forward 4 × hidden.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let (n_head, n_kv) = falcon_heads(cx)?;
        kv.u32(&cx.key("context_length"), 2048);
        kv.string(&cx.key("tensor_data_layout"), "jploski");
        base::wide_ffn_keys(cx, kv, hp.int(&["hidden_size"])?, n_head, n_kv)
    }

    /// The fused q/k/v stored per kv group, written as all q, all k, all v.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if !name.contains("query_key_value") {
            return base::yield_as(name, Rearrange::default());
        }
        let (n_head, n_kv) = falcon_heads(cx)?;
        if shape.len() != 2 || n_kv == 0 || n_head % n_kv != 0 {
            // `view(n_kv, n_head // n_kv + 2, head_dim, hidden)` fails.
            return Err(Error::reference(format!(
                "{name}: shape {shape:?} cannot be viewed as {n_kv} groups of {n_head} heads"
            )));
        }
        let change = Rearrange {
            order: Order::KvGroups {
                kv: n_kv,
                q_per_kv: n_head / n_kv,
            },
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}

/// Falcon's head counts: `num_attention_heads` (or `n_head`), and `num_kv_heads` (or
/// `n_head_kv`, or 1).
fn falcon_heads(cx: &Ctx) -> Result<(u64, u64)> {
    let hp = cx.hp();
    let n_head = hp.int(&["num_attention_heads", "n_head"])?;
    let n_kv = match hp.opt_int(&["num_kv_heads"])? {
        Some(n) => n,
        None => hp.opt_int(&["n_head_kv"])?.unwrap_or(1),
    };
    Ok((n_head, n_kv))
}

/// `GPT2Model`: `GPT2LMHeadModel`.
pub(crate) struct Gpt2;

impl TextModel for Gpt2 {
    /// It does not call `TextModel`'s: the context is `n_ctx`, the feed-forward 4 × n_embd.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let n = |key: &str| hp.int(&[key]);
        kv.u32(&cx.key("block_count"), cx.block_count as u32);
        kv.u32(&cx.key("context_length"), n("n_ctx")? as u32);
        kv.u32(&cx.key("embedding_length"), n("n_embd")? as u32);
        kv.u32(&cx.key("feed_forward_length"), 4 * n("n_embd")? as u32);
        kv.u32(&cx.key("attention.head_count"), n("n_head")? as u32);
        kv.f32(
            &cx.key("attention.layer_norm_epsilon"),
            hp.float(&["layer_norm_epsilon"])?,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// `Conv1D` weights are stored input-major: transposed.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let conv1d = [".c_attn.weight", ".c_proj.weight", ".c_fc.weight"];
        let change = Rearrange {
            transpose: conv1d.iter().any(|s| name.ends_with(s)),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}

/// `RuGPT3XLModel`: `RuGPT3XLForCausalLM`, GPT-2 with separate q, k and v (weights and
/// biases), joined into one.
pub(crate) struct RuGpt3Xl;

impl TextModel for RuGpt3Xl {
    fn gather(&self, _cx: &Ctx, name: &str) -> Option<Gather> {
        let part = ["q", "k", "v"]
            .iter()
            .position(|p| name.contains(&format!(".self_attn.{p}_proj.")))?;
        let bid = base::block_of(name)?;
        let suffix = match name.ends_with(".weight") {
            true => ".weight",
            false => ".bias",
        };
        Some(Gather {
            into: format_name(Tensor::ATTN_QKV, Some(bid), suffix),
            part,
            named: false,
            of: 3,
            stack: false,
            fold: None,
        })
    }
}
