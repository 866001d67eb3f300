//! `conversion/internvl.py`: InternVL's vision tower (`InternVisionModel`).

use super::base::{self, Ctx, Force, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// `InternVisionModel`: InternVL's projector (InternViT with layer scales, q/k/v stored fused,
/// the `mlp1` projector over a pixel shuffle), as InternVL's remote code and Intern-S1 name it.
pub(crate) struct InternVision;

/// Intern-S1's projector names, as the reference renames them.
const INTERN_S1: [(&str, &str); 6] = [
    ("model.multi_modal_projector.layer_norm.bias", "mlp1.0.bias"),
    (
        "model.multi_modal_projector.layer_norm.weight",
        "mlp1.0.weight",
    ),
    ("model.multi_modal_projector.linear_1.bias", "mlp1.1.bias"),
    (
        "model.multi_modal_projector.linear_1.weight",
        "mlp1.1.weight",
    ),
    ("model.multi_modal_projector.linear_2.bias", "mlp1.3.bias"),
    (
        "model.multi_modal_projector.linear_2.weight",
        "mlp1.3.weight",
    ),
];

/// `global_config[key]` where present and positive, as a count.
fn tiles(hp: &Hparams, key: &str) -> Result<Option<u32>> {
    match hp.raw.get(key) {
        None => Ok(None),
        Some(v) => {
            let n = v
                .as_i64()
                .ok_or_else(|| Error::field(&hp.path, key, "not an integer"))?;
            match n > 0 {
                true => base::u32_of(hp, key, v).map(Some),
                false => Ok(None),
            }
        }
    }
}

impl TextModel for InternVision {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// A list's first element for `image_size` and `patch_size`.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        for key in ["image_size", "patch_size"] {
            if let Some(Value::Array(a)) = hp.map.get(key) {
                let first = a.first().cloned().unwrap_or(Value::Null);
                hp.map.insert(key.into(), first);
            }
        }
    }

    /// The tower's epsilon and activation, the pixel shuffle's factor (`1 / downsample_ratio`)
    /// and the tiles' bounds where the config gives them.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "internvl");
        let eps = hp
            .opt_float(&["layer_norm_eps"])?
            .ok_or_else(|| Error::field(&hp.path, "vision_config.layer_norm_eps", "missing"))?;
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        match hp.map.get("hidden_act").and_then(Value::as_str) {
            Some("silu") => kv.bool("clip.use_silu", true),
            Some("gelu") => kv.bool("clip.use_gelu", true),
            other => {
                return Err(Error::reference(format!(
                    "ValueError: Unsupported hidden_act: {}",
                    other.unwrap_or("None")
                )))
            }
        }
        let ratio = hp
            .raw
            .get("downsample_ratio")
            .and_then(Value::as_f64)
            .ok_or_else(|| {
                Error::field(
                    &hp.path,
                    "downsample_ratio",
                    "missing (AssertionError: downsample_ratio is None)",
                )
            })?;
        let factor = (1.0 / ratio).trunc();
        if !(1.0..=f64::from(u32::MAX)).contains(&factor) {
            return Err(Error::field(
                &hp.path,
                "downsample_ratio",
                "not a ratio in (0, 1]",
            ));
        }
        kv.u32("clip.vision.projector.scale_factor", factor as u32);
        if let Some(n) = tiles(hp, "min_dynamic_patch")? {
            kv.u32("clip.vision.preproc_min_tiles", n);
        }
        if let Some(n) = tiles(hp, "max_dynamic_patch")? {
            kv.u32("clip.vision.preproc_max_tiles", n);
        }
        Ok(())
    }

    /// Qwen2-VL's: the position table F32.
    fn tensor_force_quant(
        &self,
        cx: &Ctx,
        name: &str,
        new_name: &str,
        bid: Option<u64>,
        n_dims: usize,
    ) -> Option<Force> {
        super::qwenvl::Qwen2VlVision.tensor_force_quant(cx, name, new_name, bid, n_dims)
    }

    /// The tower (`vision_model.`, read as `vision_tower.vision_model.`) and `mlp1` alone;
    /// the layer scales and position table given their `.weight`.
    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        let prefixes = [
            "vision_model",
            "mlp",
            "model.vision_tower",
            "model.multi_modal_projector",
        ];
        if !prefixes.iter().any(|p| name.starts_with(p)) {
            return None;
        }
        let mut name = INTERN_S1
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name.to_owned(), |(_, to)| (*to).to_owned());
        if name.starts_with("vision_model") {
            name = format!("vision_tower.{name}");
        }
        let scaled = name.contains(".ls") || name.contains(".lambda_");
        if (scaled || name.contains("position_embedding")) && !name.ends_with(".weight") {
            name.push_str(".weight");
        }
        mmproj::VISION.filter_tensors(cx, &name)
    }

    /// The fused `attn.qkv` cut into `self_attn.{q,k,v}_proj`.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if !name.contains(".qkv.") {
            return base::yield_as(name, Rearrange::default());
        }
        let parts = ["q_proj", "k_proj", "v_proj"]
            .map(|p| name.replace("attn.qkv", &format!("self_attn.{p}")));
        base::equal_parts(name, shape, &parts)
    }
}
