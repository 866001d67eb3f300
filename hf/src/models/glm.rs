//! `conversion/glm.py`: GLM-4, GLM-4.5 and its kin (Solar Open), GLM-4.7-Flash.

use super::base::{self, Ctx, Experts, Order, Rearrange, TextModel, Yields};
use super::deepseek::{self, DeepseekV2};
use crate::config::Hparams;
use crate::error::Result;
use crate::kv::Kv;
use crate::vocab::SpecialVocab;

/// `Glm4Model`: `Glm4ForCausalLM`.
pub(crate) struct Glm4;

impl TextModel for Glm4 {
    /// `TextModel`'s keys, then the rotated share of a head (`partial_rotary_factor`, by
    /// default a half).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let pct = base::partial_rotary_or(cx, 0.5);
        let dim = base::head_dim(cx.hp())?;
        kv.u32(&cx.key("rope.dimension_count"), (dim as f64 * pct) as u32);
        Ok(())
    }

    /// With M-RoPE (GLM-4V: `mrope_section` in the RoPE parameters), q and k (weights and
    /// biases) with each head's rotated pairs made halves, the NeoX order llama.cpp's M-RoPE
    /// takes.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let qk = [
            "q_proj.weight",
            "q_proj.bias",
            "k_proj.weight",
            "k_proj.bias",
        ];
        let rope = cx.rope();
        if !rope.contains_key("mrope_section") || !qk.iter().any(|e| name.ends_with(e)) {
            return base::yield_as(name, Rearrange::default());
        }
        let head_dim = base::head_dim(cx.hp())?;
        let rotary = (head_dim as f64 * base::partial_rotary_or(cx, 0.5)) as u64;
        let change = Rearrange {
            order: Order::NeoxHeads { head_dim, rotary },
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    /// GPT-2's BPE, then the end of text (eos, unk, bos) and `<|user|>` (eot) by their ids
    /// among the tokenizer's added tokens, each where the tokenizer files name none.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let added = base::added_vocab(cx)?;
        let (end, user) = (
            base::added_id(&added, "<|endoftext|>")?,
            base::added_id(&added, "<|user|>")?,
        );
        base::gpt2_tokens(cx, kv)?;
        let mut special = SpecialVocab::load(cx.dir, None, true)?;
        for (typ, i) in [("eos", end), ("eot", user), ("unk", end), ("bos", end)] {
            special.set_special(typ, i);
        }
        special.add_to(kv)
    }
}

/// `GlmOCRModel(Glm4Model)`: `GlmOcrForConditionalGeneration`'s text half. GLM-4 with its
/// prediction layers counted as blocks and their number written.
pub(crate) struct GlmOcr;

impl TextModel for GlmOcr {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Glm4)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        let nextn = hp.opt_int(&["num_nextn_predict_layers"])?.unwrap_or(0);
        Ok(hp.int(&["num_hidden_layers"])? + nextn)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        Glm4.set_gguf_parameters(cx, kv)?;
        if let Some(n) = cx.hp().opt_int(&["num_nextn_predict_layers"])? {
            kv.u32(&cx.key("nextn_predict_layers"), n as u32);
        }
        Ok(())
    }
}

/// `TextModel._set_vocab_glm`: GPT-2's BPE with its merges, then bos `[gMASK]`, eot
/// `<|user|>`, unk `<|endoftext|>` and eom `<|observation|>` by their ids among the added
/// tokens, each where the tokenizer files name none.
pub(crate) fn glm_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    gpt2_with_added_specials(
        cx,
        kv,
        &[
            ("bos", "[gMASK]"),
            ("eot", "<|user|>"),
            ("unk", "<|endoftext|>"),
            ("eom", "<|observation|>"),
        ],
    )
}

/// GPT-2's BPE with its merges, then each special token `(type, token)` by its id among the
/// added tokens (in that order), where the tokenizer files name none.
pub(crate) fn gpt2_with_added_specials(
    cx: &Ctx,
    kv: &mut Kv,
    specials: &[(&str, &str)],
) -> Result<()> {
    let added = base::added_vocab(cx)?;
    base::gpt2_tokens(cx, kv)?;
    let mut special = SpecialVocab::load(cx.dir, None, true)?;
    for (typ, token) in specials {
        special.set_special(typ, base::added_id(&added, token)?);
    }
    special.add_to(kv)
}

/// `Glm4MoeModel`: `Glm4MoeForCausalLM` (GLM-4.5, 4.6, 4.7).
pub(crate) struct Glm4Moe;

impl TextModel for Glm4Moe {
    /// The next-token-prediction layers count as blocks (`--no-mtp` is not offered).
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        let n = hp.int(&["n_layers", "num_hidden_layers", "n_layer", "num_layers"])?;
        Ok(n + base::nextn_layers(hp)?)
    }

    /// `TextModel`'s keys, then the rotated share of a head, the mixture's keys (its gating
    /// always sigmoid) and the prediction layers.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        // GLM-4's: `TextModel`'s keys and the rotated share of a head
        Glm4.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let counts = [
            ("n_routed_experts", "expert_count"),
            ("moe_intermediate_size", "expert_feed_forward_length"),
            ("n_shared_experts", "expert_shared_count"),
            ("first_k_dense_replace", "leading_dense_block_count"),
        ];
        for (field, key) in counts {
            if let Some(n) = hp.opt_int(&[field])? {
                kv.u32(&k(key), n as u32);
            }
        }
        kv.u32(&k("expert_gating_func"), 2);
        if let Some(scale) = hp.opt_float(&["routed_scaling_factor"])? {
            kv.f32(&k("expert_weights_scale"), scale);
        }
        if let Some(norm) = hp.opt_bool(&["norm_topk_prob"])? {
            kv.bool(&k("expert_weights_norm"), norm);
        }
        if let Some(n) = hp.opt_int(&["num_nextn_predict_layers"])? {
            kv.u32(&k("nextn_predict_layers"), n as u32);
        }
        Ok(())
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let name = match name {
            "model.embed_tokens.weight" => "token_embd.weight",
            _ => name,
        };
        base::yield_as(name, Rearrange::default())
    }

    fn experts(&self) -> Option<Experts> {
        Some(deepseek::routed_experts())
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        glm_vocab(cx, kv)
    }
}

/// `SolarOpenModel(Glm4MoeModel)`: `SolarOpenForCausalLM` (Solar Open). GLM-4.5's model; its
/// vocabulary GPT-2's BPE with eos and eot `<|endoftext|>`, unk `<unk>` and bos
/// `<|startoftext|>` by their ids among the added tokens, each where the tokenizer files name
/// none.
pub(crate) struct SolarOpen;

impl TextModel for SolarOpen {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Glm4Moe)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        gpt2_with_added_specials(
            cx,
            kv,
            &[
                ("eos", "<|endoftext|>"),
                ("eot", "<|endoftext|>"),
                ("unk", "<unk>"),
                ("bos", "<|startoftext|>"),
            ],
        )
    }
}

/// `Glm4MoeLiteModel(DeepseekV2Model)`: `Glm4MoeLiteForCausalLM` (GLM-4.7-Flash). DeepSeek's
/// latent attention and experts with GLM's vocabulary; its prediction layers are kept, counted
/// in the blocks and in `nextn_predict_layers`, where the config has any.
pub(crate) struct Glm4MoeLite;

impl TextModel for Glm4MoeLite {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        deepseek::filter(cx, name, base::nextn_layers(cx.hp()).unwrap_or(0) == 0)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        glm_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        DeepseekV2.set_gguf_parameters(cx, kv)?;
        let n = base::nextn_layers(cx.hp())?;
        if n > 0 {
            kv.u32(&cx.key("nextn_predict_layers"), n as u32);
        }
        Ok(())
    }
}

/// `GlmMoeDsaModel(DeepseekV2Model)`: `GlmMoeDsaForCausalLM` (GLM-5). DeepSeek V3.2's
/// attention and experts with GLM's vocabulary; the prediction block kept and counted, the
/// rotated width scaled by `partial_rotary_factor`, the indexer's keys.
pub(crate) struct GlmMoeDsa;

impl TextModel for GlmMoeDsa {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        deepseek::filter(cx, name, false)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        glm_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        DeepseekV2.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let rope = hp.int(&["qk_rope_head_dim"])? as f64;
        let pct = base::partial_rotary_or(cx, 1.0);
        kv.u32(&k("rope.dimension_count"), (rope * pct) as u32);
        if let Some(n) = hp.opt_int(&["num_nextn_predict_layers"])? {
            kv.u32(&k("nextn_predict_layers"), n as u32);
        }
        deepseek::indexer_keys(cx, kv)?;
        if let Some(types) = hp.map.get("indexer_types").filter(|v| !v.is_null()) {
            let full = types
                .as_array()
                .ok_or_else(|| crate::error::Error::field(&hp.path, "indexer_types", "not a list"))?
                .iter()
                .map(|t| t.as_str() == Some("full"))
                .collect();
            kv.bools(&k("attention.indexer.types"), full);
        }
        Ok(())
    }
}
