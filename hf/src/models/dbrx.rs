//! `conversion/dbrx.py`.

use super::base::{self, Ctx, Force, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `DbrxModel`: `DbrxForCausalLM`.
pub(crate) struct Dbrx;

/// `hparams[outer][key]` (`attn_config`, `ffn_config`) as a count.
fn nested_int(hp: &Hparams, outer: &str, key: &str) -> Result<u64> {
    let v = hp.map.get(outer).and_then(|c| c.get(key));
    v.and_then(Value::as_u64)
        .ok_or_else(|| Error::field(&hp.path, format!("{outer}.{key}"), "missing or not a count"))
}

/// `hparams[outer][key]` as a float.
fn nested_float(hp: &Hparams, outer: &str, key: &str) -> Result<f64> {
    let v = hp.map.get(outer).and_then(|c| c.get(key));
    v.and_then(Value::as_f64).ok_or_else(|| {
        Error::field(
            &hp.path,
            format!("{outer}.{key}"),
            "missing or not a number",
        )
    })
}

impl TextModel for Dbrx {
    /// Its own keys, from the nested attention and feed-forward configs (not `TextModel`'s).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(&k("context_length"), hp.int(&["max_seq_len"])? as u32);
        kv.u32(&k("embedding_length"), hp.int(&["d_model"])? as u32);
        let ff = nested_int(hp, "ffn_config", "ffn_hidden_size")?;
        kv.u32(&k("feed_forward_length"), ff as u32);
        kv.u32(&k("attention.head_count"), hp.int(&["n_heads"])? as u32);
        let kv_heads = nested_int(hp, "attn_config", "kv_n_heads")?;
        kv.u32(&k("attention.head_count_kv"), kv_heads as u32);
        kv.f32(
            &k("rope.freq_base"),
            nested_float(hp, "attn_config", "rope_theta")?,
        );
        kv.f32(
            &k("attention.clamp_kqv"),
            nested_float(hp, "attn_config", "clip_qkv")?,
        );
        let n = nested_int(hp, "ffn_config", "moe_num_experts")?;
        kv.u32(&k("expert_count"), n as u32);
        let used = nested_int(hp, "ffn_config", "moe_top_k")?;
        kv.u32(&k("expert_used_count"), used as u32);
        kv.f32(&k("attention.layer_norm_epsilon"), 1e-5);
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// The experts' `w1`, `v1` (`[experts · ffn, hidden]`, no `.weight`) viewed as
    /// `[experts, ffn, hidden]`, `w2` also transposed to `[experts, hidden, ffn]`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let expert = [
            "ffn.experts.mlp.w1",
            "ffn.experts.mlp.w2",
            "ffn.experts.mlp.v1",
        ]
        .into_iter()
        .find(|t| name.contains(t) && !name.contains(".weight"));
        let Some(expert) = expert else {
            return base::yield_as(name, Rearrange::default());
        };
        let hp = cx.hp();
        let n = nested_int(hp, "ffn_config", "moe_num_experts")?;
        let ff = nested_int(hp, "ffn_config", "ffn_hidden_size")?;
        let hidden = hp.int(&["d_model"])?;
        if shape.iter().product::<u64>() != n * ff * hidden {
            return Err(Error::reference(format!(
                "{name} is {shape:?}: shape '[{n}, {ff}, {hidden}]' is invalid for its size"
            )));
        }
        let view = match expert.ends_with("w2") {
            true => View::transposed(n, ff, hidden),
            false => View {
                offset: 0,
                axes: [(n, ff * hidden), (ff, hidden), (hidden, 1)],
                three: true,
            },
        };
        base::yield_as(&format!("{name}.weight"), view.alone())
    }

    /// Every tensor of two or more axes takes the output type, the router's too.
    fn tensor_force_quant(
        &self,
        _cx: &Ctx,
        _name: &str,
        _new_name: &str,
        _bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        (n_dims > 1).then_some(Force::Quantize)
    }
}
