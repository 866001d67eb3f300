//! NVFP4 checkpoints (ModelOpt's `NVFP4` / `W4A16_NVFP4`, compressed-tensors'
//! `nvfp4-pack-quantized`) as the reference's `_generate_nvfp4_tensors` writes them: nothing
//! is dequantized. Each weight's E2M1 codes and E4M3 block scales are moved into ggml's
//! `block_nvfp4` (64 values: four scales, then 32 bytes of codes), a block's experts stacked;
//! the per-tensor second scale and the input scale become F32 tensors of their own where
//! they are not 1. These tensors come first in the file.

use crate::error::{Error, Result};
use crate::models::base::Order;
use crate::safetensors::{Checkpoint, Dtype, Entry};
use std::collections::{HashMap, HashSet};

/// One NVFP4 weight: its codes (`[out, in / 2]` bytes, element `2k` in byte `k`'s low
/// nibble) and its block scales (`[out, in / 16]` E4M3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    /// The codes' entry.
    pub weight: usize,
    /// The scales' entry.
    pub scale: usize,
}

/// An NVFP4 tensor to write, in the order the reference writes them.
#[derive(Clone, Debug)]
pub(crate) struct Tensor {
    /// The checkpoint name it is mapped from (a block's experts:
    /// `model.layers.{bid}.mlp.experts.{proj}.weight`).
    pub name: String,
    /// The weight, or a block's experts in id order.
    pub parts: Vec<Part>,
    /// Whether `parts` are experts, stacked along a new first axis.
    pub experts: bool,
    /// The output rows, per part.
    pub rows: u64,
    /// The inputs of each row (a multiple of 64).
    pub cols: u64,
    /// `.scale`: the second scales (one a part), or none when they are 1.
    pub scale2: Vec<f32>,
    /// `.input_scale`, likewise.
    pub input: Vec<f32>,
    /// Whether its activations stay 16-bit (`W4A16_NVFP4`): listed in
    /// `general.tensor_extra.prec_a4` as false.
    pub w4a16: bool,
}

/// What the pass found: the tensors it writes and the ones it leaves for the rest.
pub(crate) struct Taken {
    /// The NVFP4 tensors, in writing order.
    pub tensors: Vec<Tensor>,
    /// The checkpoint's other tensors, in the reference's order.
    pub kept: Vec<(String, usize)>,
}

/// The quantization's names, as `prepare_tensors` read them.
pub(crate) struct Config<'a> {
    /// Whether the checkpoint is compressed-tensors' (its names renamed to ModelOpt's first).
    pub compressed_tensors: bool,
    /// `quant_algo` for the whole checkpoint, as read before NVFP4 was inferred.
    pub algo: Option<&'a str>,
    /// `quantized_layers`' algorithm of each layer, by module name.
    pub layers: &'a HashMap<String, Option<String>>,
    /// The expert count (`num_local_experts` or `num_experts`; 0 when not given).
    pub experts: u64,
}

/// `_generate_nvfp4_tensors` over `kept` (compressed-tensors' names renamed first, as
/// `prepare_tensors` renames them); `read` gives an entry's values as float32.
pub(crate) fn take(
    ckpt: &Checkpoint,
    kept: Vec<(String, usize)>,
    cfg: &Config,
    read: &dyn Fn(&Entry) -> Vec<f32>,
) -> Result<Taken> {
    let mut kept = kept;
    let mut inverted: HashSet<usize> = HashSet::new();
    if cfg.compressed_tensors {
        // each renamed tensor moves to the end, as a dict's popped and re-added key does
        let mut present: HashSet<String> = kept.iter().map(|(n, _)| n.clone()).collect();
        let (mut stay, mut moved) = (Vec::new(), Vec::new());
        for (name, i) in kept {
            let renamed = [
                (".weight_packed", ".weight", false),
                (".weight_global_scale", ".weight_scale_2", true),
                (".input_global_scale", ".input_scale", true),
            ]
            .into_iter()
            .find_map(|(from, to, inv)| {
                let stem = name.strip_suffix(from)?;
                Some((format!("{stem}{to}"), inv))
            });
            match renamed {
                Some((new, inv)) if !present.contains(&new) => {
                    present.insert(new.clone());
                    if inv {
                        inverted.insert(i);
                    }
                    moved.push((new, i));
                }
                _ => stay.push((name, i)),
            }
        }
        stay.extend(moved);
        kept = stay;
    }
    let index: HashMap<&str, usize> = kept.iter().map(|(n, i)| (n.as_str(), *i)).collect();
    let values = |i: usize| -> Vec<f32> {
        let v = read(&ckpt.entries[i]);
        match inverted.contains(&i) {
            true => v.into_iter().map(|x| 1.0 / x).collect(),
            false => v,
        }
    };
    let mut tensors = Vec::new();
    let mut consumed: HashSet<&str> = HashSet::new();
    // a block's experts of one projection, in the order their groups were first met
    let mut groups: Vec<((u64, String), Vec<Member>)> = Vec::new();
    for (name, _) in &kept {
        let Some(stem) = name.strip_suffix(".weight") else {
            continue;
        };
        let scale_name = name.replace(".weight", ".weight_scale");
        let Some(&s) = index.get(scale_name.as_str()) else {
            continue;
        };
        if ckpt.entries[s].shape.len() < 2 {
            continue; // FP8 with a scale per tensor or row: dequant_model's
        }
        let w = index[name.as_str()];
        let (rows, cols) = check(ckpt, w, s)?;
        let part = Part {
            weight: w,
            scale: s,
        };
        consumed.insert(name);
        if let Some((k, _)) = index.get_key_value(scale_name.as_str()) {
            consumed.insert(k);
        }
        let mut side = |suffix: &str| -> Option<Vec<f32>> {
            let n = name.replace(".weight", suffix);
            let (k, &i) = index.get_key_value(n.as_str())?;
            consumed.insert(k);
            Some(values(i))
        };
        let scale2 = side(".weight_scale_2");
        let input = side(".input_scale");
        if let Some((bid, xid, proj)) = expert_of(name) {
            let sum = |v: &Option<Vec<f32>>| v.as_ref().map_or(1.0, |v| v.iter().sum::<f32>());
            let key = (bid, proj.to_owned());
            let at = match groups.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    groups.push((key, Vec::new()));
                    groups.len() - 1
                }
            };
            groups[at].1.push((xid, part, sum(&scale2), sum(&input)));
            if cfg.experts > 0 && groups[at].1.len() as u64 >= cfg.experts {
                let (key, members) = groups.remove(at);
                tensors.push(stacked(ckpt, cfg, key, members)?);
            }
            continue;
        }
        let trivial = |v: &[f32]| {
            v.len() <= 1 && (v.iter().map(|&x| f64::from(x)).sum::<f64>() - 1.0).abs() < 1e-6
        };
        let written = |v: Option<Vec<f32>>| v.filter(|v| !trivial(v)).unwrap_or_default();
        tensors.push(Tensor {
            name: name.clone(),
            parts: vec![part],
            experts: false,
            rows,
            cols,
            scale2: written(scale2),
            input: written(input),
            w4a16: w4a16(cfg, stem),
        });
    }
    for (key, members) in groups {
        tensors.push(stacked(ckpt, cfg, key, members)?);
    }
    let kept = kept
        .iter()
        .filter(|(n, _)| {
            !consumed.contains(n.as_str()) && !n.ends_with(".k_scale") && !n.ends_with(".v_scale")
        })
        .cloned()
        .collect();
    Ok(Taken { tensors, kept })
}

/// An expert of a block's group: its id, weight, and second and input scales.
type Member = (u64, Part, f32, f32);

/// `(block, expert, projection)` of `….layers.{bid}.….experts.{xid}.{gate,up,down}_proj.weight`
/// (block 0 when the name has none).
fn expert_of(name: &str) -> Option<(u64, u64, &str)> {
    let stem = name.strip_suffix(".weight")?;
    let (head, proj) = stem.rsplit_once('.')?;
    if !matches!(proj, "gate_proj" | "up_proj" | "down_proj") {
        return None;
    }
    let (head, xid) = head.rsplit_once('.')?;
    let xid: u64 = xid
        .parse()
        .ok()
        .filter(|_| xid.bytes().all(|b| b.is_ascii_digit()))?;
    if !head.ends_with(".experts") {
        return None;
    }
    let bid = head
        .split(".layers.")
        .nth(1)
        .and_then(|r| r.split('.').next())
        .filter(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    Some((bid, xid, proj))
}

/// A block's experts of one projection, in id order (`_flush_nvfp4_experts`).
fn stacked(
    ckpt: &Checkpoint,
    cfg: &Config,
    (bid, proj): (u64, String),
    mut members: Vec<Member>,
) -> Result<Tensor> {
    members.sort_by_key(|m| m.0);
    let shape = |p: &Part| ckpt.entries[p.weight].shape.clone();
    let first = shape(&members[0].1);
    if let Some(m) = members.iter().find(|m| shape(&m.1) != first) {
        let e = &ckpt.entries[m.1.weight];
        return Err(Error::field(
            &ckpt.parts[e.part].path,
            format!("{}.shape", e.name),
            format!("{:?}: the block's other experts are {first:?}", e.shape),
        ));
    }
    let (rows, cols) = check(ckpt, members[0].1.weight, members[0].1.scale)?;
    let name = format!("model.layers.{bid}.mlp.experts.{proj}.weight");
    // np.allclose(scales, 1.0, atol=1e-6)
    let ones = |v: &[f32]| v.iter().all(|&x| (f64::from(x) - 1.0).abs() <= 1e-6 + 1e-5);
    let kept = |v: Vec<f32>| if ones(&v) { Vec::new() } else { v };
    Ok(Tensor {
        w4a16: w4a16(cfg, name.trim_end_matches(".weight")),
        name,
        parts: members.iter().map(|m| m.1).collect(),
        experts: true,
        rows,
        cols,
        scale2: kept(members.iter().map(|m| m.2).collect()),
        input: kept(members.iter().map(|m| m.3).collect()),
    })
}

/// `_tag_prec_a4`: the algorithm of the nearest enclosing module `quantized_layers` names,
/// else the checkpoint's, is `W4A16_NVFP4`.
fn w4a16(cfg: &Config, module: &str) -> bool {
    let mut name = module;
    let mut algo = cfg.algo;
    while !name.is_empty() {
        if let Some(a) = cfg.layers.get(name) {
            algo = a.as_deref();
            break;
        }
        name = name.rsplit_once('.').map_or("", |(head, _)| head);
    }
    algo == Some("W4A16_NVFP4")
}

/// The weight's rows and inputs, if codes and scales are NVFP4's: the reference moves their
/// bytes without looking at their types and fails on shapes it cannot cut into 64-value
/// blocks; both are refused here, naming the tensor.
fn check(ckpt: &Checkpoint, w: usize, s: usize) -> Result<(u64, u64)> {
    let (we, se): (&Entry, &Entry) = (&ckpt.entries[w], &ckpt.entries[s]);
    let bad = |e: &Entry, what: &str, why: String| {
        Error::field(&ckpt.parts[e.part].path, format!("{}.{what}", e.name), why)
    };
    if we.dtype != Dtype::U8 {
        return Err(bad(
            we,
            "dtype",
            format!("{}: NVFP4 codes are stored as uint8", we.dtype.torch_name()),
        ));
    }
    if se.dtype.size() != 1 {
        return Err(bad(
            se,
            "dtype",
            format!(
                "{}: NVFP4 block scales are one byte (float8_e4m3fn)",
                se.dtype.torch_name()
            ),
        ));
    }
    let (&[out, half], &[s_out, blocks]) = (&we.shape[..], &se.shape[..]) else {
        return Err(bad(
            we,
            "shape",
            format!(
                "{:?} with scales {:?}: not [out, in / 2] with [out, in / 16]",
                we.shape, se.shape
            ),
        ));
    };
    if s_out != out || half != blocks * 8 || blocks % 4 != 0 || blocks == 0 {
        return Err(bad(
            we,
            "shape",
            format!(
                "{:?} with scales {:?}: NVFP4 rows of a multiple of 64 inputs are written, \
                 scales for each 16 (the reference fails on these)",
                we.shape, se.shape
            ),
        ));
    }
    Ok((out, blocks * 16))
}

/// Output rows `first..end` of `t` (across its parts) as ggml's blocks: per 64 inputs the four
/// scales without their sign bit, then bytes holding elements `j` and `j + 8` of each 16.
/// Each part's rows are taken in `order`.
pub(crate) fn repack(
    ckpt: &Checkpoint,
    t: &Tensor,
    order: Order,
    first: u64,
    end: u64,
    out: &mut Vec<u8>,
) {
    let super_blocks = (t.cols / 64) as usize;
    for r in first..end {
        let (p, i) = ((r / t.rows) as usize, r % t.rows);
        let part = t.parts[p];
        let (we, se) = (&ckpt.entries[part.weight], &ckpt.entries[part.scale]);
        let src = order.source(i, t.rows) as usize;
        let codes = &ckpt.bytes(we)[src * super_blocks * 32..][..super_blocks * 32];
        let scales = &ckpt.bytes(se)[src * super_blocks * 4..][..super_blocks * 4];
        for b in 0..super_blocks {
            out.extend(scales[b * 4..][..4].iter().map(|d| d & 0x7F));
            let q = &codes[b * 32..][..32];
            let elem = |k: usize| (q[k / 2] >> (4 * (k % 2))) & 0xF;
            for s in 0..4 {
                out.extend((0..8).map(|j| elem(16 * s + j) | (elem(16 * s + j + 8) << 4)));
            }
        }
    }
}
