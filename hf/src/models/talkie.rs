//! `conversion/talkie.py`.

use super::base::{self, Ctx, Rearrange, ScalarKey, TextModel, Yields};
use crate::error::Result;
use crate::kv::Kv;
use crate::names::format_name;
use crate::tables::Tensor;

/// `TalkieModel`: `TalkieForCausalLM`.
pub(crate) struct Talkie;

/// A block's part after `model.blocks.{bid}.` (the whole name outside the blocks).
fn in_block(name: &str) -> (Option<u64>, &str) {
    let Some(rest) = name.strip_prefix("model.blocks.") else {
        return (None, name);
    };
    match rest.split_once('.') {
        Some((b, suffix)) => match b.parse::<u64>() {
            Ok(bid) => (Some(bid), suffix),
            Err(_) => (None, name),
        },
        None => (None, name),
    }
}

impl TextModel for Talkie {
    /// `TextModel`'s keys, and float32's epsilon as the RMS epsilon (`F.rms_norm` without
    /// one).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        kv.f32(
            &cx.key("attention.layer_norm_rms_epsilon"),
            f64::from(f32::EPSILON),
        );
        Ok(())
    }

    /// The output's gain, a logit scale.
    fn scalar_key(&self, cx: &Ctx, name: &str) -> Option<ScalarKey> {
        (in_block(name) == (None, "lm_head_gain.w_g"))
            .then(|| ScalarKey::One(cx.key("logit_scale")))
    }

    /// The attention and MLP gains as their projections' scales; q and k with the upper half
    /// of each head negated (the inverse rotation absorbed); the head gain given an axis.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let (bid, suffix) = in_block(name);
        let scale = |t: Tensor| {
            let change = Rearrange {
                named: true,
                ..Rearrange::default()
            };
            base::yield_as(&format_name(t, bid, ".scale"), change)
        };
        let mut change = Rearrange::default();
        match suffix {
            "attn_gain.a_g" => return scale(Tensor::ATTN_OUT),
            "mlp_gain.a_g" => return scale(Tensor::FFN_DOWN),
            "attn.attn_query.weight" | "attn.attn_key.weight" => {
                change.negate_upper_half = cx.hp().int(&["head_dim"])?;
            }
            "attn.head_gain.head_g" => change.unsqueeze = true,
            _ => {}
        }
        let name = match name.ends_with(".weight") {
            true => name.to_owned(),
            false => format!("{name}.weight"),
        };
        base::yield_as(&name, change)
    }
}
