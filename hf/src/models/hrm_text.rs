//! `conversion/hrm_text.py`.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;

/// `HrmTextModel`: `HrmTextForCausalLM`, two stacks (L then H) of layers run in cycles.
pub(crate) struct HrmText;

/// The layers of one stack: `num_layers_per_stack`, or `num_hidden_layers` in training-style
/// configs.
fn per_stack(hp: &Hparams) -> Result<u64> {
    match hp.opt_int(&["num_layers_per_stack"])? {
        Some(n) if n != 0 => Ok(n),
        _ => hp.int(&["num_hidden_layers"]),
    }
}

impl TextModel for HrmText {
    /// The cache slots the cycles expand the stacks to: layers per stack × H cycles ×
    /// (L cycles + 1). The file holds two stacks of physical blocks.
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        let n = per_stack(hp)?;
        let h = hp.int(&["H_cycles"])?;
        let l = hp.int(&["L_cycles"])?;
        n.checked_mul(h)
            .and_then(|x| x.checked_mul(l.checked_add(1)?))
            .ok_or_else(|| Error::field(&hp.path, "H_cycles", "the block count overflows"))
    }

    /// `TextModel`'s keys, the rotated width (a head), the embedding scale, and the stacks'
    /// and cycles' counts.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let head = match hp.opt_int(&["head_dim"])? {
            Some(d) if d != 0 => d,
            _ => hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1),
        };
        kv.u32(
            &cx.key("rope.dimension_count"),
            base::count32(hp, "head_dim", head)?,
        );
        kv.f32(&cx.key("embedding_scale"), hp.float(&["embedding_scale"])?);
        let stack = per_stack(hp)?;
        kv.u32(
            &cx.key("hrm.layers_per_stack"),
            base::count32(hp, "num_layers_per_stack", stack)?,
        );
        kv.u32(&cx.key("hrm.h_cycles"), base::int32(hp, &["H_cycles"])?);
        kv.u32(&cx.key("hrm.l_cycles"), base::int32(hp, &["L_cycles"])?);
        let prefix = hp.map.get("prefix_lm").is_some_and(crate::vocab::truthy);
        kv.bool(&cx.key("hrm.prefix_lm"), prefix);
        Ok(())
    }

    /// Each stack's layers numbered after the L stack's; the fused gate/q/k/v and gate/up
    /// cut in equal parts.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let named = |t: Tensor, bid: Option<u64>, suffix: &str| {
            let change = Rearrange {
                named: true,
                ..Rearrange::default()
            };
            base::yield_as(&format_name(t, bid, suffix), change)
        };
        match name {
            "model.embed_tokens.weight" => return named(Tensor::TOKEN_EMBD, None, ".weight"),
            "lm_head.weight" => return named(Tensor::OUTPUT, None, ".weight"),
            "model.z_L_init" => return named(Tensor::HRM_Z_L_INIT, None, ""),
            _ => {}
        }
        let unmapped = || Error::reference(format!("ValueError: can not map tensor: {name}"));
        let (stack, rest) = ["L", "H"]
            .into_iter()
            .find_map(|s| Some((s, name.strip_prefix(&format!("model.{s}_module.layers."))?)))
            .ok_or_else(unmapped)?;
        let (layer, tensor) = rest.split_once('.').ok_or_else(unmapped)?;
        let layer: u64 = match layer.bytes().all(|b| b.is_ascii_digit()) {
            true => layer.parse().map_err(|_| unmapped())?,
            false => return Err(unmapped()),
        };
        let bid = layer + if stack == "H" { per_stack(cx.hp())? } else { 0 };
        let chunks = |parts: &[Tensor]| {
            let rows = shape.first().copied().unwrap_or(0);
            let size = rows.div_ceil(parts.len() as u64);
            Ok(parts
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let change = Rearrange {
                        rows: Some((i as u64 * size, (i as u64 + 1) * size)),
                        ..Rearrange::default()
                    };
                    (format_name(*t, Some(bid), ".weight"), change)
                })
                .collect())
        };
        match tensor {
            "attn.gqkv_proj.weight" => chunks(&[
                Tensor::ATTN_GATE,
                Tensor::ATTN_Q,
                Tensor::ATTN_K,
                Tensor::ATTN_V,
            ]),
            "mlp.gate_up_proj.weight" => chunks(&[Tensor::FFN_GATE, Tensor::FFN_UP]),
            _ => {
                let tensor = match tensor.strip_prefix("attn.") {
                    Some(t) => format!("self_attn.{t}"),
                    None => tensor.to_owned(),
                };
                base::yield_as(
                    &format!("model.layers.{bid}.{tensor}"),
                    Rearrange::default(),
                )
            }
        }
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::gpt2(cx, kv)
    }
}
