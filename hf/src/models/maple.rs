//! `conversion/maple.py`: deepgrove's Maple mixtures.

use super::base::{self, Ctx, Experts, TextModel};
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `MapleModel`: `MapleForCausalLM`. q/k norms, sliding windows on some layers, experts in
/// every layer without shared ones, the experts' SwiGLU clamped at 7.
pub(crate) struct Maple;

impl TextModel for Maple {
    /// `TextModel`'s keys, then what the reference asserts of the config (SiLU, no shared
    /// experts, normalized top-k, no rotation on global layers) and Maple's own keys.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let truthy =
            |key: &str, default: bool| hp.map.get(key).map_or(default, crate::vocab::truthy);
        let act = hp.map.get("hidden_act").and_then(Value::as_str);
        let checks = [
            (act == Some("silu"), "hidden_act == \"silu\""),
            (
                hp.opt_int(&["num_shared_experts"])?.unwrap_or(0) == 0,
                "num_shared_experts == 0",
            ),
            (truthy("norm_topk_prob", true), "norm_topk_prob"),
            (
                truthy("nope_on_global_attention", false),
                "nope_on_global_attention",
            ),
        ];
        if let Some((_, what)) = checks.iter().find(|(ok, _)| !ok) {
            return Err(Error::field(
                &hp.path,
                what.split(' ').next().unwrap_or(what),
                format!("the reference asserts {what}"),
            ));
        }
        let head = base::head_dim(hp)?;
        let pct = base::partial_rotary_or(cx, 1.0);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        kv.u32(&k("rope.dimension_count"), (head as f64 * pct) as u32);
        kv.u32(
            &k("attention.sliding_window"),
            hp.int(&["sliding_window"])? as u32,
        );
        base::sliding_window_pattern(cx, kv)?;
        kv.u32(
            &k("expert_feed_forward_length"),
            hp.int(&["moe_intermediate_size"])? as u32,
        );
        kv.f32s(&k("swiglu_clamp_exp"), vec![7.0; cx.block_count as usize]);
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            count_keys: &["num_experts"],
            marker: "mlp.experts",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}
