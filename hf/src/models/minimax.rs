//! `conversion/minimax.py`.

use super::base::{self, Ctx, Experts, Force, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use ggufrw::quant::GgmlType;
use serde_json::Value;

/// `MiniMaxM2Model`: `MiniMaxM2ForCausalLM`.
pub(crate) struct MiniMaxM2;

impl TextModel for MiniMaxM2 {
    /// `TextModel`'s keys, then the experts' width (`intermediate_size`) and the rotated
    /// width (`rotary_dim`), both required.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let ff = hp.int(&["intermediate_size"])?;
        kv.u32(&cx.key("expert_feed_forward_length"), ff as u32);
        kv.u32(
            &cx.key("rope.dimension_count"),
            hp.int(&["rotary_dim"])? as u32,
        );
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(minimax_experts())
    }
}

/// Mixtral's expert names (`w1` gate, `w2` down, `w3` up), stacked under
/// `block_sparse_moe.experts.{w}` in that order, counted by `num_local_experts` or
/// `num_experts` (MiniMax-M2's and Kimi Linear's).
pub(crate) fn minimax_experts() -> Experts {
    Experts {
        count_keys: &["num_local_experts", "num_experts"],
        marker: "block_sparse_moe.experts.",
        unless: "",
        packed: &[],
        expert: "model.layers.{bid}.block_sparse_moe.experts.{xid}.{w}.weight",
        merged: "model.layers.{bid}.block_sparse_moe.experts.{w}.weight",
        weights: &["w1", "w2", "w3"],
    }
}

/// `MiniMaxM3Model(MiniMaxM2Model)`: `MiniMaxM3SparseForCausalLM` and the text half of
/// `MiniMaxM3SparseForConditionalGeneration`.
pub(crate) struct MiniMaxM3;

impl TextModel for MiniMaxM3 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&MiniMaxM2)
    }

    /// M2's keys, then the shared experts, the routing's scale (its weights always
    /// normalised), the sparse attention's indexer (`sparse_attention_config`) and the dense
    /// lead: the zeros leading `moe_layer_freq`.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        MiniMaxM2.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(
            &k("expert_shared_count"),
            base::int32(hp, &["n_shared_experts"])?,
        );
        kv.f32(
            &k("expert_weights_scale"),
            hp.float(&["routed_scaling_factor"])?,
        );
        kv.bool(&k("expert_weights_norm"), true);
        let field = "sparse_attention_config";
        let sac = hp
            .find(&[field])
            .and_then(Value::as_object)
            .ok_or_else(|| Error::field(&hp.path, field, "missing, or not an object"))?;
        for (from, to) in [
            ("sparse_num_index_heads", "head_count"),
            ("sparse_index_dim", "key_length"),
            ("sparse_topk_blocks", "top_k"),
            ("sparse_block_size", "block_size"),
            ("sparse_local_block", "local_blocks"),
        ] {
            let v = sac
                .get(from)
                .ok_or_else(|| Error::field(&hp.path, format!("{field}.{from}"), "missing"))?;
            let v = base::u32_of(hp, &format!("{field}.{from}"), v)?;
            kv.u32(&k(&format!("attention.indexer.{to}")), v);
        }
        let field = "moe_layer_freq";
        let freq = hp
            .find(&[field])
            .and_then(Value::as_array)
            .ok_or_else(|| Error::field(&hp.path, field, "missing, or not a list"))?;
        let dense = freq.iter().take_while(|v| v.as_f64() == Some(0.0)).count();
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        Ok(())
    }

    /// Norms stored as `weight - 1` (Gemma's), one added to every `*norm.weight`.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    /// The indexer's tensors kept F32.
    fn tensor_force_quant(
        &self,
        _cx: &Ctx,
        _name: &str,
        new_name: &str,
        _bid: Option<u64>,
        _n_dims: usize,
    ) -> Option<Force> {
        new_name
            .contains(".indexer.")
            .then_some(Force::Type(GgmlType::F32))
    }
}

/// `MiniMaxText01Model`: `MiniMaxText01ForCausalLM`, `MiniMaxM1ForCausalLM` (MiniMax-Text-01,
/// MiniMax-M1). Lightning (linear) attention on most layers beside softmax attention, experts
/// in every layer; the added tokens whose embeddings are zero suppressed; the bundled chat
/// template written where the folder has no `chat_template.jinja`.
pub(crate) struct MiniMaxText01;

/// The template the reference ships for these models.
const M1_TEMPLATE: &str = "MiniMax-M1.jinja";

/// `_get_suppress_tokens`: the rows of `model.embed_tokens.weight` past the tokenizer's own
/// vocabulary (its added tokens) that are all zero, read from the part
/// `model.safetensors.index.json` names.
fn suppress_tokens(cx: &Ctx) -> Result<Vec<i32>> {
    let embed = "model.embed_tokens.weight";
    let index = cx.dir.file("model.safetensors.index.json");
    let map = cx
        .dir
        .json("model.safetensors.index.json")?
        .ok_or_else(|| Error::reference(format!("FileNotFoundError: {}", index.display())))?;
    map.get("weight_map")
        .and_then(|m| m.get(embed))
        .ok_or_else(|| Error::field(&index, format!("weight_map.{embed}"), "missing"))?;
    let base = crate::bpe::engine(cx.dir)?.get_vocab_size(false) as u64;
    let ckpt = crate::safetensors::open_checkpoint(&cx.dir.path)?;
    let e = ckpt
        .entries
        .iter()
        .find(|e| e.name == embed)
        .ok_or_else(|| Error::field(&index, format!("weight_map.{embed}"), "not in the parts"))?;
    let (rows, width) = match e.shape[..] {
        [rows, width] => (rows, width),
        _ => return Err(Error::field(&index, embed, "not a matrix")),
    };
    let size = e.dtype.size() as u64;
    let bytes = ckpt.bytes(e);
    let row_bytes = (width * size) as usize;
    let mut out = Vec::new();
    for r in base..rows {
        let row = &bytes[r as usize * row_bytes..(r as usize + 1) * row_bytes];
        // a float is zero (either sign) when every bit but the sign is
        let zero = row.chunks(size as usize).all(|x| {
            let (last, rest) = x.split_last().expect("a float has bytes");
            rest.iter().all(|&b| b == 0) && last & 0x7f == 0
        });
        if zero {
            out.push(r as i32);
        }
    }
    Ok(out)
}

impl TextModel for MiniMaxText01 {
    /// GPT-2's BPE, then the chat template of `chat_template.jinja`, else the bundled one.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)?;
        let own = cx.dir.file("chat_template.jinja");
        let text = match own.is_file() {
            true => std::fs::read_to_string(&own).map_err(|e| Error::io(&own, e))?,
            false => crate::tables::BUNDLED_TEMPLATES
                .iter()
                .find(|(name, _)| *name == M1_TEMPLATE)
                .map(|(_, text)| (*text).to_owned())
                .expect("the tables hold the bundled templates"),
        };
        kv.string("tokenizer.chat_template", &text);
        Ok(())
    }

    /// `TextModel`'s keys, the suppressed tokens, the residual scale (the norms' alpha, every
    /// alpha equal and every beta 1, as the reference asserts) and the rotated width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let suppress = suppress_tokens(cx)?;
        if !suppress.is_empty() {
            kv.i32s("tokenizer.ggml.suppress_tokens", suppress);
        }
        let hp = cx.hp();
        let f = |key: &str| hp.float(&[key]);
        let alphas = [
            f("layernorm_full_attention_alpha")?,
            f("layernorm_linear_attention_alpha")?,
            f("layernorm_mlp_alpha")?,
        ];
        let betas = [
            f("layernorm_full_attention_beta")?,
            f("layernorm_linear_attention_beta")?,
            f("layernorm_mlp_beta")?,
        ];
        if alphas.iter().any(|a| *a != alphas[0]) || betas.iter().any(|b| *b != 1.0) {
            return Err(Error::reference(format!(
                "AssertionError: the layer norms' alphas {alphas:?} are not all equal, or their \
                 betas {betas:?} not all 1.0"
            )));
        }
        kv.f32(&cx.key("residual_scale"), alphas[0]);
        kv.u32(
            &cx.key("rope.dimension_count"),
            base::int32(hp, &["rotary_dim"])?,
        );
        Ok(())
    }

    /// Mixtral's names, stacked under `layers.{bid}.feed_forward.experts`.
    fn experts(&self) -> Option<Experts> {
        Some(super::llama::mixtral_experts())
    }
}
