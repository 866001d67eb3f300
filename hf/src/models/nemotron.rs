//! `conversion/nemotron.py` (the dense class and the Mamba-2 hybrids).

use super::base::{self, Ctx, Experts, Rearrange, TextModel, View, Yields};
use super::granite::{hybrid_keys, hybrid_tensor, prefixed_int, GraniteHybrid, Layout};
use crate::config::Hparams;
use crate::error::{Error, Result, Unsupported};
use crate::kv::Kv;
use crate::tables::{self, ArchTable};
use serde_json::Value;

/// `NemotronModel`.
pub(crate) struct Nemotron;

impl TextModel for Nemotron {
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let eps = hp.float(&[
            "layer_norm_eps",
            "layer_norm_epsilon",
            "norm_epsilon",
            "norm_eps",
        ])?;
        kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
        let pct = base::partial_rotary(cx)?;
        let n_embd = hp.int(&["hidden_size", "n_embd"])?;
        let n_head = hp.int(&["num_attention_heads", "n_head"])?.max(1);
        kv.u32(
            &cx.key("rope.dimension_count"),
            ((pct * n_embd as f64) as u64 / n_head) as u32,
        );
        // `hparams.get("factor") or rope_parameters.get("factor")`.
        let rope = cx.rope();
        let factor = hp
            .map
            .get("factor")
            .filter(|v| crate::vocab::truthy(v))
            .or_else(|| rope.get("factor"))
            .filter(|v| !v.is_null())
            .and_then(Value::as_f64);
        match factor {
            None => kv.string(&cx.key("rope.scaling.type"), "none"),
            Some(f) => {
                kv.string(&cx.key("rope.scaling.type"), "linear");
                kv.f32(&cx.key("rope.scaling.factor"), f);
            }
        }
        Ok(())
    }

    /// LayerNorm1p: the norms' weights are stored minus one.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::norms_plus_one(name)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)?;
        kv.u32("tokenizer.ggml.padding_token_id", 0);
        kv.u32("tokenizer.ggml.unknown_token_id", 1);
        Ok(())
    }
}

/// `NemotronHModel(GraniteHybridModel)`: `NemotronHForCausalLM` (Nemotron-H, and as
/// `nemotron_h_moe` where the config has `num_experts_per_tok`: Nemotron 3). Mamba-2,
/// attention and feed-forward (or expert) layers by `hybrid_override_pattern` or
/// `layers_block_type`; Granite's hybrid keys with per-layer feed-forward widths; GPT-2's BPE
/// padded to a multiple of 8.
pub(crate) struct NemotronH;

/// Whether the config makes it the mixture (`nemotron_h_moe`).
fn nemotron_moe(hp: &Hparams) -> bool {
    hp.map.contains_key("num_experts_per_tok")
}

/// The layer pattern: a string of `M`, `*`, `-`, `E`, or a list of layer types.
fn nemotron_pattern(hp: &Hparams) -> Option<&Value> {
    ["hybrid_override_pattern", "layers_block_type"]
        .iter()
        .find_map(|k| hp.map.get(*k).filter(|v| crate::vocab::truthy(v)))
}

/// The layers of `pattern` whose letter is `letter` (a string) or whose type is in `types`.
fn layers_of(hp: &Hparams, pattern: &Value, letter: char, types: &[&str]) -> Result<Vec<u64>> {
    match pattern {
        Value::String(s) => Ok((0..)
            .zip(s.chars())
            .filter(|(_, c)| *c == letter)
            .map(|(i, _)| i)
            .collect()),
        Value::Array(a) => Ok((0..)
            .zip(a)
            .filter(|(_, t)| t.as_str().is_some_and(|t| types.contains(&t)))
            .map(|(i, _)| i)
            .collect()),
        _ => Err(Error::field(
            &hp.path,
            "hybrid_override_pattern",
            "not a string or a list",
        )),
    }
}

/// `__init__`'s layout and the feed-forward (or expert) layers.
fn nemotron_layout(hp: &Hparams, blocks: u64) -> Result<(Layout, Vec<u64>)> {
    let (attn, ssm, mlp) = match nemotron_pattern(hp) {
        None => (Vec::new(), Vec::new(), Vec::new()),
        Some(p) => {
            let len = match p {
                Value::String(s) => s.chars().count(),
                Value::Array(a) => a.len(),
                _ => 0,
            } as u64;
            if len != blocks {
                return Err(Error::reference(format!(
                    "AssertionError: Mismatch between pattern ({len}) and block_count ({blocks})!"
                )));
            }
            let moe = nemotron_moe(hp);
            (
                layers_of(hp, p, '*', &["attention", "full_attention"])?,
                layers_of(hp, p, 'M', &["mamba", "linear_attention"])?,
                layers_of(hp, p, if moe { 'E' } else { '-' }, &["moe"])?,
            )
        }
    };
    let d_model = prefixed_int(hp, &["mamba_head_dim", "hidden_size", "d_model"])?;
    let groups = prefixed_int(hp, &["n_groups", "num_groups"])?;
    let d_inner = prefixed_int(hp, &["num_heads"])? * d_model;
    let layout = Layout {
        attn,
        ssm,
        d_inner,
        groups,
    };
    Ok((layout, mlp))
}

impl TextModel for NemotronH {
    /// A `layers_block_type` gives the layer count.
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        if let Some(Value::Array(types)) = hp.map.get("layers_block_type") {
            let n = types.len();
            hp.map.insert("num_hidden_layers".into(), n.into());
        }
    }

    /// The config's layers; the mixture's prediction layer (which `__init__` adds as a block
    /// and `mtp.` tensors fill) is refused as not yet converted, before anything is read.
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        let nextn = hp.opt_int(&["num_nextn_predict_layers"])?.unwrap_or(0);
        if nemotron_moe(hp) && nextn > 0 {
            return Err(Unsupported::NotYet(format!(
                "{}: num_nextn_predict_layers is {nextn}: Nemotron-H's prediction layer (mtp.) is \
                 not converted yet",
                hp.path.display()
            ))
            .into());
        }
        hp.int(&["n_layers", "num_hidden_layers", "n_layer", "num_layers"])
    }

    fn arch(&self, hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        match nemotron_moe(hp) {
            true => &tables::NEMOTRON_H_MOE,
            false => line,
        }
    }

    /// A PEFT adapter's `model.layers.` (of the mixers) read as `backbone.layers.`, then
    /// Granite's hybrid filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = match name.strip_prefix("model.layers.") {
            Some(rest) if name.contains(".mixer.") => format!("backbone.layers.{rest}"),
            _ => name.to_owned(),
        };
        GraniteHybrid.filter_tensors(cx, &name)
    }

    /// GPT-2's BPE of a vocabulary padded to a multiple of 8.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let size = hp.int(&["vocab_size"])?;
        let mut padded = hp.clone();
        padded
            .map
            .insert("vocab_size".into(), (size.div_ceil(8) * 8).into());
        base::gpt2(&cx.with_hparams(&padded), kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let moe = nemotron_moe(hp);
        let head_dim = hp
            .map
            .get("head_dim")
            .or_else(|| hp.map.get("attention_head_dim"))
            .filter(|v| !v.is_null())
            .ok_or_else(|| Error::reference("Could not find the attention head dim in config"))?
            .clone();
        let (layout, mlp) = nemotron_layout(hp, cx.block_count)?;
        hybrid_keys(cx, kv, &layout)?;
        let k = |s: &str| cx.key(s);
        let head_dim = base::u32_of(hp, "head_dim", &head_dim)?;
        kv.u32(&k("attention.key_length"), head_dim);
        kv.u32(&k("attention.value_length"), head_dim);
        let widths = |n: u64| -> Vec<i32> {
            (0..cx.block_count)
                .map(|i| if mlp.contains(&i) { n as i32 } else { 0 })
                .collect()
        };
        if !moe {
            let n_ff = prefixed_int(hp, &["intermediate_size", "n_inner", "hidden_dim"])?;
            kv.i32s(&k("feed_forward_length"), widths(n_ff));
            return Ok(());
        }
        let int = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
        let moe_ff = hp.int(&["moe_intermediate_size"])?;
        kv.i32s(&k("feed_forward_length"), widths(moe_ff));
        kv.u32(&k("expert_used_count"), int("num_experts_per_tok")?);
        kv.u32(&k("expert_feed_forward_length"), moe_ff as u32);
        mixture_keys(cx, kv)?;
        if let Some(latent) = hp.opt_int(&["moe_latent_size"])? {
            kv.u32(&k("moe_latent_size"), latent as u32);
        }
        Ok(())
    }

    /// In the mixture, the Mamba tensors, routing bias and experts by name; the rest (and all
    /// of Nemotron-H's) as Granite's hybrid.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let (layout, _) = nemotron_layout(cx.hp(), cx.block_count)?;
        nemotron_tensor(cx, name, shape, &layout, nemotron_moe(cx.hp()))
    }

    /// The mixture's experts, up and down only.
    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["n_routed_experts"],
            marker: "mixer.experts",
            unless: "",
            packed: &[],
            expert: "backbone.layers.{bid}.mixer.experts.{xid}.{w}.weight",
            merged: "model.layers.{bid}.mlp.experts.{w}.weight",
            weights: &["down_proj", "up_proj"],
        })
    }
}

/// `NemotronHModel.modify_tensors` for `layout`'s layers, as the mixture (`moe`) or not.
fn nemotron_tensor(cx: &Ctx, name: &str, shape: &[u64], layout: &Layout, moe: bool) -> Yields {
    if !moe || base::block_of(name).is_none() {
        return hybrid_tensor(cx, name, shape, layout);
    }
    let plain = |name: &str, change: Rearrange| base::yield_as(name, change);
    if name.ends_with("mixer.gate.e_score_correction.bias") {
        return plain(name, Rearrange::default());
    }
    if let Some(stem) = name.strip_suffix("mixer.dt_bias") {
        return plain(&format!("{stem}mixer.dt.bias"), Rearrange::default());
    }
    if name.ends_with("mixer.conv1d.weight") {
        let change = Rearrange {
            squeeze: true,
            ..Rearrange::default()
        };
        return plain(name, change);
    }
    let a_log = name.ends_with("mixer.A_log");
    if a_log || name.ends_with("mixer.D") {
        // `squeeze().reshape(-1, 1)`: one value a head, as published, given an axis
        if shape.len() != 1 {
            return Err(Unsupported::NotYet(format!(
                "{name} is {shape:?}: only one value a head (1-D) is read"
            ))
            .into());
        }
        let change = Rearrange {
            unsqueeze: true,
            neg_exp: a_log,
            ..Rearrange::default()
        };
        return plain(name, change);
    }
    if name.ends_with("mixer.norm.weight") {
        let n: u64 = shape.iter().product();
        let groups = layout.groups;
        if groups == 0 || n % groups != 0 {
            return Err(Error::reference(format!(
                "{name}: shape {shape:?} cannot be reshaped to ({groups}, -1)"
            )));
        }
        let per = n / groups;
        let rows = View {
            offset: 0,
            axes: [(1, 0), (groups, per), (per, 1)],
            three: false,
        };
        return plain(name, rows.alone());
    }
    hybrid_tensor(cx, name, shape, layout)
}

/// `NemotronHPuzzleModel(NemotronHModel)`: `NemotronHPuzzleForCausalLM` (NVIDIA's Puzzle
/// distillations of Nemotron 3): the layers and each mixture layer's width and experts used
/// from `block_configs`, Granite's hybrid layout (every layer that does not attend taken by
/// Mamba-2's rules), the official checkpoint's `model.` names read as `backbone.`; its
/// prediction head (`mtp.`) left out, as the reference leaves it.
pub(crate) struct NemotronHPuzzle;

/// `block_configs`, each block's.
fn block_configs(hp: &Hparams) -> Result<&Vec<Value>> {
    match hp.map.get("block_configs") {
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(Error::field(&hp.path, "block_configs", "not a list")),
        None => Err(Error::reference(format!(
            "KeyError: 'block_configs' ({})",
            hp.path.display()
        ))),
    }
}

/// A block config's `key`, where it is set (`bc.get(key) or 0`).
fn block_int(hp: &Hparams, bc: &Value, i: usize, key: &str) -> Result<i32> {
    match bc.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| {
                Error::field(
                    &hp.path,
                    format!("block_configs[{i}].{key}"),
                    format!("{v} is not a count"),
                )
            }),
    }
}

/// `GraniteHybridModel.__init__`'s layout of the Puzzle's layers (attention by Nemotron-H's
/// `get_attn_layers`, the rest Mamba-2's).
fn puzzle_layout(hp: &Hparams, blocks: u64) -> Result<Layout> {
    let (mut layout, _) = nemotron_layout(hp, blocks)?;
    layout.ssm = (0..blocks).filter(|i| !layout.attn.contains(i)).collect();
    Ok(layout)
}

impl TextModel for NemotronHPuzzle {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&NemotronH)
    }

    /// `block_configs` gives the layers and their types.
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        if let Some(Value::Array(blocks)) = hp.map.get("block_configs") {
            let types: Vec<Value> = blocks
                .iter()
                .map(|b| b.get("block_type").cloned().unwrap_or(Value::Null))
                .collect();
            hp.map
                .insert("num_hidden_layers".into(), types.len().into());
            hp.map
                .insert("layers_block_type".into(), Value::Array(types));
        }
    }

    fn arch(&self, _hp: &Hparams, line: &'static ArchTable) -> &'static ArchTable {
        line
    }

    /// One block a config; the prediction head is not folded in.
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        let blocks = block_configs(hp)?;
        if let Some((i, _)) = blocks
            .iter()
            .enumerate()
            .find(|(_, b)| !b.get("block_type").is_some_and(Value::is_string))
        {
            return Err(Error::field(
                &hp.path,
                format!("block_configs[{i}].block_type"),
                "missing or not a string",
            ));
        }
        Ok(blocks.len() as u64)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("mtp.") {
            return None;
        }
        NemotronH.filter_tensors(cx, name)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let head_dim = prefixed_int(hp, &["head_dim", "attention_head_dim"]).map_err(|_| {
            Error::reference("ValueError: Could not find the attention head dim in config")
        })?;
        let layout = puzzle_layout(hp, cx.block_count)?;
        hybrid_keys(cx, kv, &layout)?;
        let k = |s: &str| cx.key(s);
        kv.u32(&k("attention.key_length"), head_dim as u32);
        kv.u32(&k("attention.value_length"), head_dim as u32);
        let blocks = block_configs(hp)?;
        let per_block = |key: &str| -> Result<Vec<i32>> {
            blocks
                .iter()
                .enumerate()
                .map(|(i, b)| block_int(hp, b, i, key))
                .collect()
        };
        let ff = per_block("moe_intermediate_size")?;
        kv.i32s(&k("feed_forward_length"), ff.clone());
        kv.i32s(&k("expert_feed_forward_length"), ff);
        kv.i32s(&k("expert_used_count"), per_block("num_experts_per_tok")?);
        let int = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
        mixture_keys(cx, kv)?;
        kv.u32(&k("moe_latent_size"), int("moe_latent_size")?);
        Ok(())
    }

    /// The official checkpoint's `model.` trunk and `e_score_correction_bias` read as the
    /// original release's names, then the mixture's rules.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut name = match name.strip_prefix("model.") {
            Some(rest) => format!("backbone.{rest}"),
            None => name.to_owned(),
        };
        if let Some(stem) = name.strip_suffix("mixer.gate.e_score_correction_bias") {
            name = format!("{stem}mixer.gate.e_score_correction.bias");
        }
        let layout = puzzle_layout(cx.hp(), cx.block_count)?;
        nemotron_tensor(cx, &name, shape, &layout, true)
    }
}

/// The mixture's keys after the widths and experts used, Nemotron 3's and its Puzzle's: the
/// shared expert, the experts, the routing's norm, scale and groups.
fn mixture_keys(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let hp = cx.hp();
    let k = |s: &str| cx.key(s);
    let int = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
    kv.u32(
        &k("expert_shared_feed_forward_length"),
        int("moe_shared_expert_intermediate_size")?,
    );
    kv.u32(&k("expert_count"), int("n_routed_experts")?);
    kv.u32(&k("expert_shared_count"), int("n_shared_experts")?);
    let norm = hp
        .opt_bool(&["norm_topk_prob"])?
        .ok_or_else(|| Error::field(&hp.path, "norm_topk_prob", "missing"))?;
    kv.bool(&k("expert_weights_norm"), norm);
    kv.f32(
        &k("expert_weights_scale"),
        hp.float(&["routed_scaling_factor"])?,
    );
    kv.u32(&k("expert_group_count"), int("n_group")?);
    Ok(())
}
