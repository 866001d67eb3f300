//! `conversion/hy_v4.py` (`HYV4Model(DeepseekV2Model)`: Tencent's Hy4).

use super::base::{self, Ctx, Experts, Force, TextModel, View, Yields};
use super::deepseek::DeepseekV2;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names;
use crate::tables::Tensor;
use ggufrw::quant::GgmlType;
use serde_json::Value;

/// `HYV4Model`: DeepSeek's latent attention with an output gate and a learnable sink,
/// hyper-connections in place of the residual, a sparse-attention indexer in the layers that
/// own one, and experts published packed (`gate_up_proj` fused, gate first). Its prediction
/// layers (`model.mtp_layers.`) are dropped.
pub(crate) struct HyV4;

/// The indexer tensors a layer marked `full` carries (`INDEXER_SUFFIXES`).
const INDEXER: [&str; 5] = [
    "self_attn.indexer.wq_b.weight",
    "self_attn.indexer.wk.weight",
    "self_attn.indexer.k_norm.weight",
    "self_attn.indexer.k_norm.bias",
    "self_attn.indexer.weights_proj.weight",
];

/// `indexer_is_full`: which layers own an indexer (`indexer_types`, or failing that the
/// sparse entries of `layer_types`), or `None` when the model has no sparse attention.
fn indexer_is_full(hp: &Hparams) -> Result<Option<Vec<bool>>> {
    let n = hp.int(&["num_hidden_layers"])? as usize;
    let strings = |key: &str| -> Result<Option<Vec<String>>> {
        match hp.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| Error::field(&hp.path, key, "not a list of strings"))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(_) => Err(Error::field(&hp.path, key, "not a list")),
        }
    };
    let check = || -> Result<()> {
        for key in ["index_n_heads", "index_head_dim", "index_topk"] {
            if !hp.map.contains_key(key) {
                return Err(Error::reference(format!(
                    "HY_V4 has DSA layers but no {key}"
                )));
            }
        }
        Ok(())
    };
    let Some(types) = strings("indexer_types")? else {
        let layers = strings("layer_types")?.unwrap_or_default();
        let sparse = |t: &String| t == "sparse_attention" || t == "deepseek_sparse_attention";
        if !layers.iter().any(sparse) {
            return Ok(None);
        }
        if layers.len() < n {
            return Err(Error::reference(format!(
                "HY_V4 layer_types has {} entries, need {n}",
                layers.len()
            )));
        }
        check()?;
        return Ok(Some(layers[..n].iter().map(sparse).collect()));
    };
    check()?;
    if types.len() < n {
        return Err(Error::reference(format!(
            "HY_V4 indexer_types has {} entries, need {n}",
            types.len()
        )));
    }
    let mut unknown: Vec<&str> = types[..n]
        .iter()
        .map(String::as_str)
        .filter(|t| !matches!(*t, "full" | "shared"))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        unknown.dedup();
        return Err(Error::reference(format!(
            "HY_V4 unknown indexer_types values: {unknown:?}"
        )));
    }
    let full: Vec<bool> = types[..n].iter().map(|t| t == "full").collect();
    if full.first() == Some(&false) {
        return Err(Error::reference(
            "HY_V4 layer 0 must be indexer_types 'full' (nothing precedes it to share)",
        ));
    }
    Ok(Some(full))
}

/// The hparams `set_gguf_parameters` edits before DeepSeek V2's keys: no routing groups
/// where there is one group of one, and `first_k_dense_replace` from the leading dense
/// entries of `mlp_layer_types` where the config does not give it.
fn edited(hp: &Hparams) -> Result<Hparams> {
    let mut hp = hp.clone();
    let one = |k: &str| hp.map.get(k).and_then(Value::as_f64) == Some(1.0);
    if one("n_group") && one("topk_group") {
        hp.map.remove("n_group");
        hp.map.remove("topk_group");
    }
    let derived = match hp.map.get("mlp_layer_types") {
        None | Some(Value::Null) => None,
        Some(Value::Array(types)) => {
            let lead = types
                .iter()
                .take_while(|t| t.as_str() == Some("dense"))
                .count();
            if types[lead..].iter().any(|t| t.as_str() == Some("dense")) {
                return Err(Error::reference(
                    "HY_V4 converter expects a contiguous leading dense block",
                ));
            }
            Some(lead as u64)
        }
        Some(_) => return Err(Error::field(&hp.path, "mlp_layer_types", "not a list")),
    };
    match (hp.opt_int(&["first_k_dense_replace"])?, derived) {
        (Some(explicit), Some(derived)) if explicit != derived => {
            return Err(Error::reference(format!(
                "HY_V4 first_k_dense_replace ({explicit}) disagrees with mlp_layer_types \
                 leading-dense count ({derived})"
            )));
        }
        (Some(_), _) => {}
        (None, Some(derived)) => {
            hp.map
                .insert("first_k_dense_replace".into(), derived.into());
        }
        (None, None) => {
            return Err(Error::reference(
                "HY_V4 needs first_k_dense_replace or mlp_layer_types to place dense layers",
            ));
        }
    }
    Ok(hp)
}

impl TextModel for HyV4 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&DeepseekV2)
    }

    /// `prepare_tensors` reads `kv_b_proj` with as many kv heads as heads (the published
    /// config says fewer).
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        DeepseekV2.init_hparams(class, hp);
        if let Some(heads) = hp.map.get("num_attention_heads").cloned() {
            hp.map.insert("num_key_value_heads".into(), heads);
        }
    }

    /// The layers' count is the config's; the indexer tensors are checked against
    /// `indexer_types` here, where the checkpoint's names are first seen (`prepare_tensors`
    /// checks them before reading any tensor).
    fn block_count(&self, hp: &Hparams, names: &[String]) -> Result<u64> {
        check_indexers(hp, names)?;
        DeepseekV2.block_count(hp, names)
    }

    /// The prediction layers are dropped unread, then DeepSeek V2's filter.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if name.starts_with("model.mtp_layers.") {
            return None;
        }
        DeepseekV2.filter_tensors(cx, name)
    }

    /// DeepSeek V2's keys (on the edited hparams), then sigmoid routing, the routed experts'
    /// SwiGLU clamp, the hyper-connections and the indexer's layers.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = edited(cx.hp())?;
        let cx = cx.with_hparams(&hp);
        DeepseekV2.set_gguf_parameters(&cx, kv)?;
        let k = |s: &str| cx.key(s);
        kv.u32(&k("expert_gating_func"), 2);
        let limit = match hp.map.get("swiglu_limit") {
            None | Some(Value::Null) => 0.0,
            Some(_) => hp.float(&["swiglu_limit"])?,
        };
        if limit > 0.0 {
            kv.f32s(
                &k("swiglu_clamp_exp"),
                vec![limit as f32; cx.block_count as usize],
            );
        }
        kv.u32(&k("hyper_connection.count"), hp.int(&["hc_mult"])? as u32);
        kv.f32(&k("hyper_connection.epsilon"), hp.float(&["hc_eps"])?);
        kv.f32(
            &k("hyper_connection.magnitude"),
            hp.float(&["hc_magnitude"])?,
        );
        if let Some(full) = indexer_is_full(&hp)? {
            super::deepseek::indexer_keys(&cx, kv)?;
            kv.bools(&k("attention.indexer.types"), full);
        }
        Ok(())
    }

    /// Packed experts' `gate_up_proj` (`[experts, 2·ffn, hidden]`, gate first) cut in two;
    /// `.weight` added to the packed `down_proj`, the sinks and the hyper-connections'
    /// tensors; the rest DeepSeek V2's.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.ends_with("mlp.experts.gate_up_proj") {
            let ff = cx.hp().int(&["moe_intermediate_size"])?;
            let bid = base::block_of(name);
            let [n, rows, hidden] = shape[..] else {
                return Err(Error::reference(format!(
                    "{name} is {shape:?}, not the packed experts' shape"
                )));
            };
            if rows != 2 * ff {
                return Err(Error::reference(format!(
                    "{name}: {rows} != 2*{ff} (split_gate_up: gate_up rows against \
                     moe_intermediate_size)"
                )));
            }
            let half = |h| View::middle_half(n, ff, hidden, h).alone();
            return Ok(vec![
                (
                    names::format_name(Tensor::FFN_GATE_EXP, bid, ".weight"),
                    half(0),
                ),
                (
                    names::format_name(Tensor::FFN_UP_EXP, bid, ".weight"),
                    half(1),
                ),
            ]);
        }
        let hc = |n: &str| {
            let Some(stem) = n.rsplit('.').next() else {
                return false;
            };
            let parent = n[..n.len() - stem.len()].trim_end_matches('.');
            matches!(stem, "hc_head_fn" | "hc_head_base" | "hc_head_scale")
                && parent.ends_with(".hc_head")
                || matches!(stem, "hc_fn" | "hc_base" | "hc_scale")
                    && (parent.ends_with(".hc_attn_layer.hc_pre")
                        || parent.ends_with(".hc_mlp_layer.hc_pre"))
        };
        if name.ends_with("mlp.experts.down_proj")
            || name.ends_with(".self_attn.learnable_sink_param")
            || hc(name)
        {
            return DeepseekV2.modify_tensors(cx, &format!("{name}.weight"), shape);
        }
        DeepseekV2.modify_tensors(cx, name, shape)
    }

    /// Experts come packed: none to stack.
    fn experts(&self) -> Option<Experts> {
        None
    }

    /// The hyper-connections' mixing matrices, the indexer's key-norm bias and (where the
    /// config asks for it) the output are kept F32.
    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        _name: &str,
        new_name: &str,
        bid: Option<u64>,
        _n_dims: usize,
    ) -> Option<Force> {
        let f32 = Some(Force::Type(GgmlType::F32));
        if [
            "hc_attn_fn.weight",
            "hc_ffn_fn.weight",
            "output_hc_fn.weight",
        ]
        .iter()
        .any(|s| new_name.ends_with(s))
        {
            return f32;
        }
        let k_norm_bias = cx.arch.tensors.contains(&Tensor::INDEXER_K_NORM)
            && bid.is_some_and(|b| {
                new_name == names::format_name(Tensor::INDEXER_K_NORM, Some(b), ".bias")
            });
        if k_norm_bias {
            return f32;
        }
        let lm_head = cx
            .hp()
            .map
            .get("enable_lm_head_fp32")
            .is_some_and(crate::vocab::truthy);
        if new_name == "output.weight" && lm_head {
            return f32;
        }
        None
    }
}

/// `prepare_tensors`' check before any tensor is read: each layer marked `full` carries every
/// indexer tensor, each `shared` one none.
fn check_indexers(hp: &Hparams, names: &[String]) -> Result<()> {
    let Some(full) = indexer_is_full(hp)? else {
        return Ok(());
    };
    for (il, expect) in full.iter().enumerate() {
        let prefix = format!("model.layers.{il}.");
        let seen: Vec<&str> = names
            .iter()
            .filter_map(|n| n.strip_prefix(&prefix))
            .filter(|rest| rest.starts_with("self_attn.indexer."))
            .collect();
        if *expect {
            let missing: Vec<&str> = INDEXER
                .iter()
                .copied()
                .filter(|s| !seen.contains(s))
                .collect();
            if !missing.is_empty() || seen.len() != INDEXER.len() {
                return Err(Error::reference(format!(
                    "HY_V4 layer {il} is indexer_types 'full' but is missing indexer tensors: \
                     {missing:?}"
                )));
            }
        } else if !seen.is_empty() {
            return Err(Error::reference(format!(
                "HY_V4 layer {il} is indexer_types 'shared' but carries indexer tensors: {seen:?}"
            )));
        }
    }
    Ok(())
}
