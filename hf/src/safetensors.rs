//! Safetensors checkpoints, mapped and never read whole: each part's header is checked in full
//! (every offset inside the file, sizes that match dtype and shape, no two tensors sharing a
//! byte) before any tensor is handed out, so that a header that lies is refused, naming the
//! file and the field, instead of being read past.

use crate::error::{Error, Result};
use memmap2::Mmap;
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Largest header accepted: the format's own readers refuse above 100 MB too.
const MAX_HEADER: u64 = 100_000_000;

/// An element type a safetensors file can declare and the converter reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE binary64.
    F64,
    /// IEEE binary32.
    F32,
    /// bfloat16.
    BF16,
    /// IEEE binary16.
    F16,
    /// Signed 64-bit integer.
    I64,
    /// Signed 32-bit integer.
    I32,
    /// Signed 16-bit integer.
    I16,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// One byte, 0 or 1.
    Bool,
    /// 8-bit float, 4 exponent and 3 mantissa bits, no infinities (`float8_e4m3fn`).
    F8E4M3,
    /// 8-bit float, 5 exponent and 2 mantissa bits (`float8_e5m2`).
    F8E5M2,
    /// 8-bit power of two, the exponent alone (`float8_e8m0fnu`: MX block scales).
    F8E8M0,
}

impl Dtype {
    fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "F64" => Dtype::F64,
            "F32" => Dtype::F32,
            "BF16" => Dtype::BF16,
            "F16" => Dtype::F16,
            "I64" => Dtype::I64,
            "I32" => Dtype::I32,
            "I16" => Dtype::I16,
            "I8" => Dtype::I8,
            "U8" => Dtype::U8,
            "BOOL" => Dtype::Bool,
            "F8_E4M3" => Dtype::F8E4M3,
            "F8_E5M2" => Dtype::F8E5M2,
            "F8_E8M0" => Dtype::F8E8M0,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::BF16 | Dtype::F16 | Dtype::I16 => 2,
            Dtype::I8 | Dtype::U8 | Dtype::Bool => 1,
            Dtype::F8E4M3 | Dtype::F8E5M2 | Dtype::F8E8M0 => 1,
        }
    }

    /// The name torch prints for it (the reference's log lines).
    pub fn torch_name(self) -> &'static str {
        match self {
            Dtype::F64 => "torch.float64",
            Dtype::F32 => "torch.float32",
            Dtype::BF16 => "torch.bfloat16",
            Dtype::F16 => "torch.float16",
            Dtype::I64 => "torch.int64",
            Dtype::I32 => "torch.int32",
            Dtype::I16 => "torch.int16",
            Dtype::I8 => "torch.int8",
            Dtype::U8 => "torch.uint8",
            Dtype::Bool => "torch.bool",
            Dtype::F8E4M3 => "torch.float8_e4m3fn",
            Dtype::F8E5M2 => "torch.float8_e5m2",
            Dtype::F8E8M0 => "torch.float8_e8m0fnu",
        }
    }
}

/// One tensor of a part: where its bytes are in the part's map.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its name in the checkpoint.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape, outermost dimension first (as torch has it).
    pub shape: Vec<u64>,
    /// Which part holds it.
    pub part: usize,
    start: usize,
    end: usize,
    /// The scales it is multiplied by as it is read (a checkpoint published quantized).
    pub(crate) scale: Option<Scale>,
    /// How its values are made from other tensors, where it is not stored (a weight packed in
    /// integers, dequantized).
    pub(crate) made: Option<Made>,
}

impl Entry {
    /// Elements in the tensor.
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The type its values have once read: float32 where it is dequantized.
    pub(crate) fn read_dtype(&self) -> Dtype {
        match self.scale.is_some() || self.made.is_some() {
            true => Dtype::F32,
            false => self.dtype,
        }
    }

    /// A float32 tensor of `shape` made from other tensors (no stored bytes).
    pub(crate) fn made(name: String, shape: Vec<u64>, made: Made) -> Entry {
        Entry {
            name,
            dtype: Dtype::F32,
            shape,
            part: 0,
            start: 0,
            end: 0,
            scale: None,
            made: Some(made),
        }
    }
}

// What a quantized checkpoint's weights are made of, for the converter's dequantization.

/// How a weight finds the scale of each of its elements: for each of the weight's axes, the
/// block its coordinate is divided by and the stride of that axis in the scale's elements
/// (0 where the scale is broadcast along it).
#[derive(Clone, Debug)]
pub(crate) struct Scale {
    /// The scale's entry.
    pub entry: usize,
    /// Per axis of the weight: the block and the scale's stride (0: broadcast).
    pub axes: Vec<(u64, u64)>,
    /// The weight was FP8 (`--fp8-as-q8` makes it Q8_0).
    pub fp8: bool,
}

/// A weight stored packed in integers, made from its parts as it is read (float32 `[out, in]`).
#[derive(Clone, Debug)]
pub(crate) enum Made {
    /// GPTQ (`dequant_gptq`): `qweight` `[in / per-word, out]` int32, `qzeros`
    /// `[groups, out / per-word]` int32, `scales` `[groups, out]`, `g_idx` `[in]` (each input's
    /// group); `bits` 2, 4 or 8; `v1`: the stored zeros are one less (`checkpoint_format`
    /// `gptq`).
    Gptq {
        qweight: usize,
        qzeros: usize,
        scales: usize,
        g_idx: usize,
        bits: u32,
        v1: bool,
    },
    /// compressed-tensors' `pack-quantized` (`dequant_packed`): `packed` `[out, ⌈in / per-word⌉]`
    /// int32, `scale` `[out, in / group]`, `zero` packed along the outputs (else the offset is
    /// half the range).
    Packed {
        packed: usize,
        scale: usize,
        zero: Option<usize>,
        bits: u32,
        group: u64,
    },
}

/// One `.safetensors` file, mapped.
pub struct Part {
    /// Its path.
    pub path: PathBuf,
    map: Mmap,
}

/// Every part of a checkpoint, and their tensors in the order the reference visits them.
pub struct Checkpoint {
    /// The parts, sorted by file name.
    pub parts: Vec<Part>,
    /// Tensors part by part, each part's sorted by name.
    pub entries: Vec<Entry>,
}

impl Checkpoint {
    /// The bytes of `entry`, as stored (little-endian).
    pub fn bytes(&self, entry: &Entry) -> &[u8] {
        &self.parts[entry.part].map[entry.start..entry.end]
    }

    /// Hands back the memory of `done`, bytes of `entry` already converted (see
    /// [`ggufrw::view::release`]).
    pub fn release(&self, entry: &Entry, done: &[u8]) {
        ggufrw::view::release(&self.parts[entry.part].map, done);
    }
}

/// Opens the safetensors checkpoint in `dir`: the parts `model.safetensors.index.json` names
/// (sorted), else every `model*.safetensors` (sorted), as `ModelBase.index_tensors` finds them.
/// A checkpoint of pickled `.bin`/`.pth` files only is refused: reading them safely means a
/// pickle interpreter, which this converter does not have.
pub fn open_checkpoint(dir: &Path) -> Result<Checkpoint> {
    let index_path = dir.join("model.safetensors.index.json");
    let mut names = list_parts(dir)?;
    let mut index_names: Option<Vec<String>> = None;
    let mut weight_map: Vec<(String, String)> = Vec::new();
    if index_path.is_file() {
        let index = crate::read_json(&index_path)?;
        let map = index
            .get("weight_map")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::field(&index_path, "weight_map", "missing or not an object"))?;
        let mut files: Vec<String> = Vec::new();
        for (tensor, file) in map {
            let file = file.as_str().ok_or_else(|| {
                Error::field(&index_path, format!("weight_map.{tensor}"), "not a string")
            })?;
            weight_map.push((tensor.clone(), file.to_owned()));
            if !files.iter().any(|f| f == file) {
                files.push(file.to_owned());
            }
        }
        files.sort();
        for f in &files {
            if f.contains('/') || f.contains('\\') || f == ".." {
                return Err(Error::field(
                    &index_path,
                    "weight_map",
                    format!("part {f:?} is not a file name in the folder"),
                ));
            }
        }
        index_names = Some(weight_map.iter().map(|(t, _)| t.clone()).collect());
        names = files;
    }
    if names.is_empty() {
        if has_pickles(dir)? {
            return Err(Error::not_yet(format!(
                "{}: the checkpoint is pickled (.bin/.pth) and has no .safetensors files; pickles \
                 are not read (they can run code when loaded): convert them to safetensors first",
                dir.display()
            )));
        }
        return Err(Error::reference(format!(
            "{}: no model*.safetensors files and no model.safetensors.index.json",
            dir.display()
        )));
    }
    let mut parts = Vec::with_capacity(names.len());
    let mut entries = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let path = dir.join(name);
        let (part, mut list) = open_part(&path, i)?;
        list.sort_by(|a, b| a.name.cmp(&b.name));
        entries.extend(list);
        parts.push(part);
    }
    if let Some(index_names) = index_names {
        check_index(&index_path, &index_names, &weight_map, &entries)?;
    }
    check_unique(&parts, &entries)?;
    Ok(Checkpoint { parts, entries })
}

/// A tensor stored in two parts (a tensor-parallel checkpoint's slices under one name, as
/// Grok-2 ships its experts) is refused: the reference keeps the last part's alone and writes
/// a model whose shapes contradict its config.
fn check_unique(parts: &[Part], entries: &[Entry]) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for e in entries {
        if let Some(first) = seen.insert(e.name.as_str(), e.part) {
            return Err(Error::field(
                &parts[e.part].path,
                e.name.as_str(),
                format!(
                    "also stored in {}: slices of one tensor under one name (a tensor-parallel \
                     checkpoint) are not joined; refused rather than keep one slice",
                    parts[first].path.display()
                ),
            ));
        }
    }
    Ok(())
}

fn list_parts(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for item in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let item = item.map_err(|e| Error::io(dir, e))?;
        if let Some(name) = item.file_name().to_str() {
            if name.starts_with("model") && name.ends_with(".safetensors") {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    Ok(names)
}

fn has_pickles(dir: &Path) -> Result<bool> {
    for item in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let item = item.map_err(|e| Error::io(dir, e))?;
        if let Some(name) = item.file_name().to_str() {
            if name.ends_with(".bin") || name.ends_with(".pth") || name.ends_with(".pt") {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The reference's check that the index and the parts name the same tensors.
fn check_index(
    index_path: &Path,
    index_names: &[String],
    weight_map: &[(String, String)],
    entries: &[Entry],
) -> Result<()> {
    use std::collections::BTreeSet;
    let from_index: BTreeSet<&str> = index_names.iter().map(String::as_str).collect();
    let from_parts: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    if from_index == from_parts {
        return Ok(());
    }
    let missing: Vec<&str> = from_index.difference(&from_parts).copied().collect();
    let extra: Vec<&str> = from_parts.difference(&from_index).copied().collect();
    let message = if extra.is_empty() {
        let files: BTreeSet<&str> = weight_map
            .iter()
            .filter(|(t, _)| missing.contains(&t.as_str()))
            .map(|(_, f)| f.as_str())
            .collect();
        format!("missing or incomplete model files {files:?}: tensors {missing:?} are not in them")
    } else {
        format!("the weight map and the parts disagree: missing {missing:?}, extra {extra:?}")
    };
    Err(Error::field(index_path, "weight_map", message))
}

/// One safetensors file alone (an adapter's `adapter_model.safetensors`), its tensors sorted
/// by name as `safe_open(...).keys()` gives them.
pub(crate) fn open_file(path: &Path) -> Result<Checkpoint> {
    let (part, mut entries) = open_part(path, 0)?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Checkpoint {
        parts: vec![part],
        entries,
    })
}

impl Checkpoint {
    /// Tensor `from` of the safetensors file `path`, visited first under the name `into`.
    pub(crate) fn prepend(&mut self, path: &Path, from: &str, into: &str) -> Result<()> {
        let (part, entries) = open_part(path, self.parts.len())?;
        let mut entry = entries
            .into_iter()
            .find(|e| e.name == from)
            .ok_or_else(|| Error::field(path, from, "missing (KeyError)"))?;
        entry.name = into.to_owned();
        self.parts.push(part);
        self.entries.insert(0, entry);
        Ok(())
    }
}

impl Checkpoint {
    /// Each tensor `published` names read under that name instead, each part's tensors then
    /// visited in the new names' order: a checkpoint saved under other names (transformers
    /// 5's) read as the published one is. A new name another tensor has already is refused.
    pub(crate) fn rename(&mut self, published: impl Fn(&str) -> Option<String>) -> Result<()> {
        let mut renamed = std::collections::HashSet::new();
        for e in &mut self.entries {
            if let Some(name) = published(&e.name) {
                e.name = name;
                renamed.insert(e.name.clone());
            }
        }
        if renamed.is_empty() {
            return Ok(());
        }
        self.entries
            .sort_by(|a, b| (a.part, &a.name).cmp(&(b.part, &b.name)));
        for pair in self.entries.windows(2) {
            if pair[0].name == pair[1].name && renamed.contains(&pair[0].name) {
                return Err(Error::field(
                    &self.parts[pair[1].part].path,
                    pair[1].name.as_str(),
                    "stored twice: under this name and under another name read as it",
                ));
            }
        }
        Ok(())
    }
}

fn open_part(path: &Path, index: usize) -> Result<(Part, Vec<Entry>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: the map is read-only; a file truncated by another process while mapped raises
    // SIGBUS, as for every mapped reader (documented with the command).
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let entries = parse_header(path, &map, index)?;
    Ok((
        Part {
            path: path.to_owned(),
            map,
        },
        entries,
    ))
}

/// Checks a whole safetensors header against the file's length; returns its tensors in
/// header order.
pub fn parse_header(path: &Path, bytes: &[u8], part: usize) -> Result<Vec<Entry>> {
    let bad = |field: &str, message: String| Error::field(path, field, message);
    if bytes.len() < 8 {
        return Err(bad(
            "header length",
            format!("the file has {} bytes, fewer than 8", bytes.len()),
        ));
    }
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let available = bytes.len() as u64 - 8;
    if n > available || n > MAX_HEADER {
        return Err(bad(
            "header length",
            format!("{n} bytes, but the file has {available} after the length"),
        ));
    }
    let header_end = 8 + n as usize;
    let header: Value = serde_json::from_slice(&bytes[8..header_end])
        .map_err(|e| bad("header", format!("not JSON: {e}")))?;
    let object = header
        .as_object()
        .ok_or_else(|| bad("header", "not a JSON object".into()))?;
    let data_len = bytes.len() - header_end;
    let mut entries = Vec::with_capacity(object.len());
    for (name, meta) in object {
        if name == "__metadata__" {
            continue;
        }
        let field = |f: &str| format!("{name}.{f}");
        let dtype_str = meta
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(&field("dtype"), "missing or not a string".into()))?;
        let dtype = Dtype::parse(dtype_str).ok_or_else(|| {
            bad(
                &field("dtype"),
                format!("unknown or unsupported dtype {dtype_str:?}"),
            )
        })?;
        let shape: Vec<u64> = meta
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect())
            .ok_or_else(|| bad(&field("shape"), "missing or not a list of sizes".into()))?;
        let offsets: Vec<u64> = meta
            .get("data_offsets")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect())
            .filter(|v: &Vec<u64>| v.len() == 2)
            .ok_or_else(|| bad(&field("data_offsets"), "missing or not two offsets".into()))?;
        let (begin, end) = (offsets[0], offsets[1]);
        if begin > end || end > data_len as u64 {
            return Err(bad(
                &field("data_offsets"),
                format!("[{begin}, {end}] is outside the {data_len} bytes of data"),
            ));
        }
        let size = shape
            .iter()
            .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| bad(&field("shape"), "the size overflows".into()))?;
        if end - begin != size {
            return Err(bad(
                &field("data_offsets"),
                format!(
                    "{} bytes, but {dtype_str} {shape:?} takes {size}",
                    end - begin
                ),
            ));
        }
        entries.push(Entry {
            name: name.clone(),
            dtype,
            shape,
            part,
            start: header_end + begin as usize,
            end: header_end + end as usize,
            scale: None,
            made: None,
        });
    }
    let mut spans: Vec<(usize, usize, &str)> = entries
        .iter()
        .filter(|e| e.start < e.end)
        .map(|e| (e.start, e.end, e.name.as_str()))
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err(bad(
                &format!("{}.data_offsets", pair[1].2),
                format!("overlaps the data of {:?}", pair[0].2),
            ));
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: usize) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.resize(v.len() + data, 0);
        v
    }

    fn err(bytes: &[u8]) -> String {
        parse_header(Path::new("m.safetensors"), bytes, 0)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_valid_header_gives_its_tensors_in_header_order() {
        let h = r#"{"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"a":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}}"#;
        let e = parse_header(Path::new("m"), &file(h, 22), 0).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].name.as_str(), e[0].dtype, e[0].numel()),
            ("b", Dtype::F32, 4)
        );
        assert_eq!(
            (e[1].name.as_str(), e[1].dtype, e[1].shape.clone()),
            ("a", Dtype::BF16, vec![3])
        );
    }

    #[test]
    fn lying_headers_are_refused_naming_the_field() {
        let outside = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        assert!(err(&file(outside, 8)).contains("w.data_offsets"));
        let size = r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}"#;
        assert!(err(&file(size, 16)).contains("takes 12"));
        let overlap = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#;
        assert!(err(&file(overlap, 16)).contains("overlaps"));
        let dtype = r#"{"w":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}}"#;
        assert!(err(&file(dtype, 1)).contains("w.dtype"));
        let mut long = file("{}", 0);
        long[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert!(err(&long).contains("header length"));
        assert!(err(&file("[1]", 0)).contains("not a JSON object"));
        assert!(err(&file("{", 0)).contains("not JSON"));
    }
}
