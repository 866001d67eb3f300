//! `conversion/phi.py`.

use super::base::{self, Ctx, Experts, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab;
use serde_json::Value;

/// `Phi2Model`: `PhiForCausalLM` (phi-1, 1.5 and 2).
pub(crate) struct Phi2;

impl TextModel for Phi2 {
    /// It does not call `TextModel`'s: the feed-forward is 4 × n_embd, every head its own
    /// kv head, no BOS added.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let pct = base::partial_rotary(cx)?;
        let n_embd = hp.int(&["hidden_size", "n_embd"])?;
        let n_head = hp.int(&["num_attention_heads", "n_head"])?;
        if n_head == 0 {
            return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
        }
        kv.u32(
            &k("context_length"),
            hp.int(&["n_positions", "max_position_embeddings"])? as u32,
        );
        kv.u32(&k("embedding_length"), n_embd as u32);
        kv.u32(&k("feed_forward_length"), 4 * n_embd as u32);
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(&k("attention.head_count"), n_head as u32);
        kv.u32(&k("attention.head_count_kv"), n_head as u32);
        kv.f32(
            &k("attention.layer_norm_epsilon"),
            hp.float(&["layer_norm_epsilon", "layer_norm_eps"])?,
        );
        kv.u32(
            &k("rope.dimension_count"),
            ((pct * n_embd as f64) as u64 / n_head) as u32,
        );
        kv.u32("general.file_type", cx.file_type);
        kv.bool("tokenizer.ggml.add_bos_token", false);
        Ok(())
    }
}

/// `Phi3MiniModel`.
pub(crate) struct Phi3;

impl TextModel for Phi3 {
    /// It does not call `TextModel`'s.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let n_embd = hp.int(&["hidden_size", "n_embd"])?;
        let n_head = hp.int(&["num_attention_heads", "n_head"])?;
        let n_head_kv = hp.int(&["num_key_value_heads", "n_head_kv"])?;
        let eps = hp
            .opt_float(&["rms_norm_eps"])?
            .ok_or_else(|| Error::field(&hp.path, "rms_norm_eps", "missing"))?;
        let max_pos = hp.int(&["n_positions", "max_position_embeddings"])?;
        let rope = cx.rope();
        let orig = rope
            .get("original_max_position_embeddings")
            .and_then(Value::as_u64)
            .ok_or_else(|| Error::field(&hp.path, "original_max_position_embeddings", "missing"))?;
        let rot = rope
            .get("partial_rotary_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        if n_head == 0 {
            return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
        }
        let rope_dims = ((rot * n_embd as f64) as u64) / n_head;
        kv.u32(&k("context_length"), max_pos as u32);
        kv.u32(&k("rope.scaling.original_context_length"), orig as u32);
        kv.u32(&k("embedding_length"), n_embd as u32);
        kv.u32(
            &k("feed_forward_length"),
            hp.int(&["intermediate_size"])? as u32,
        );
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(&k("attention.head_count"), n_head as u32);
        kv.u32(&k("attention.head_count_kv"), n_head_kv as u32);
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(&k("rope.dimension_count"), rope_dims as u32);
        let theta = base::rope_params(&rope)
            .get("rope_theta")
            .and_then(Value::as_f64)
            .ok_or_else(|| Error::field(&hp.path, "rope_theta", "missing"))?;
        kv.f32(&k("rope.freq_base"), theta);
        kv.u32("general.file_type", cx.file_type);
        let window = hp.opt_int(&["sliding_window"])?.unwrap_or(0);
        kv.u32(&k("attention.sliding_window"), window as u32);
        Ok(())
    }

    /// Long-context RoPE factors are not written yet (the reference also sets a key before
    /// every other then, which this converter's order does not model).
    fn generate_extra_tensors(&self, cx: &Ctx) -> Result<Vec<(String, Vec<f32>)>> {
        if cx.rope().get("long_factor").is_some_and(vocab::truthy) {
            return Err(Error::not_yet(
                "Phi-3's long-context RoPE factors are not written yet",
            ));
        }
        Ok(Vec::new())
    }

    /// GPT-2's BPE for Phi-4, else its own reading of SentencePiece.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if let Some(c) = cx.dir.json("tokenizer_config.json")? {
            let class = c.get("tokenizer_class").ok_or_else(|| {
                Error::field(
                    &cx.dir.file("tokenizer_config.json"),
                    "tokenizer_class",
                    "missing",
                )
            })?;
            if class.as_str() == Some("GPT2Tokenizer") {
                return base::gpt2(cx, kv);
            }
        }
        let v = vocab::sentencepiece_phi3(cx.dir, cx.hp().opt_int(&["vocab_size"])?)?;
        base::llama_vocab(cx, kv, v)
    }
}

/// `PhiMoeModel(Phi3MiniModel)`: `PhiMoEForCausalLM`, Phi-3 with Mixtral's experts.
pub(crate) struct PhiMoe;

impl TextModel for PhiMoe {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Phi3)
    }

    /// Phi-3's, then the used count before the count.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Phi3.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let used = hp.int(&["num_experts_per_tok", "num_experts_per_token"])?;
        kv.u32(&cx.key("expert_used_count"), used as u32);
        let n = hp.int(&["num_local_experts", "num_experts"])?;
        kv.u32(&cx.key("expert_count"), n as u32);
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_local_experts", "num_experts"],
            marker: "block_sparse_moe.experts",
            unless: "",
            packed: &[],
            expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.block_sparse_moe.experts.{w}.weight",
            weights: &["w1", "w2", "w3"],
        })
    }
}
