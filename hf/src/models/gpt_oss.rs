//! `conversion/gpt_oss.py`: gpt-oss as OpenAI publishes it, the experts in MXFP4 (`*_blocks`,
//! `*_scales`, repacked into ggml's MXFP4 blocks and written first, as they are), or as
//! transformers saves it in bf16 (the packed experts transposed and cut).

use super::base::{self, Ctx, Mxfp4, Rearrange, TextModel, View, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `GptOssModel`: `GptOssForCausalLM`.
pub(crate) struct GptOss;

impl TextModel for GptOss {
    fn keeps_mxfp4(&self) -> bool {
        true
    }

    /// `down_proj` as stored, `gate_up_proj`'s even rows as gate and odd rows as up, each
    /// with the codes last seen before its scales.
    fn mxfp4_tensors(&self, _cx: &Ctx, names: &[&str]) -> Vec<Mxfp4> {
        let mut out = Vec::new();
        let mut blocks = String::new();
        for &name in names {
            let with = |mapped: String, offset, step| Mxfp4 {
                name: mapped,
                blocks: blocks.clone(),
                scales: name.to_owned(),
                offset,
                step,
            };
            if name.contains("mlp.experts.down_proj_blocks")
                || name.contains("mlp.experts.gate_up_proj_blocks")
            {
                blocks = name.to_owned();
            } else if name.contains("mlp.experts.down_proj_scales") {
                out.push(with(name.replace("_scales", ".weight"), 0, 1));
            } else if name.contains("mlp.experts.gate_up_proj_scales") {
                for (offset, part) in [(0, "gate_proj.weight"), (1, "up_proj.weight")] {
                    out.push(with(name.replace("gate_up_proj_scales", part), offset, 2));
                }
            }
        }
        out
    }

    /// The attention sinks are named as weights.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        match name.contains("sinks") {
            true => base::filter_tensors(&format!("{name}.weight")),
            false => base::filter_tensors(name),
        }
    }

    /// `TextModel`'s keys, then the sliding window and the experts' width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(
            &cx.key("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        let ff = hp.int(&["intermediate_size"])?;
        kv.u32(&cx.key("expert_feed_forward_length"), ff as u32);
        Ok(())
    }

    /// The packed experts as stored by transformers (`down_proj` `[experts, ffn, hidden]`,
    /// `gate_up_proj` `[experts, hidden, 2·ffn]` with gate and up interleaved, their biases
    /// likewise): each transposed to rows of `hidden`, gate the even and up the odd rows.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.ends_with("_blocks") || name.ends_with("_scales") {
            // written already, as they are
            return Ok(Vec::new());
        }
        let bad = || {
            Error::reference(format!(
                "{name} is {shape:?}, not the packed experts' shape"
            ))
        };
        if name.contains("down_proj") {
            if name.ends_with("_bias") {
                return base::yield_as(
                    &name.replace("down_proj_bias", "down_proj.bias"),
                    Rearrange::default(),
                );
            }
            let [n, ff, hidden] = shape[..] else {
                return Err(bad());
            };
            let t = View::transposed(n, ff, hidden);
            return base::yield_as(&name.replace("down_proj", "down_proj.weight"), t.alone());
        }
        if name.contains("gate_up_proj") {
            if name.ends_with("_bias") {
                let [n, two_ff] = shape[..] else {
                    return Err(bad());
                };
                // `[..., ::2]` and `[..., 1::2]`
                let half = |offset| View {
                    offset,
                    axes: [(n, two_ff), (1, 0), ((two_ff - offset).div_ceil(2), 2)],
                    three: false,
                };
                let part = |p: &str| name.replace("gate_up_proj_bias", p);
                return Ok(vec![
                    (part("gate_proj.bias"), half(0).alone()),
                    (part("up_proj.bias"), half(1).alone()),
                ]);
            }
            let [n, hidden, two_ff] = shape[..] else {
                return Err(bad());
            };
            // `transpose(-1, -2)[:, ::2, :]` and `[:, 1::2, :]`
            let half = |offset| View {
                offset,
                axes: [
                    (n, hidden * two_ff),
                    ((two_ff - offset).div_ceil(2), 2),
                    (hidden, two_ff),
                ],
                three: true,
            };
            let part = |p: &str| name.replace("gate_up_proj", p);
            return Ok(vec![
                (part("gate_proj.weight"), half(0).alone()),
                (part("up_proj.weight"), half(1).alone()),
            ]);
        }
        base::yield_as(name, Rearrange::default())
    }
}
