//! `conversion/command_r.py`.

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `CommandR2Model`: `CohereForCausalLM`.
pub(crate) struct CommandR;

impl TextModel for CommandR {
    /// The context is `model_max_length` where the config has it (`__init__`).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let mut changed = hp.clone();
        if let Some(v) = hp.find(&["model_max_length", "max_position_embeddings"]) {
            changed
                .map
                .insert("max_position_embeddings".into(), v.clone());
        }
        let cx = cx.with_hparams(&changed);
        base::set_gguf_parameters(&cx, kv)?;
        kv.f32(&cx.key("logit_scale"), hp.float(&["logit_scale"])?);
        kv.string(&cx.key("rope.scaling.type"), "none");
        Ok(())
    }
}

/// `Cohere2Model`: Command R7B.
pub(crate) struct Cohere2;

impl TextModel for Cohere2 {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.f32(&cx.key("logit_scale"), hp.float(&["logit_scale"])?);
        kv.u32(
            &cx.key("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let pct = hp.float(&["rotary_pct"])?;
        let heads = hp.int(&["num_attention_heads"])?.max(1);
        let dim = (pct * (hp.int(&["hidden_size"])? / heads) as f64) as u32;
        kv.u32(&cx.key("rope.dimension_count"), dim);
        kv.string(&cx.key("rope.scaling.type"), "none");
        Ok(())
    }

    /// The biases are all zero and llama.cpp has none: dropped (refused when not zero).
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let change = Rearrange {
            drop_if_zero: name.ends_with(".bias"),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}

/// `Cohere2MoeModel`: `Cohere2MoeForCausalLM` (Cohere's mixtures). Command R7B's keys and
/// zero biases beside experts stored one by one (`num_experts`), dense leading layers from
/// `mlp_layer_types`, shared experts, prediction layers counted as blocks.
pub(crate) struct Cohere2Moe;

impl TextModel for Cohere2Moe {
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    /// `TextModel`'s keys, then the logit scale, the window and its layers, the mixture's.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let ff = hp.int(&["intermediate_size"])?;
        let dense = match hp.map.get("mlp_layer_types").filter(|t| !t.is_null()) {
            Some(types) => {
                let types = types
                    .as_array()
                    .ok_or_else(|| Error::field(&hp.path, "mlp_layer_types", "not a list"))?;
                types
                    .iter()
                    .position(|t| t.as_str() != Some("dense"))
                    .unwrap_or(types.len()) as u64
            }
            None => hp.opt_int(&["first_k_dense_replace"])?.unwrap_or(0),
        };
        base::set_gguf_parameters(cx, kv)?;
        let k = |s: &str| cx.key(s);
        kv.f32(&k("logit_scale"), hp.float(&["logit_scale"])?);
        kv.u32(
            &k("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        base::sliding_window_pattern(cx, kv)?;
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&k("expert_feed_forward_length"), ff as u32);
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        let norm = hp.opt_bool(&["norm_topk_prob"])?.unwrap_or(false);
        kv.bool(&k("expert_weights_norm"), norm);
        let shared = hp.opt_int(&["num_shared_experts"])?.unwrap_or(0);
        if shared > 0 {
            let how = hp.map.get("shared_expert_combination_strategy");
            if how.is_some_and(|s| s.as_str() != Some("average")) {
                return Err(Error::reference(
                    "ValueError: Cohere2 MoE only supports average shared expert combination",
                ));
            }
            kv.u32(&k("expert_shared_count"), shared as u32);
            kv.u32(
                &k("expert_shared_feed_forward_length"),
                (ff * shared) as u32,
            );
        }
        let n = base::nextn_layers(hp)?;
        if n > 0 {
            kv.u32(&k("nextn_predict_layers"), n as u32);
        }
        kv.u32(&k("rope.dimension_count"), hp.int(&["head_dim"])? as u32);
        kv.string(&k("rope.scaling.type"), "none");
        Ok(())
    }

    /// The biases are all zero and llama.cpp has none: dropped (refused when not zero).
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        Cohere2.modify_tensors(cx, name, shape)
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_experts"],
            marker: "mlp.experts.",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
