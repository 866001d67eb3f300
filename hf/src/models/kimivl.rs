//! `conversion/kimivl.py`: the MoonViT projectors of Kimi-VL and Kimi K2.5/K2.6.

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
use super::mmproj;
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use serde_json::Value;

/// Whether a checkpoint tensor is the tower's or its projector's (`projector` names the
/// projector's module).
fn is_vision(name: &str, projector: &str) -> bool {
    name.contains("vision_tower") || name.contains(projector)
}

/// `KimiVLModel`: Kimi-VL's projector (MoonViT, its 2-D position table flattened, q/k/v cut
/// apart; a 2×2 patch merge).
pub(crate) struct KimiVl;

impl TextModel for KimiVl {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// `image_size` fixed to 64 · 14 ("for compatibility").
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        hp.map.insert("image_size".into(), (64 * 14).into());
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "kimivl");
        kv.bool("clip.use_gelu", true);
        kv.u32("clip.vision.projector.scale_factor", 2);
        let eps = hp.opt_float(&["layer_norm_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !is_vision(name, "multi_modal_projector") {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, name)
    }

    /// The position table `[h, w, c]` as `[h · w, c]`; `wqkv` cut into three.
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        if name.contains("wqkv") {
            let parts = ["wq", "wk", "wv"].map(|p| name.replace("wqkv", p));
            return base::equal_parts(name, shape, &parts);
        }
        let mut change = Rearrange::default();
        if name.contains("pos_emb.weight") {
            let [h, w, c] = shape[..] else {
                return Err(Error::reference(format!(
                    "{name} is {shape:?}, not a [height, width, channels] table"
                )));
            };
            change.reshape = Some(([h * w, c, 0, 0], 2));
        }
        base::yield_as(name, change)
    }
}

/// `KimiK25Model`: Kimi K2.5/K2.6's projector (MoonViT-3D: the fused `wqkv` kept, its q and
/// k rows reordered for 2-D RoPE as split halves; position tables for height, width and
/// time; a patch-merging MLP).
pub(crate) struct KimiK25;

/// A tower field by its published name or transformers 5's: `init_pos_emb_height` is
/// `pos_emb_height` there. The reference reads only the first (its default otherwise): where
/// they differ it writes a table size the stored table contradicts; ggufrw reads either.
fn pos_emb(hp: &Hparams, axis: &str, default: u64) -> Result<u64> {
    let published = format!("init_pos_emb_{axis}");
    let tf5 = format!("pos_emb_{axis}");
    for key in [published.as_str(), tf5.as_str()] {
        if hp.map.contains_key(key) {
            return hp.int(&[key]);
        }
    }
    Ok(default)
}

/// The tower's head count: `num_attention_heads`, else the published `vt_num_attention_heads`
/// (the reference reads only the first and takes 16 without it, which cuts the heads of a
/// tower of another count wrongly), else 16.
fn tower_heads(hp: &Hparams) -> Result<u64> {
    Ok(hp
        .opt_int(&["num_attention_heads", "vt_num_attention_heads"])?
        .unwrap_or(16))
}

impl TextModel for KimiK25 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&mmproj::VISION)
    }

    /// `image_size` as the position table's height in patches.
    fn init_hparams(&self, class: &str, hp: &mut Hparams) {
        mmproj::VISION.init_hparams(class, hp);
        let patch = hp
            .map
            .get("patch_size")
            .and_then(Value::as_u64)
            .unwrap_or(14);
        let height = pos_emb(hp, "height", 64).unwrap_or(64);
        hp.map.insert("image_size".into(), (height * patch).into());
    }

    /// The position tables' sizes, the projector's activation and epsilon, the merge and the
    /// processor's patch bounds (8 patches up to `in_patch_limit`).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        mmproj::VISION.set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string("clip.projector_type", "kimik25");
        for (axis, default) in [("height", 64), ("width", 64), ("time", 4)] {
            let n = pos_emb(hp, axis, default)?;
            kv.u32(
                &format!("vision.pos_emb_{axis}"),
                base::count32(hp, &format!("init_pos_emb_{axis}"), n)?,
            );
        }
        let act = hp.map.get("projector_hidden_act");
        kv.bool(
            "clip.use_gelu",
            act.is_none_or(|a| a.as_str() == Some("gelu")),
        );
        let eps = hp.opt_float(&["projector_ln_eps"])?.unwrap_or(1e-5);
        kv.f32("clip.vision.attention.layer_norm_epsilon", eps);
        let merge = match hp.map.get("merge_kernel_size") {
            None => 2,
            Some(v) => v
                .as_array()
                .and_then(|a| a.first())
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    Error::field(&hp.path, "merge_kernel_size", "not a list of sizes")
                })?,
        };
        kv.u32(
            "clip.vision.projector.scale_factor",
            base::count32(hp, "merge_kernel_size", merge)?,
        );
        let patch = hp.opt_int(&["patch_size"])?.unwrap_or(14);
        let pre = mmproj::preprocessor_config(cx)?;
        let limit = match pre.get("in_patch_limit") {
            None => 16384,
            Some(v) => v.as_u64().ok_or_else(|| {
                Error::field(
                    &cx.dir.file("preprocessor_config.json"),
                    "in_patch_limit",
                    "not a count",
                )
            })?,
        };
        let per_patch = patch * patch;
        kv.u32(
            "clip.vision.image_min_pixels",
            base::count32(hp, "patch_size", 8 * per_patch)?,
        );
        kv.u32(
            "clip.vision.image_max_pixels",
            base::count32(hp, "in_patch_limit", limit * per_patch)?,
        );
        Ok(())
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        if !is_vision(name, "mm_projector") {
            return None;
        }
        mmproj::VISION.filter_tensors(cx, name)
    }

    /// q's and k's rows of `wqkv` (weight and bias) each head's interleaved rotated pairs
    /// written as split halves; the time table `[t, 1, c]` as `[t, c]`; the merging MLP's
    /// `proj.0`/`proj.2` as `proj.linear_1`/`proj.linear_2`.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut change = Rearrange::default();
        if name.contains("wqkv") {
            let heads = tower_heads(cx.hp())?;
            let rows = shape.first().copied().unwrap_or(0);
            let qkv = rows / 3;
            let head = qkv.checked_div(heads).unwrap_or(0);
            if rows % 3 != 0 || heads == 0 || qkv % heads != 0 || head % 4 != 0 {
                return Err(Error::reference(format!(
                    "{name}: {rows} rows are not q, k and v of {heads} heads whose width \
                     divides by 4"
                )));
            }
            change.order = Order::HeadsSwapped {
                end: 2 * qkv,
                outer: head / 4,
                inner: 2,
                block: 2,
            };
        }
        if name.contains("pos_emb.time_weight") {
            if let [t, _, c] = shape[..] {
                change.reshape = Some(([t, c, 0, 0], 2));
            }
        }
        let name = if name.contains("mm_projector.proj.0.") {
            name.replace(".proj.0.", ".proj.linear_1.")
        } else if name.contains("mm_projector.proj.2.") {
            name.replace(".proj.2.", ".proj.linear_2.")
        } else {
            name.to_owned()
        };
        base::yield_as(&name, change)
    }

    /// transformers 5's names for the published ones, as the text half reads them.
    fn published_name(&self, name: &str) -> Option<String> {
        super::deepseek::KimiMultimodal.published_name(name)
    }
}

/// `Glm5vModel(KimiK25Model)`: GLM-5.2-Vision's projector, Kimi K2.5's with the projector's
/// layers named `mm_projector.linear_1`/`linear_2`.
pub(crate) struct Glm5v;

impl TextModel for Glm5v {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&KimiK25)
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let name = match name.strip_prefix("mm_projector.linear_") {
            Some(rest) => format!("mm_projector.proj.linear_{rest}"),
            None => name.to_owned(),
        };
        KimiK25.modify_tensors(cx, &name, shape)
    }
}
