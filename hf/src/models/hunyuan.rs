//! `conversion/hunyuan.py` (the dense class).

use super::base::{self, Ctx, Experts, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::SpecialVocab;
use serde_json::Value;

/// `HunYuanModel`: `HunYuanDenseV1ForCausalLM`.
pub(crate) struct HunYuan;

impl TextModel for HunYuan {
    /// transformers' `HunYuanDenseV1Config` takes `eod_token_id` and does not keep it, so the
    /// configuration the reference reads has none (and eos stays the config's).
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        if hp.map.get("model_type").and_then(Value::as_str) == Some("hunyuan_v1_dense") {
            hp.map.remove("eod_token_id");
        }
    }

    /// `TextModel`'s keys without the expert count (a single "expert" is not a mixture), then
    /// the NTK-alpha RoPE: a scaled base and no scaling; `dynamic` also claims 256K context.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let mut popped = hp.clone();
        popped.map.remove("num_experts");
        base::set_gguf_parameters(&cx.with_hparams(&popped), kv)?;
        let rope = cx.rope();
        let typ = rope.get("rope_type").and_then(Value::as_str);
        if !matches!(typ, Some("dynamic" | "xdrope")) {
            return Ok(());
        }
        let alpha = rope.get("alpha").and_then(Value::as_f64).unwrap_or(50.0);
        let theta = rope
            .get("rope_theta")
            .and_then(Value::as_f64)
            .unwrap_or(10000.0);
        let dim = hp.int(&["head_dim"])? as f64;
        kv.f32(
            &cx.key("rope.freq_base"),
            theta * alpha.powf(dim / (dim - 2.0)),
        );
        kv.string(&cx.key("rope.scaling.type"), "none");
        kv.f32(&cx.key("rope.scaling.factor"), 1.0);
        if typ == Some("dynamic") {
            kv.u32(&cx.key("rope.scaling.original_context_length"), 256 * 1024);
            kv.u32(&cx.key("context_length"), 256 * 1024);
            let ctx = hp.int(&["max_position_embeddings"])?;
            if theta != 10000.0 || !matches!(ctx, 32768 | 262144) {
                return Err(Error::reference(
                    "HunYuan dynamic RoPE scaling assumptions changed (rope_theta 10000, \
                     max_position_embeddings 32768 or 262144)",
                ));
            }
        }
        Ok(())
    }

    /// A tied output is not written.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        if name == "lm_head.weight" && base::tied(cx.hp()) {
            return Ok(Vec::new());
        }
        base::yield_as(name, base::Rearrange::default())
    }

    /// GPT-2's BPE (without a `pad` id when the config's is negative), then the end of
    /// document as eos and the generation config's first end id as eot.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        if !cx.dir.has("tokenizer.json") {
            return Err(Error::not_yet(
                "HunYuan's tiktoken vocabulary (no tokenizer.json) is not read yet",
            ));
        }
        let hp = cx.hp();
        base::gpt2_tokens(cx, kv)?;
        let pad = hp.find(&["pad_token_id"]).and_then(Value::as_i64);
        let special = if pad.unwrap_or(0) < 0 {
            SpecialVocab::load_types(
                cx.dir,
                None,
                true,
                &["bos", "eos", "unk", "sep", "cls", "mask"],
            )?
        } else {
            SpecialVocab::load(cx.dir, None, true)?
        };
        special.add_to(kv)?;
        if let Some(eod) = hp.find(&["eod_token_id"]).filter(|v| !v.is_null()) {
            kv.u32(
                "tokenizer.ggml.eos_token_id",
                base::u32_of(hp, "eod_token_id", eod)?,
            );
        }
        if let Some(g) = cx.dir.json("generation_config.json")? {
            if let Some(Value::Array(ids)) = g.get("eos_token_id") {
                if ids.len() >= 2 {
                    let path = cx.dir.file("generation_config.json");
                    let id = ids[0].as_u64().and_then(|i| u32::try_from(i).ok());
                    let id = id.ok_or_else(|| {
                        Error::field(
                            &path,
                            "eos_token_id[0]",
                            format!("{} is not a token id", ids[0]),
                        )
                    })?;
                    kv.u32("tokenizer.ggml.eot_token_id", id);
                }
            }
        }
        Ok(())
    }
}

/// `HunyuanVLTextModel(HunYuanModel)`: `HunYuanVLForConditionalGeneration`'s text half
/// (HunyuanOCR). Its XD-RoPE, which transformers 5 saves as `dynamic` with an
/// `mrope_section`, read as `xdrope`; then the base unscaled, the alpha, the sections and the
/// context written.
pub(crate) struct HunyuanVl;

impl TextModel for HunyuanVl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&HunYuan)
    }

    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        HunYuan.init_hparams(class, hp);
        let key = match hp.map.get("rope_parameters") {
            Some(Value::Object(o)) if !o.is_empty() => "rope_parameters",
            _ => "rope_scaling",
        };
        if let Some(Value::Object(rope)) = hp.map.get_mut(key) {
            let dynamic = rope.get("rope_type").and_then(Value::as_str) == Some("dynamic");
            if let (true, Some(sections)) = (dynamic, rope.get("mrope_section").cloned()) {
                rope.insert("rope_type".into(), "xdrope".into());
                rope.insert("type".into(), "xdrope".into());
                rope.insert("xdrope_section".into(), sections);
            }
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        HunYuan.set_gguf_parameters(cx, kv)?;
        let rope = cx.rope();
        if rope.get("rope_type").and_then(Value::as_str) != Some("xdrope") {
            return Ok(());
        }
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let float = |key: &str| {
            rope.get(key).and_then(Value::as_f64).ok_or_else(|| {
                Error::field(
                    &hp.path,
                    format!("rope_parameters.{key}"),
                    "missing or not a number",
                )
            })
        };
        kv.f32(&k("rope.freq_base"), float("rope_theta")?);
        kv.f32(&k("rope.scaling.alpha"), float("alpha")?);
        kv.string(&k("rope.scaling.type"), "none");
        let factor = match rope.get("factor") {
            None => 1.0,
            Some(_) => float("factor")?,
        };
        kv.f32(&k("rope.scaling.factor"), factor);
        let ctx = hp.int(&["max_position_embeddings"])? as u32;
        kv.u32(&k("rope.scaling.original_context_length"), ctx);
        kv.u32(&k("context_length"), ctx);
        let sections: Vec<i32> = rope
            .get("xdrope_section")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_i64().and_then(|n| i32::try_from(n).ok()))
                    .collect()
            })
            .ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "rope_parameters.mrope_section",
                    "not a list of counts",
                )
            })?;
        kv.i32s(&k("rope.dimension_sections"), sections);
        Ok(())
    }
}

/// `HYV3Model`: `HYV3ForCausalLM` (Hy3). `TextModel`'s keys and GPT-2 vocabulary with
/// sigmoid-routed experts and a shared one; the prediction layers stored as blocks past
/// `num_hidden_layers` are kept and counted (`--no-mtp` is not offered).
pub(crate) struct HyV3;

impl TextModel for HyV3 {
    fn block_count(&self, hp: &Hparams, _names: &[String]) -> Result<u64> {
        Ok(hp.int(&["num_hidden_layers"])? + base::nextn_layers(hp)?)
    }

    /// A prediction block's `final_layernorm` is its shared head's norm.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let name = base::filter_tensors(name)?;
        match base::past_trunk(cx.hp(), &name) {
            true => Some(name.replace(".final_layernorm.", ".shared_head.norm.")),
            false => Some(name),
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let ff = hp.int(&["moe_intermediate_size"])?;
        let shared = hp.opt_int(&["num_shared_experts"])?.unwrap_or(1);
        kv.u32(&k("expert_feed_forward_length"), ff as u32);
        kv.u32(
            &k("expert_shared_feed_forward_length"),
            (ff * shared) as u32,
        );
        let norm = hp.opt_bool(&["route_norm"])?.unwrap_or(true);
        kv.bool(&k("expert_weights_norm"), norm);
        let scale = hp.opt_float(&["router_scaling_factor"])?.unwrap_or(1.0);
        kv.f32(&k("expert_weights_scale"), scale);
        kv.u32(&k("expert_gating_func"), 2);
        let nextn = base::nextn_layers(hp)?;
        if nextn > 0 {
            kv.u32(&k("nextn_predict_layers"), nextn as u32);
        }
        Ok(())
    }

    fn experts(&self) -> Option<Experts> {
        Some(Experts {
            marker: ".mlp.experts.",
            packed: &[],
            ..super::qwen::qwen_experts()
        })
    }
}

/// `HunyuanVLVisionModel`: HunyuanOCR's projector (its position embeddings without the CLS
/// row, the processor's pixel bounds, the projection's convolutions forced by outtype).
pub(crate) struct HunyuanVlVision;

impl TextModel for HunyuanVlVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&super::mmproj::VISION)
    }

    /// `max_image_size` stands for the image size.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        super::mmproj::VISION.init_hparams(class, hp);
        if !hp.map.contains_key("image_size") {
            let size = hp.map.get("max_image_size").cloned().unwrap_or(2048.into());
            hp.map.insert("image_size".into(), size);
        }
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        super::mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "hunyuanvl");
        kv.bool("clip.use_gelu", true);
        let eps = hp.opt_float(&["rms_norm_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        let merge = hp.opt_int(&["spatial_merge_size"])?.unwrap_or(2);
        kv.u32(
            "clip.vision.spatial_merge_size",
            base::count32(hp, "spatial_merge_size", merge)?,
        );
        super::mmproj::pixel_bounds(cx, kv, true)?;
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !name.starts_with("vit.") {
            return None;
        }
        super::mmproj::VISION.filter_tensors(cx, name)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let change = base::Rearrange {
            // the CLS token's row dropped
            rows: name.contains("position_embedding").then_some((1, u64::MAX)),
            ..base::Rearrange::default()
        };
        base::yield_as(name, change)
    }

    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<base::Force> {
        if (new_name.contains("mm.0.") || new_name.contains("mm.2."))
            && new_name.ends_with(".weight")
        {
            return Some(super::mmproj::f16_or_f32(cx));
        }
        super::mmproj::VISION.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }
}
