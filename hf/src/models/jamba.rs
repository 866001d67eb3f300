//! `conversion/jamba.py` (`JambaModel`: AI21's Jamba, Mamba layers beside attention and
//! experts).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `JambaModel`: `JambaForCausalLM`. Its own keys only (no RoPE: the attention layers have
/// none), kv heads in every `attn_layer_period`-th layer from `attn_layer_offset`, experts in
/// every `expert_layer_period`-th from `expert_layer_offset`; the Mamba layers' `A` stored as
/// `-exp(A_log)` and their convolutions squeezed.
pub(crate) struct Jamba;

impl TextModel for Jamba {
    /// SentencePiece where there is a model, else the fast tokenizer read as Llama's with no
    /// space prefix.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if cx.dir.file("tokenizer.model").is_file() {
            return base::sentencepiece_required(cx, kv);
        }
        base::llama_hf(cx, kv)?;
        kv.bool("tokenizer.ggml.add_space_prefix", false);
        Ok(())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        // `find_hparam(keys, optional=True) or default`: absent, null or zero give the default
        let or = |key: &str, default: u64| -> Result<u64> {
            Ok(match hp.find(&[key]) {
                None | Some(Value::Null) => default,
                Some(_) => Some(hp.int(&[key])?).filter(|&n| n != 0).unwrap_or(default),
            })
        };
        let d_model = hp.int(&["hidden_size", "mamba_d_model"])?;
        let d_conv = or("mamba_d_conv", 4)?;
        let d_inner = hp.int(&["mamba_expand"])? * d_model;
        let d_state = or("mamba_d_state", 16)?;
        let dt_rank = or("mamba_dt_rank", d_model.div_ceil(16))?;
        let eps = match hp.find(&["layer_norm_epsilon", "rms_norm_eps"]) {
            None | Some(Value::Null) => 1e-6,
            Some(_) => Some(hp.float(&["layer_norm_epsilon", "rms_norm_eps"])?)
                .filter(|&e| e != 0.0)
                .unwrap_or(1e-6),
        };
        let n_kv = hp.int(&["num_key_value_heads"])?;
        let offset = hp.int(&["attn_layer_offset"])?;
        let period = hp.int(&["attn_layer_period"])?;
        if period == 0 {
            return Err(Error::field(&hp.path, "attn_layer_period", "is 0"));
        }
        let heads: Vec<i32> = (0..cx.block_count)
            .map(|i| match i >= offset && (i - offset) % period == 0 {
                true => n_kv as i32,
                false => 0,
            })
            .collect();
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(
            &k("context_length"),
            hp.int(&["max_position_embeddings", "n_ctx"])? as u32,
        );
        kv.u32(&k("embedding_length"), d_model as u32);
        kv.u32(
            &k("feed_forward_length"),
            hp.int(&["intermediate_size"])? as u32,
        );
        kv.u32(
            &k("attention.head_count"),
            hp.int(&["num_attention_heads"])? as u32,
        );
        kv.i32s(&k("attention.head_count_kv"), heads);
        kv.u32(&k("ssm.conv_kernel"), d_conv as u32);
        kv.u32(&k("ssm.inner_size"), d_inner as u32);
        kv.u32(&k("ssm.state_size"), d_state as u32);
        kv.u32(&k("ssm.time_step_rank"), dt_rank as u32);
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(
            &k("expert_count"),
            hp.int(&["num_local_experts", "num_experts"])? as u32,
        );
        kv.u32(
            &k("expert_used_count"),
            hp.int(&["num_experts_per_tok", "num_experts_per_token"])? as u32,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// Mini-Jamba's `.moe.` read as `.feed_forward.`, and a dense layer's lone expert
    /// (`.experts.0.`) as its feed-forward.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = base::filter_tensors(name)?.replace(".moe.", ".feed_forward.");
        let Some(bid) = base::block_of(&name) else {
            return Some(name);
        };
        let hp = cx.hp();
        let offset = hp.opt_int(&["expert_layer_offset"]).ok().flatten();
        let period = hp.opt_int(&["expert_layer_period"]).ok().flatten();
        let moe = match (offset, period) {
            (Some(o), Some(p)) if p > 0 => bid >= o && (bid - o) % p == 0,
            // the reference's KeyError is raised in modify_tensors: keep the name
            _ => true,
        };
        Some(match moe {
            true => name,
            false => name.replace(".experts.0.", "."),
        })
    }

    /// The Mamba layers' convolutions (every name `map_tensor_name` makes `ssm_conv1d.weight`
    /// ends `conv1d.weight`) squeezed, and `A_log` made `A`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if base::block_of(name).is_some() {
            // read for every block's tensor: the reference's KeyError where they are missing
            cx.hp().int(&["expert_layer_offset"])?;
            cx.hp().int(&["expert_layer_period"])?;
        }
        let change = Rearrange {
            squeeze: name.ends_with("conv1d.weight"),
            neg_exp: name.ends_with(".A_log"),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_local_experts", "num_experts"],
            marker: ".feed_forward.experts.",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.feed_forward.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.mlp.experts.{w}.weight",
            weights: &["down_proj", "gate_proj", "up_proj"],
        })
    }
}
