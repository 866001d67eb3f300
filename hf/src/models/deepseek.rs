//! `conversion/deepseek.py` (`DeepseekV2Model`: DeepSeek V2, V3 and Youtu; `DeepseekV32Model`).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables;
use serde_json::Value;

/// `DeepseekV2Model`: `DeepseekV2ForCausalLM`, `DeepseekV3ForCausalLM`. Latent attention
/// (MLA) written as one kv head of `kv_lora_rank + qk_rope_head_dim`, its `kv_b_proj` split
/// into `k_b` and `v_b`; routed and shared experts; the multi-token-prediction layers left out.
pub(crate) struct DeepseekV2;

/// `hparams.get(key, default)`: the value where present (a null refused: the reference
/// would write None), `default` where absent.
fn int_or(hp: &Hparams, key: &str, default: u64) -> Result<u64> {
    match hp.map.get(key) {
        None => Ok(default),
        Some(_) => hp.int(&[key]),
    }
}

/// Qwen's layout counted by `n_routed_experts` (DeepSeek's and GLM-4.5's).
pub(crate) fn routed_experts() -> Experts {
    Experts {
        count_keys: &["n_routed_experts"],
        marker: "mlp.experts",
        packed: &[],
        ..super::qwen::qwen_experts()
    }
}

/// `DeepseekV2Model`'s filter and `modify_tensors`' skips: the OCR models' vision towers, the
/// tied output, and (with `skip_mtp`) the prediction layers past `num_hidden_layers`.
pub(crate) fn filter(cx: &Ctx, name: &str, skip_mtp: bool) -> Option<String> {
    if name.contains("sam_model") || name.contains("qwen2_model") {
        return None;
    }
    let hp = cx.hp();
    let tied = hp.map.get("tie_word_embeddings").and_then(Value::as_bool) == Some(true);
    if tied && (name == "lm_head.weight" || name == "model.lm_head.weight") {
        return None;
    }
    if skip_mtp && base::past_trunk(hp, name) {
        return None;
    }
    base::filter_tensors(name)
}

impl TextModel for DeepseekV2 {
    /// `DEEPSEEK2OCR` for the OCR models (full multi-head attention).
    fn arch(&self, hp: &Hparams, line: &'static tables::ArchTable) -> &'static tables::ArchTable {
        match ocr(hp) {
            true => &tables::DEEPSEEK2OCR,
            false => line,
        }
    }

    /// The OCR models' plain chat template (a tokenizer's own replaces it).
    fn init_keys(&self, cx: &Ctx, early: &mut Kv) -> Result<()> {
        if ocr(cx.hp()) {
            early.string("tokenizer.chat_template", OCR_TEMPLATE);
        }
        Ok(())
    }

    /// The OCR models' vision towers, the tied output and the prediction layers (blocks past
    /// `num_hidden_layers`) are left out.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        filter(cx, name, true)
    }

    /// `TextModel`'s keys as if one kv head (and an RMS epsilon of 1e-6 where none is given),
    /// then the latent attention's widths and the mixture's keys.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        deepseek2_keys(cx, kv, ocr(cx.hp()))
    }

    /// `kv_b_proj` cut with the config's kv heads ([`split_kv_b`]).
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if !name.ends_with("kv_b_proj.weight") {
            return base::yield_as(name, Rearrange::default());
        }
        let hp = cx.hp();
        let heads = hp.int(&["num_key_value_heads"])?;
        let geometry = (hp.int(&["qk_nope_head_dim"])?, hp.int(&["v_head_dim"])?);
        split_kv_b(name, shape, heads, geometry, "num_key_value_heads")
    }

    fn experts(&self) -> Option<Experts> {
        Some(routed_experts())
    }

    /// GPT-2's BPE (the reference's tiktoken fallback, Kimi K2's, is not read yet).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}

/// `DeepseekV2Model.set_gguf_parameters`; `ocr` for the OCR models' (`DEEPSEEK2OCR`: their
/// own kv heads, no latent attention's widths, a sliding window where the config names one).
fn deepseek2_keys(cx: &Ctx, kv: &mut Kv, ocr: bool) -> Result<()> {
    let mut hp = cx.hp().clone();
    // The OCR models' `rope_theta` default (10000) is set after `__init__` read the RoPE
    // parameters: it writes nothing, and is left out here.
    if !ocr {
        hp.map.insert("num_key_value_heads".into(), 1.into());
    }
    if !hp.map.contains_key("rms_norm_eps") {
        hp.map.insert("rms_norm_eps".into(), 1e-6.into());
    }
    let cx = cx.with_hparams(&hp);
    base::set_gguf_parameters(&cx, kv)?;
    let k = |s: &str| cx.key(s);
    let has_moe = hp.opt_int(&["n_routed_experts"])?.is_some();
    let dense = match hp.opt_int(&["first_k_dense_replace"])? {
        Some(n) => n,
        None if has_moe => 0,
        None => hp.int(&["num_hidden_layers"])?,
    };
    kv.u32(&k("leading_dense_block_count"), dense as u32);
    kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
    if let Some(q_lora) = hp.opt_int(&["q_lora_rank"])? {
        kv.u32(&k("attention.q_lora_rank"), q_lora as u32);
    }
    let rope = hp.int(&["qk_rope_head_dim"])?;
    // `hparams.get("kv_lora_rank", 512)`, read (a null refused) where it is written
    if !ocr {
        let kv_lora = int_or(&hp, "kv_lora_rank", 512)?;
        let nope = hp.int(&["qk_nope_head_dim"])?;
        kv.u32(&k("attention.kv_lora_rank"), kv_lora as u32);
        kv.u32(&k("attention.key_length"), (kv_lora + rope) as u32);
        kv.u32(&k("attention.value_length"), kv_lora as u32);
        kv.u32(&k("attention.key_length_mla"), (nope + rope) as u32);
        let v = hp.int(&["v_head_dim"])?;
        kv.u32(&k("attention.value_length_mla"), v as u32);
    }
    let ff = hp.int(&["moe_intermediate_size", "intermediate_size"])?;
    kv.u32(&k("expert_feed_forward_length"), ff as u32);
    if let Some(n) = hp.opt_int(&["n_routed_experts"])? {
        kv.u32(&k("expert_count"), n as u32);
    }
    kv.u32(
        &k("expert_shared_count"),
        int_or(&hp, "n_shared_experts", 0)? as u32,
    );
    if let Some(scale) = hp.opt_float(&["routed_scaling_factor"])? {
        kv.f32(&k("expert_weights_scale"), scale);
    }
    if hp.opt_bool(&["norm_topk_prob"])? == Some(true) {
        kv.bool(&k("expert_weights_norm"), true);
    }
    kv.u32(&k("rope.dimension_count"), rope as u32);
    if ocr {
        let window = ["sliding_window_size", "sliding_window"]
            .iter()
            .filter_map(|key| hp.map.get(*key))
            .find(|v| crate::vocab::truthy(v));
        if let Some(w) = window {
            kv.u32(
                &k("attention.sliding_window"),
                base::u32_of(&hp, "sliding_window", w)?,
            );
        }
    }
    if let Some(m) = cx.rope().get("mscale_all_dim").filter(|v| !v.is_null()) {
        let m = m
            .as_f64()
            .ok_or_else(|| Error::field(&hp.path, "rope_scaling.mscale_all_dim", "not a number"))?;
        kv.f32(&k("rope.scaling.yarn_log_multiplier"), 0.1 * m);
    }
    Ok(())
}

/// The chat template `__init__` writes for the OCR models (a tokenizer's own replaces it).
const OCR_TEMPLATE: &str = "{% for m in messages %}{{m['content']}}{% endfor %}";

/// `__init__`'s `origin_hf_arch` test: the config's own class (`load_hparams`' top level, not
/// the text config's, which picks the class) is an OCR model's, written as `DEEPSEEK2OCR`.
fn ocr(hp: &Hparams) -> bool {
    let class = hp
        .raw
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str);
    matches!(
        class,
        Some("DeepseekOCRForCausalLM" | "DeepseekOCR2ForCausalLM" | "UnlimitedOCRForCausalLM")
    )
}

/// `DeepseekV2Model` on `KimiK25ForConditionalGeneration` and `KimiVLForConditionalGeneration`:
/// the text half (`language_model.`) of Kimi K2.5/K2.6 and Kimi-VL, their towers and
/// projectors left out.
pub(crate) struct KimiMultimodal;

impl TextModel for KimiMultimodal {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    /// Kimi K2.5 as transformers 5 saves it (`save_original_format`), which renames more
    /// than it loaded: the text layers `language_model.model.blocks.N` for the published
    /// `language_model.model.layers.N`, the projector's norm `model.mm_projector.` and the
    /// patch embedding `vision_tower.encoder.patch_embed.` (the reference maps none of them).
    fn published_name(&self, name: &str) -> Option<String> {
        [
            (
                "language_model.model.blocks.",
                "language_model.model.layers.",
            ),
            ("model.mm_projector.", "mm_projector."),
            (
                "vision_tower.encoder.patch_embed.",
                "vision_tower.patch_embed.",
            ),
        ]
        .iter()
        .find_map(|(from, to)| name.strip_prefix(from).map(|rest| format!("{to}{rest}")))
    }
}

/// `DeepseekV32Model(DeepseekV2Model)`: `DeepseekV32ForCausalLM` (DeepSeek V3.2). DeepSeek V3
/// with the sparse attention's indexer; the prediction layers kept and counted as blocks.
pub(crate) struct DeepseekV32;

impl TextModel for DeepseekV32 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        filter(cx, name, false)
    }

    /// GPT-2's BPE, of a tokenizer that adds its bos (the reference asserts it).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let config = cx.dir.json("tokenizer_config.json")?;
        let adds = config
            .as_deref()
            .and_then(|c| c.get("add_bos_token"))
            .is_some_and(crate::vocab::truthy);
        if !adds {
            return Err(Error::reference(
                "AssertionError: Change value of add_bos_token to true in tokenizer_config.json file.",
            ));
        }
        base::gpt2(cx, kv)
    }

    /// DeepSeek V2's keys, then the prediction layers (where the config names them) and the
    /// indexer's heads, width and top k.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        DeepseekV2.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        if let Some(n) = hp.opt_int(&["num_nextn_predict_layers"])? {
            kv.u32(&k("nextn_predict_layers"), n as u32);
        }
        indexer_keys(cx, kv)
    }
}

/// The sparse attention indexer's heads, width and top k (DeepSeek V3.2, GLM-5).
pub(crate) fn indexer_keys(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    for (key, name) in [
        ("index_n_heads", "attention.indexer.head_count"),
        ("index_head_dim", "attention.indexer.key_length"),
        ("index_topk", "attention.indexer.top_k"),
    ] {
        kv.u32(&cx.key(name), hp.int(&[key])? as u32);
    }
    Ok(())
}

/// `DeepseekModel`: `DeepseekForCausalLM` (DeepSeek-MoE, V1). Llama's attention (q/k permuted)
/// with dense leading layers, then experts with shared ones; SentencePiece where there is a
/// model, else GPT-2's BPE.
pub(crate) struct DeepseekV1;

impl TextModel for DeepseekV1 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_or_gpt2(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("rope.dimension_count"), base::head_dim(hp)? as u32);
        kv.string(&k("rope.scaling.type"), "none");
        for (key, name) in [
            ("first_k_dense_replace", "leading_dense_block_count"),
            ("vocab_size", "vocab_size"),
            ("moe_intermediate_size", "expert_feed_forward_length"),
        ] {
            kv.u32(&k(name), hp.int(&[key])? as u32);
        }
        kv.f32(&k("expert_weights_scale"), 1.0);
        kv.u32(&k("expert_count"), hp.int(&["n_routed_experts"])? as u32);
        kv.u32(
            &k("expert_shared_count"),
            hp.int(&["n_shared_experts"])? as u32,
        );
        Ok(())
    }

    /// Llama's q/k permutation, weights and biases.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::qk_permuted_by(
            cx,
            name,
            true,
            &["num_attention_heads"],
            &["num_key_value_heads"],
        )
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["n_routed_experts"],
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}

/// Latent attention's `kv_b_proj` (`[heads · (nope + v), kv_lora_rank]`) cut per head into
/// `k_b` (transposed: `[heads, kv_lora_rank, nope]`) and `v_b` (`[heads, v, kv_lora_rank]`),
/// for `(nope, v)` = `geometry`; `heads_field` names where the head count came from when the
/// rows do not match it (the reference's assertion).
pub(crate) fn split_kv_b(
    name: &str,
    shape: &[u64],
    heads: u64,
    (nope, v): (u64, u64),
    heads_field: &str,
) -> Yields {
    let [rows, lora] = shape[..] else {
        return Err(Error::reference(format!(
            "{name} is {shape:?}, not a matrix"
        )));
    };
    if rows != heads * (v + nope) {
        return Err(Error::reference(format!(
            "{name} has {rows} rows, not {heads_field} × (v_head_dim + qk_nope_head_dim) = \
             {heads} × {} (assert data_torch.shape[0] == ...)",
            v + nope
        )));
    }
    let head = (v + nope) * lora;
    let k_b = View {
        offset: 0,
        axes: [(heads, head), (lora, 1), (nope, lora)],
        three: true,
    };
    let v_b = View {
        offset: nope * lora,
        axes: [(heads, head), (v, lora), (lora, 1)],
        three: true,
    };
    Ok(vec![
        (name.replace("kv_b_proj", "k_b_proj"), k_b.alone()),
        (name.replace("kv_b_proj", "v_b_proj"), v_b.alone()),
    ])
}
