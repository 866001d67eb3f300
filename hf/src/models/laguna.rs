//! `conversion/laguna.py`: poolside's Laguna mixtures.

use super::base::{self, Ctx, Experts, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `LagunaModel`: `LagunaForCausalLM`. Per-layer head counts, a gated attention output
/// (per head or per element), sigmoid-routed experts with a shared one after leading dense
/// layers, partial rotation per layer type.
pub(crate) struct Laguna;

/// `_attn_gate_types`: the gate of each layer, `gating_types` over `gating`, and a
/// per-element gate only where `gating` says so as a string.
fn gate_types(hp: &Hparams) -> Result<Vec<&'static str>> {
    let layers = hp.int(&["num_hidden_layers"])? as usize;
    let gating = hp.map.get("gating").filter(|v| !v.is_null());
    let norm = |t: &Value| -> Result<&'static str> {
        let text = t.as_str().unwrap_or_default();
        match text.replace('-', "_").as_str() {
            "per_element" => Ok("per_element"),
            "per_head" => Ok("per_head"),
            _ => Err(Error::reference(format!(
                "Laguna: unrecognised attention gate type {}",
                t
            ))),
        }
    };
    let listed = hp
        .map
        .get("gating_types")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    let types = match (listed, gating) {
        (Some(list), _) => {
            if list.len() != layers {
                return Err(Error::reference(format!(
                    "gating_types length {} != num_hidden_layers {layers}",
                    list.len()
                )));
            }
            list.iter().map(norm).collect::<Result<Vec<_>>>()?
        }
        (None, Some(g @ Value::String(_))) => vec![norm(g)?; layers],
        (None, Some(Value::Bool(true))) => vec!["per_head"; layers],
        (None, g) => {
            return Err(Error::reference(format!(
                "Laguna: cannot determine attention gate type (gating={}, gating_types={})",
                g.map_or("None".into(), Value::to_string),
                hp.map
                    .get("gating_types")
                    .map_or("None".into(), Value::to_string)
            )))
        }
    };
    let declared = matches!(gating, Some(g @ Value::String(_)) if norm(g)? == "per_element");
    if types.contains(&"per_element") && !declared {
        return Err(Error::field(
            &hp.path,
            "gating",
            format!(
                "{}: the config declares a per-element attention gate but `gating` is not the \
                 string \"per-element\"; runtimes that read `gating` would take it as per-head",
                gating.map_or("None".into(), Value::to_string)
            ),
        ));
    }
    Ok(types)
}

/// `num_attention_heads_per_layer`, or `num_attention_heads` for every layer.
fn heads_per_layer(hp: &Hparams) -> Result<Vec<u64>> {
    let layers = hp.int(&["num_hidden_layers"])?;
    match hp
        .map
        .get("num_attention_heads_per_layer")
        .and_then(Value::as_array)
    {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|v| v.as_u64())
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| Error::field(&hp.path, "num_attention_heads_per_layer", "not counts")),
        _ => Ok(vec![hp.int(&["num_attention_heads"])?; layers as usize]),
    }
}

impl TextModel for Laguna {
    /// GPT-2's vocabulary with `</assistant>` a control token; `chat_template.jinja` over
    /// the template `tokenizer_config.json` names; the first end of sequence that is not the
    /// start as the end of turn.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let mut v = crate::bpe::vocab(cx.dir, cx.hp(), cx.tokenizer_pre)?;
        for (tok, ty) in v.tokens.iter().zip(v.types.iter_mut()) {
            if tok == "</assistant>" {
                *ty = crate::vocab::token_type::CONTROL;
            }
        }
        base::gpt2_with(cx, kv, v)?;
        let jinja = cx.dir.file("chat_template.jinja");
        if jinja.is_file() {
            let text = std::fs::read_to_string(&jinja).map_err(|e| Error::io(&jinja, e))?;
            kv.string("tokenizer.chat_template", &text);
        }
        let hp = cx.hp();
        if let Some(Value::Array(eos)) = hp.map.get("eos_token_id") {
            let bos = hp.map.get("bos_token_id");
            if let Some(id) = eos.iter().find(|e| Some(*e) != bos).and_then(Value::as_u64) {
                kv.u32("tokenizer.ggml.eot_token_id", id as u32);
            }
        }
        Ok(())
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let heads = heads_per_layer(hp)?;
        let layers = hp.int(&["num_hidden_layers"])?;
        if heads.len() as u64 != layers {
            return Err(Error::reference(format!(
                "num_attention_heads_per_layer length {} != num_hidden_layers {layers}",
                heads.len()
            )));
        }
        kv.i32s(
            &k("attention.head_count"),
            heads.iter().map(|&h| h as i32).collect(),
        );
        gate_types(hp)?;
        if let Some(n) = hp.opt_int(&["sliding_window"])?.filter(|&n| n > 0) {
            kv.u32(&k("attention.sliding_window"), n as u32);
        }
        let ff = hp.int(&["moe_intermediate_size"])?;
        kv.u32(&k("expert_feed_forward_length"), ff as u32);
        let shared = hp.int(&["shared_expert_intermediate_size"])?;
        kv.u32(&k("expert_shared_feed_forward_length"), shared as u32);
        kv.bool(&k("expert_weights_norm"), true);
        let scale = hp.float(&["moe_routed_scaling_factor"])?;
        kv.f32(&k("expert_weights_scale"), scale);
        kv.u32(&k("expert_gating_func"), 2);
        let types = hp
            .map
            .get("mlp_layer_types")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::reference("KeyError: 'mlp_layer_types'"))?;
        let dense = types
            .iter()
            .take_while(|t| t.as_str() == Some("dense"))
            .count();
        kv.u32(&k("leading_dense_block_count"), dense as u32);
        let head = hp.int(&["head_dim"])? as f64;
        let rope = cx.rope();
        let rotated = |r: &Value| {
            let pct = r.get("partial_rotary_factor").and_then(Value::as_f64);
            (head * pct.unwrap_or(1.0)) as u32
        };
        let full = rope
            .get("full_attention")
            .ok_or_else(|| Error::reference("KeyError: 'full_attention'"))?;
        kv.u32(&k("rope.dimension_count"), rotated(full));
        if let Some(swa) = rope.get("sliding_attention").filter(|v| !v.is_null()) {
            kv.u32(&k("rope.dimension_count_swa"), rotated(swa));
        }
        Ok(())
    }

    /// The attention gate's width must be the declared gate's: a head's, or each element's.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if let (Some(bid), true) = (
            base::block_of(name),
            name.ends_with("self_attn.g_proj.weight"),
        ) {
            let hp = cx.hp();
            let heads = heads_per_layer(hp)?;
            let n_head = heads.get(bid as usize).copied().unwrap_or(0);
            let kind = gate_types(hp)?
                .get(bid as usize)
                .copied()
                .unwrap_or("per_head");
            let want = match kind {
                "per_element" => n_head * hp.int(&["head_dim"])?,
                _ => n_head,
            };
            let rows = shape.first().copied().unwrap_or(0);
            if rows != want {
                return Err(Error::field(
                    &hp.path,
                    "gating",
                    format!(
                        "Laguna layer {bid}: g_proj output width {rows} contradicts the declared \
                         {kind} gate (expected {want}); weights and config disagree."
                    ),
                ));
            }
        }
        base::yield_as(name, Rearrange::default())
    }

    /// Only the numbered experts are stacked, gate, up, down; the routing's bias
    /// (`mlp.experts.e_score_correction_bias`) is a tensor of its own.
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            marker: "mlp.experts.",
            unless: "e_score_correction",
            packed: &[],
            weights: &["gate_proj", "up_proj", "down_proj"],
            ..super::qwen::qwen_experts()
        })
    }
}
