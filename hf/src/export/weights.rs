//! The weights of an exported folder: each GGUF tensor back to its checkpoint name, shape and
//! layout, dequantized a run of rows at a time and written as safetensors, sharded as
//! `save_pretrained` shards.

use super::family::Family;
use super::Dtype;
use super::Shards;
use crate::error::{Error, Result};
use crate::names::NameMap;
use crate::tables::{Mapping, Tensor};
use ggufrw::quant::GgmlType;
use ggufrw::view::GgufView;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How a tensor's values change on the way back (the inverse of `modify_tensors`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Undo {
    /// Nothing.
    None,
    /// Llama's q/k permutation over this many heads, undone.
    Unpermute(u64),
    /// Gemma's norms: the checkpoint stores weight - 1.
    Subtract1,
}

/// One checkpoint tensor to write: a run of rows of one GGUF tensor.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    /// The checkpoint name.
    pub hf: String,
    /// The GGUF tensor's file (shard), index there and name.
    pub shard: usize,
    pub index: usize,
    pub gguf: String,
    /// The checkpoint shape (torch order).
    pub shape: Vec<u64>,
    /// The GGUF tensor's rows this tensor takes (rows of its first dimension).
    pub rows: (u64, u64),
    pub undo: Undo,
}

impl Planned {
    fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// What the export needs of the file's hyperparameters.
pub(crate) struct Heads {
    pub n_head: u64,
    pub n_head_kv: u64,
}

/// The checkpoint name a family's transformers class gives `tensor` (block `bid`): the first
/// of the table's names in the class's layout (`model.…` and `lm_head`, blocks under
/// `model.layers.N.self_attn`/`mlp` or a direct norm) that the forward map sends back to the
/// same tensor.
fn checkpoint_name(
    family: Family,
    map: &NameMap,
    tensor: Tensor,
    bid: Option<u64>,
) -> Option<String> {
    let arch = family.arch();
    let mapping: &Mapping = if bid.is_some() {
        arch.block().into_iter().find(|m| m.tensor == tensor)?
    } else {
        arch.global().find(|m| m.tensor == tensor)?
    };
    let gguf = crate::names::format_name(tensor, bid, "");
    let fused = family == Family::Phi3;
    let fits = |name: &str| -> bool {
        match bid {
            Some(b) => {
                let Some(rest) = name.strip_prefix(&format!("model.layers.{b}.")) else {
                    return false;
                };
                let layout = match rest.split_once('.') {
                    Some((module, tail)) => {
                        (module == "self_attn" || module == "mlp")
                            && !tail.contains("rotary_emb")
                            // Phi-3 keeps gate and up fused; the others split them.
                            && (tail == "gate_up_proj") == (fused && tensor == Tensor::FFN_UP)
                    }
                    None => rest.ends_with("layernorm") || rest.ends_with("_norm"),
                };
                layout
            }
            None => name == "lm_head" || (name.starts_with("model.") && !name[6..].contains('.')),
        }
    };
    let mut candidates = mapping.hf.iter().filter_map(|template| {
        let name = match bid {
            Some(b) => template.replace("{bid}", &b.to_string()),
            None => (*template).to_owned(),
        };
        let back = map.get(&name, &[])?;
        (fits(&name) && back.0 == tensor && back.1 == gguf).then_some(name)
    });
    let first = candidates.next()?;
    // The table lists other models' names first (Persimmon's `q_layernorm`, Falcon's
    // `query_key_value`); the classes written here name these as below.
    let preferred = match tensor {
        Tensor::ATTN_Q_NORM => ".q_norm",
        Tensor::ATTN_K_NORM => ".k_norm",
        Tensor::ATTN_QKV => ".qkv_proj",
        _ => return Some(first),
    };
    if first.ends_with(preferred) {
        return Some(first);
    }
    let mut rest = candidates;
    Some(rest.find(|n| n.ends_with(preferred)).unwrap_or(first))
}

/// The tensor and block of a GGUF tensor name without its suffix.
fn parse_gguf(family: Family, base: &str) -> Option<(Tensor, Option<u64>)> {
    let arch = family.arch();
    if let Some(rest) = base.strip_prefix("blk.") {
        let (b, _) = rest.split_once('.')?;
        let bid: u64 = b.parse().ok()?;
        let t = arch
            .block()
            .into_iter()
            .find(|m| m.tensor.template().replace("{bid}", b) == base)?;
        return Some((t.tensor, Some(bid)));
    }
    arch.global()
        .find(|m| m.tensor.template() == base)
        .map(|m| (m.tensor, None))
}

/// The checkpoint tensors of the file, in its tensor order (experts split, computed tensors
/// left out: they are the config's).
pub(crate) fn plan(
    shards: &Shards<'_, '_>,
    family: Family,
    blocks: u64,
    heads: &Heads,
) -> Result<Vec<Planned>> {
    let map = NameMap::new(family.arch(), blocks);
    let mut out = Vec::new();
    let files = shards.views.iter().zip(shards.paths).enumerate();
    for (shard, index, t, source) in files.flat_map(|(s, (v, p))| {
        v.tensors()
            .enumerate()
            .map(move |(i, t)| (s, i, t, p.as_path()))
    }) {
        let name = t
            .name
            .as_str()
            .map_err(|_| Error::field(source, format!("tensor {index}"), "name is not UTF-8"))?;
        // Every tensor's data is in the file before anything is written.
        shards.views[shard]
            .tensor_data(index)
            .map_err(|e| Error::Output(e.in_file(source)))?;
        let dims: Vec<u64> = t.dimensions.to_vec();
        let (base, suffix) = match name.rsplit_once('.') {
            Some((b, s)) if s == "weight" || s == "bias" => (b, s),
            _ => return Err(unknown(source, name, family)),
        };
        let Some((tensor, bid)) = parse_gguf(family, base) else {
            return Err(unknown(source, name, family));
        };
        if let Some(b) = bid.filter(|&b| b >= blocks) {
            return Err(Error::field(
                source,
                name,
                format!("block {b} is past the model's block_count, {blocks}"),
            ));
        }
        if matches!(
            tensor,
            Tensor::ROPE_FREQS | Tensor::ROPE_FACTORS_LONG | Tensor::ROPE_FACTORS_SHORT
        ) {
            // Computed from the config by the converter; the config carries them back.
            continue;
        }
        let Some(hf) = checkpoint_name(family, &map, tensor, bid) else {
            return Err(unknown(source, name, family));
        };
        let mut shape: Vec<u64> = dims.iter().rev().copied().collect();
        let rows_total: u64 = dims.iter().skip(1).product();
        let norm = hf.ends_with("norm");
        let undo = match family {
            Family::Gemma2 | Family::Gemma3 if norm => Undo::Subtract1,
            Family::Llama if hf.ends_with("self_attn.q_proj") => Undo::Unpermute(heads.n_head),
            Family::Llama if hf.ends_with("self_attn.k_proj") => Undo::Unpermute(heads.n_head_kv),
            _ => Undo::None,
        };
        if let Undo::Unpermute(h) = undo {
            let rows = if suffix == "bias" {
                dims[0]
            } else {
                rows_total
            };
            if h == 0 || rows % (2 * h) != 0 {
                return Err(Error::field(
                    source,
                    name,
                    format!("{rows} rows do not split into {h} heads of two halves"),
                ));
            }
        }
        if matches!(
            tensor,
            Tensor::FFN_GATE_EXP | Tensor::FFN_UP_EXP | Tensor::FFN_DOWN_EXP
        ) {
            if dims.len() != 3 {
                return Err(Error::field(
                    source,
                    name,
                    "expert tensors have 3 dimensions",
                ));
            }
            let per = dims[1];
            for x in 0..dims[2] {
                out.push(Planned {
                    hf: format!(
                        "{}.{suffix}",
                        hf.replacen(".experts.", &format!(".experts.{x}."), 1)
                    ),
                    shard,
                    index,
                    gguf: name.to_owned(),
                    shape: vec![dims[1], dims[0]],
                    rows: (x * per, (x + 1) * per),
                    undo,
                });
            }
            continue;
        }
        if tensor == Tensor::FFN_GATE_INP_SHEXP && shape.len() == 1 {
            // The converter squeezes the (1, hidden) gate.
            shape.insert(0, 1);
        }
        out.push(Planned {
            hf: format!("{hf}.{suffix}"),
            shard,
            index,
            gguf: name.to_owned(),
            shape,
            rows: (0, rows_total),
            undo,
        });
    }
    Ok(out)
}

/// Refuses a file whose tensors do not make the model `cfg` describes (after [`plan`]): a
/// tensor one block has and another lacks (the config says every block is
/// alike), or an embedding, norm or attention projection whose shape is not the config's.
pub(crate) fn check_model(
    shards: &Shards<'_, '_>,
    family: Family,
    blocks: u64,
    cfg: &serde_json::Value,
) -> Result<()> {
    let get = |k: &str| cfg.get(k).and_then(serde_json::Value::as_u64);
    let hidden = get("hidden_size").unwrap_or(0);
    let n_head = get("num_attention_heads").unwrap_or(1).max(1);
    let n_kv = get("num_key_value_heads").unwrap_or(n_head);
    let head_dim = get("head_dim").unwrap_or(hidden / n_head);
    let mut present: Vec<std::collections::BTreeSet<String>> =
        vec![Default::default(); blocks as usize];
    let mut first_source = shards.paths[0].as_path();
    for (view, path) in shards.views.iter().zip(shards.paths) {
        for t in view.tensors() {
            let Ok(name) = t.name.as_str() else { continue };
            let dims: Vec<u64> = t.dimensions.to_vec();
            let base = name.rsplit_once('.').map_or(name, |(b, _)| b);
            let Some((tensor, bid)) = parse_gguf(family, base) else {
                continue;
            };
            // `plan` has refused a block past block_count.
            if let Some((b, have)) = bid.and_then(|b| Some((b, present.get_mut(b as usize)?))) {
                let template = name.replacen(&format!("blk.{b}."), "blk.{bid}.", 1);
                have.insert(template);
                if b == 0 {
                    first_source = path;
                }
            }
            let want: Option<(usize, u64, String)> = match tensor {
                Tensor::TOKEN_EMBD | Tensor::ATTN_NORM | Tensor::OUTPUT_NORM => {
                    Some((0, hidden, format!("hidden_size {hidden}")))
                }
                Tensor::ATTN_Q if name.ends_with(".weight") => Some((
                    1,
                    n_head * head_dim,
                    format!("{n_head} heads of {head_dim}"),
                )),
                Tensor::ATTN_K | Tensor::ATTN_V if name.ends_with(".weight") => Some((
                    1,
                    n_kv * head_dim,
                    format!("{n_kv} key/value heads of {head_dim}"),
                )),
                Tensor::ATTN_QKV if name.ends_with(".weight") => Some((
                    1,
                    (n_head + 2 * n_kv) * head_dim,
                    format!("{n_head} heads and 2 x {n_kv} key/value heads of {head_dim}"),
                )),
                _ => None,
            };
            if let Some((axis, n, why)) = want {
                if dims.get(axis) != Some(&n) {
                    return Err(Error::field(
                        path,
                        name,
                        format!("shape {dims:?}: the config's {why} make dimension {axis} {n}"),
                    ));
                }
            }
        }
    }
    // What every block of these families has: attention in, out and its norm, and a feed-forward
    // down projection (dense or experts).
    let needed: [&[&str]; 4] = [
        &["blk.{bid}.attn_q.weight", "blk.{bid}.attn_qkv.weight"],
        &["blk.{bid}.attn_output.weight"],
        &["blk.{bid}.attn_norm.weight"],
        &[
            "blk.{bid}.ffn_down.weight",
            "blk.{bid}.ffn_down_exps.weight",
        ],
    ];
    for (b, have) in present.iter().enumerate() {
        if let Some(any) = needed
            .iter()
            .find(|alts| !alts.iter().any(|t| have.contains(*t)))
        {
            return Err(Error::field(
                first_source,
                any[0].replace("{bid}", &b.to_string()),
                "missing: every block of the model needs it",
            ));
        }
    }
    if shards.find("output_norm.weight").is_none() {
        return Err(Error::field(first_source, "output_norm.weight", "missing"));
    }
    let all: std::collections::BTreeSet<&String> = present.iter().flatten().collect();
    for (b, have) in present.iter().enumerate() {
        if let Some(missing) = all.iter().find(|t| !have.contains(**t)) {
            let other = present
                .iter()
                .position(|p| p.contains(*missing))
                .unwrap_or(0);
            return Err(Error::field(
                first_source,
                missing.replace("{bid}", &b.to_string()),
                format!("missing (block {other} has it, and the config says every block is alike)"),
            ));
        }
    }
    Ok(())
}

fn unknown(source: &Path, name: &str, family: Family) -> Error {
    Error::field(
        source,
        name,
        format!(
            "no checkpoint name for this tensor in {} ({:?})",
            family.arch().name,
            family
        ),
    )
}

/// The bytes one element takes in `dtype` (resolved).
fn element_size(dtype: Dtype) -> u64 {
    match dtype {
        Dtype::F32 => 4,
        _ => 2,
    }
}

/// safetensors' name of a resolved dtype.
fn safetensors_dtype(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F32 => "F32",
        Dtype::F16 => "F16",
        _ => "BF16",
    }
}

/// `auto`: the file's 16-bit float type if it has one (BF16 first), else f32.
pub(crate) fn resolve(views: &[GgufView<'_>], dtype: Dtype) -> Dtype {
    if dtype != Dtype::Auto {
        return dtype;
    }
    let has = |ty: GgmlType| {
        views
            .iter()
            .any(|v| v.tensors().any(|t| t.ggml_type == ty as u32))
    };
    if has(GgmlType::BF16) {
        Dtype::Bf16
    } else if has(GgmlType::F16) {
        Dtype::F16
    } else {
        Dtype::F32
    }
}

/// `save_pretrained`'s sharding: tensors in order into a shard until the next would pass
/// `max`; one bigger than `max` alone in a shard of its own, placed before the one being
/// filled.
pub(crate) fn shards(planned: &[Planned], dtype: Dtype, max: u64) -> Vec<Vec<usize>> {
    let mut list = Vec::new();
    let (mut current, mut size) = (Vec::new(), 0u64);
    for (i, p) in planned.iter().enumerate() {
        let bytes = p.numel() * element_size(dtype);
        if bytes > max {
            list.push(vec![i]);
            continue;
        }
        if size + bytes > max && !current.is_empty() {
            list.push(std::mem::take(&mut current));
            size = 0;
        }
        current.push(i);
        size += bytes;
    }
    if !current.is_empty() {
        list.push(current);
    }
    list
}

/// Writes the planned tensors as `model.safetensors`, or shards and an index beyond
/// `max_shard_size`; returns the file names written.
pub(crate) fn write(
    shards: &Shards<'_, '_>,
    dir: &Path,
    planned: &[Planned],
    dtype: Dtype,
    max_shard_size: u64,
    threads: usize,
) -> Result<Vec<PathBuf>> {
    let groups = self::shards(planned, dtype, max_shard_size);
    let n = groups.len();
    let mut files = Vec::new();
    let mut weight_map = Vec::new();
    let mut total = 0u64;
    for (k, group) in groups.iter().enumerate() {
        let file = if n == 1 {
            "model.safetensors".to_owned()
        } else {
            format!("model-{:05}-of-{n:05}.safetensors", k + 1)
        };
        let mut members: Vec<&Planned> = group.iter().map(|&i| &planned[i]).collect();
        // safetensors stores its tensors sorted by name (one dtype here).
        members.sort_by(|a, b| a.hf.cmp(&b.hf));
        total += write_shard(shards, &dir.join(&file), &members, dtype, threads)?;
        for p in &members {
            weight_map.push((p.hf.clone(), file.clone()));
        }
        files.push(PathBuf::from(file));
    }
    if n > 1 {
        weight_map.sort();
        let params: u64 = planned.iter().map(Planned::numel).sum();
        let mut map = serde_json::Map::new();
        for (name, file) in weight_map {
            map.insert(name, file.into());
        }
        let index = serde_json::json!({
            "metadata": {"total_parameters": params, "total_size": total},
            "weight_map": map,
        });
        let name = "model.safetensors.index.json";
        super::write_json(&dir.join(name), &index)?;
        files.push(PathBuf::from(name));
    }
    Ok(files)
}

/// Rows dequantized at once: about 4 M values (16 MB of f32), whole heads where a
/// permutation is undone.
const CHUNK_VALUES: u64 = 1 << 22;

fn write_shard(
    shards: &Shards<'_, '_>,
    path: &Path,
    members: &[&Planned],
    dtype: Dtype,
    threads: usize,
) -> Result<u64> {
    let size = element_size(dtype);
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
    let mut offset = 0u64;
    for p in members {
        let bytes = p.numel() * size;
        header.insert(
            p.hf.clone(),
            serde_json::json!({
                "dtype": safetensors_dtype(dtype),
                "shape": p.shape,
                "data_offsets": [offset, offset + bytes],
            }),
        );
        offset += bytes;
    }
    let mut text = serde_json::to_string(&header).expect("a JSON map serializes");
    while text.len() % 8 != 0 {
        text.push(' ');
    }
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let io = |e| Error::io(path, e);
    out.write_all(&(text.len() as u64).to_le_bytes())
        .map_err(io)?;
    out.write_all(text.as_bytes()).map_err(io)?;
    let mut values = Vec::new();
    let mut bytes = Vec::new();
    let mut reordered = Vec::new();
    for p in members {
        let (view, source) = (&shards.views[p.shard], shards.paths[p.shard].as_path());
        let info = view.tensors().nth(p.index).expect("planned from this file");
        let ty = GgmlType::from_id(info.ggml_type).ok_or_else(|| {
            Error::field(source, &p.gguf, format!("unknown type {}", info.ggml_type))
        })?;
        let data = view
            .tensor_data(p.index)
            .map_err(|e| Error::Output(e.in_file(source)))?;
        let ne0 = info.dimensions.first().copied().unwrap_or(1);
        let row_bytes = (ne0 / ty.block_size()) * ty.type_size();
        // A 1-D tensor is one chunk; a permuted matrix is cut at whole heads.
        let (per_chunk, head_rows) = match (p.undo, info.dimensions.len()) {
            (_, 1) => (1, 0),
            (Undo::Unpermute(h), _) => {
                let per_head = (p.rows.1 - p.rows.0) / h;
                (
                    (CHUNK_VALUES / ne0.max(1) / per_head).max(1) * per_head,
                    per_head,
                )
            }
            _ => ((CHUNK_VALUES / ne0.max(1)).max(1), 0),
        };
        let mut row = p.rows.0;
        while row < p.rows.1 {
            let end = (row + per_chunk).min(p.rows.1);
            let span = &data[(row * row_bytes) as usize..(end * row_bytes) as usize];
            values.resize(((end - row) * ne0) as usize, 0f32);
            ggufrw::quant::dequantize_threads(ty, span, view.byte_order(), &mut values, threads)
                .map_err(|e| Error::field(source, &p.gguf, e.to_string()))?;
            match p.undo {
                Undo::None => {}
                Undo::Subtract1 => values.iter_mut().for_each(|v| *v -= 1.0),
                Undo::Unpermute(h) => {
                    let (width, per_head) = if head_rows == 0 {
                        (1, ne0 / h)
                    } else {
                        (ne0, head_rows)
                    };
                    unpermute(&values, &mut reordered, width, per_head);
                    std::mem::swap(&mut values, &mut reordered);
                }
            }
            encode(&values, ne0, dtype, &mut bytes, threads)
                .map_err(|e| Error::field(source, &p.gguf, e))?;
            out.write_all(&bytes).map_err(io)?;
            // Pages read once need not stay resident: memory follows a chunk, not the model.
            ggufrw::view::release(&shards.maps[p.shard], span);
            row = end;
        }
    }
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok(offset)
}

/// Undoes `LlamaModel.permute` on whole heads of `per_head` rows of `width` values: the
/// converter's row `2j + i` of a head (half `i`, pair `j`) was the checkpoint's row
/// `i·per_head/2 + j`.
fn unpermute(src: &[f32], dst: &mut Vec<f32>, width: u64, per_head: u64) {
    dst.clear();
    dst.resize(src.len(), 0.0);
    let (w, half) = (width as usize, (per_head / 2) as usize);
    let rows = src.len() / w;
    for head in 0..rows / per_head as usize {
        let base = head * per_head as usize;
        for i in 0..2 {
            for j in 0..half {
                let from = (base + 2 * j + i) * w;
                let to = (base + i * half + j) * w;
                dst[to..to + w].copy_from_slice(&src[from..from + w]);
            }
        }
    }
}

/// f32 values to the output type's little-endian bytes, 16-bit types rounded by ggml's own
/// conversion.
fn encode(
    values: &[f32],
    ne0: u64,
    dtype: Dtype,
    out: &mut Vec<u8>,
    threads: usize,
) -> std::result::Result<(), String> {
    out.clear();
    let ty = match dtype {
        Dtype::F32 => {
            out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            return Ok(());
        }
        Dtype::F16 => GgmlType::F16,
        _ => GgmlType::BF16,
    };
    out.resize(values.len() * 2, 0);
    let per_row = if values.len() as u64 % ne0.max(1) == 0 {
        ne0 as usize
    } else {
        values.len()
    };
    ggufrw::quant::quantize_into_threads(ty, values, per_row, out, threads)
        .map_err(|e| e.to_string())
}
