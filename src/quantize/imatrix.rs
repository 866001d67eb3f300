//! Importance matrices as llama-quantize reads them: the GGUF format llama-imatrix writes
//! (`<weight>.in_sum2` and `<weight>.counts` tensors, `imatrix.*` keys) and the legacy `.dat`,
//! each entry normalised to one weight per column (per expert for a mixture) as
//! llama-quantize's `load_imatrix` normalises it.

use super::options::KvOverride;
use super::QuantizeError;
use crate::file::Gguf;
use crate::quant::GgmlType;
use crate::schema::{ArrayValues, Value};
use crate::validate::{validate, Profile, Severity};
use std::collections::BTreeMap;
use std::path::Path;

/// ggml's `GGML_MAX_NAME`: a tensor name is shorter.
const GGML_MAX_NAME: usize = 64;

/// The keys of the GGUF format.
const DATASETS: &str = "imatrix.datasets";
const CHUNK_COUNT: &str = "imatrix.chunk_count";
const CHUNK_SIZE: &str = "imatrix.chunk_size";

/// One entry as stored: the sums and the per-matrix counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Sums of squared activations (GGUF), or the legacy file's stored values.
    pub sums: Vec<f32>,
    /// Per matrix (expert) counts; one for the legacy format (its `ncall`).
    pub counts: Vec<i64>,
}

/// An importance matrix file, as read.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Imatrix {
    /// Entries by weight name, in name order.
    pub entries: BTreeMap<String, Entry>,
    /// `imatrix.datasets` (legacy: the trailing dataset name, if any).
    pub datasets: Vec<String>,
    /// `imatrix.chunk_count` (legacy: the trailing call count), 0 when absent.
    pub chunk_count: i32,
    /// `imatrix.chunk_size`, 0 when absent (always for legacy).
    pub chunk_size: i32,
    /// Whether the file is the legacy `.dat` format.
    pub legacy: bool,
    /// Whether the GGUF file has all three `imatrix.*` keys.
    pub has_metadata: bool,
}

/// Reads the legacy format's little-endian fields.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Bytes read as a C string: up to the first NUL.
fn c_string(b: &[u8]) -> String {
    String::from_utf8_lossy(b.split(|&x| x == 0).next().unwrap_or(&[])).into_owned()
}

fn bad(path: &Path, what: impl std::fmt::Display) -> QuantizeError {
    QuantizeError::Imatrix(format!("{}: {what}", path.display()))
}

impl Imatrix {
    /// Reads `path`: as GGUF where ggml's reader takes the file, else as the legacy format
    /// (llama.cpp's `common_imatrix_load`). Refuses what it refuses, and what would crash it
    /// (counts of zero matrices, negative lengths).
    pub fn load(path: &Path) -> Result<Imatrix, QuantizeError> {
        let bytes = std::fs::read(path).map_err(|e| bad(path, e))?;
        let gguf = Gguf::from_bytes(&bytes[..]).ok().filter(|f| {
            !validate(f, Profile::Ggml)
                .iter()
                .any(|x| x.severity == Severity::Error)
        });
        match gguf {
            Some(f) => Self::from_gguf(path, &f),
            None => Self::from_legacy(path, &bytes),
        }
    }

    fn from_gguf(path: &Path, f: &Gguf<&[u8]>) -> Result<Imatrix, QuantizeError> {
        let infos = &f.header().tensor_infos;
        if infos.is_empty() {
            return Err(bad(path, "no data in file"));
        }
        let mut m = Imatrix::default();
        if let Some(Value::Array(a)) = f.get(DATASETS) {
            if let ArrayValues::String(list) = &a.values {
                m.datasets = list.iter().map(|s| s.to_string()).collect();
            }
        }
        let u32_key = |k: &str| -> Result<Option<i32>, QuantizeError> {
            match f.get(k) {
                None => Ok(None),
                Some(Value::Uint32(v)) => Ok(Some(*v as i32)),
                Some(other) => Err(bad(
                    path,
                    format!("{k} is a {}, not a u32", other.value_type().name()),
                )),
            }
        };
        let count = u32_key(CHUNK_COUNT)?;
        let size = u32_key(CHUNK_SIZE)?;
        m.has_metadata = f.get(DATASETS).is_some() && count.is_some() && size.is_some();
        m.chunk_count = count.unwrap_or(0);
        m.chunk_size = size.unwrap_or(0);
        let mut pairs: BTreeMap<String, (Option<usize>, Option<usize>)> = BTreeMap::new();
        for (i, t) in infos.iter().enumerate() {
            let name = t.name.to_string();
            if let Some(w) = name.strip_suffix(".in_sum2") {
                pairs.entry(w.to_owned()).or_default().0 = Some(i);
            } else if let Some(w) = name.strip_suffix(".counts") {
                pairs.entry(w.to_owned()).or_default().1 = Some(i);
            }
        }
        let floats = |i: usize| -> Result<Vec<f32>, QuantizeError> {
            if infos[i].ggml_type != GgmlType::F32.id() {
                return Err(bad(path, format!("{} must be F32", infos[i].name)));
            }
            let data = f.tensor_data(i).map_err(|e| bad(path, e))?;
            Ok(data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        for (name, pair) in pairs {
            let (Some(s), Some(c)) = pair else {
                return Err(bad(path, format!("mismatched sums and counts for {name}")));
            };
            let sums = floats(s)?;
            // C's lround: halves away from zero; out of range is unspecified, saturated here.
            let counts: Vec<i64> = floats(c)?.into_iter().map(|v| v.round() as i64).collect();
            if counts.is_empty() || sums.len() % counts.len() != 0 {
                return Err(bad(
                    path,
                    format!("{name}: {} sums for {} matrices", sums.len(), counts.len()),
                ));
            }
            m.entries.insert(name, Entry { sums, counts });
        }
        if !m.has_metadata {
            return Err(bad(
                path,
                "missing imatrix metadata (imatrix.datasets, chunk_count, chunk_size)",
            ));
        }
        Ok(m)
    }

    fn from_legacy(path: &Path, bytes: &[u8]) -> Result<Imatrix, QuantizeError> {
        let mut c = Cursor { bytes, at: 0 };
        let short = |what: &str| {
            bad(
                path,
                format!("not GGUF, and too short for the legacy format ({what})"),
            )
        };
        let n = c.i32().ok_or_else(|| short("entry count"))?;
        if n < 1 {
            return Err(bad(
                path,
                "no data in file (not GGUF, nor a legacy imatrix)",
            ));
        }
        let mut m = Imatrix {
            legacy: true,
            ..Imatrix::default()
        };
        // Bounded by the file: each entry takes at least 12 bytes.
        for i in 0..n {
            let len = c.i32().ok_or_else(|| short("name length"))?;
            let len = usize::try_from(len)
                .map_err(|_| bad(path, format!("entry {}: a negative name length", i + 1)))?;
            let name = c
                .take(len)
                .ok_or_else(|| bad(path, format!("failed reading name for entry {}", i + 1)))?;
            let name = c_string(name);
            let ncall = c.i32().ok_or_else(|| short("ncall"))?;
            let nval = c.i32().filter(|&v| v >= 1).ok_or_else(|| {
                bad(
                    path,
                    format!("failed reading number of values for entry {i}"),
                )
            })?;
            let data = c
                .take(nval as usize * 4)
                .ok_or_else(|| bad(path, format!("failed reading data for entry {i}")))?;
            let sums = data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let counts = vec![i64::from(ncall)];
            m.entries.insert(name, Entry { sums, counts });
        }
        // The trailing chunk count and dataset name are optional.
        if let Some(calls) = c.i32() {
            m.chunk_count = calls;
            if let Some(len) = c.i32().filter(|&l| l > 0) {
                if let Some(d) = c.take(len as usize) {
                    m.datasets.push(c_string(d));
                }
            }
        }
        Ok(m)
    }

    /// Each entry's weights as llama-quantize hands them to the quantizers: GGUF sums over
    /// their matrix's count (1 where the count is 0), legacy values over `ncall` (as they are
    /// where it is not positive).
    pub fn weights(&self) -> BTreeMap<String, Vec<f32>> {
        let mut out = BTreeMap::new();
        for (name, e) in &self.entries {
            let mut w = vec![0f32; e.sums.len()];
            if self.legacy {
                let ncall = e.counts.first().copied().unwrap_or(0);
                for (w, &s) in w.iter_mut().zip(&e.sums) {
                    *w = if ncall > 0 { s / ncall as f32 } else { s };
                }
            } else {
                let ne0 = e.sums.len() / e.counts.len();
                for (j, &c) in e.counts.iter().enumerate() {
                    let count = c as f32;
                    for i in 0..ne0 {
                        w[j * ne0 + i] = if count > 0.0 {
                            e.sums[j * ne0 + i] / count
                        } else {
                            1.0
                        };
                    }
                }
            }
            out.insert(name.clone(), w);
        }
        out
    }
}

/// The weights llama-quantize uses: the file's, without the entries `exclude` names (any
/// that contains one), or with only those `include` names; refused where a value is not
/// finite. Empty means llama-quantize uses none at all.
pub fn select(
    m: &Imatrix,
    include: &[String],
    exclude: &[String],
) -> Result<BTreeMap<String, Vec<f32>>, QuantizeError> {
    let mut w = m.weights();
    if !exclude.is_empty() {
        w.retain(|name, _| !exclude.iter().any(|x| name.contains(x.as_str())));
    }
    if !include.is_empty() {
        w.retain(|name, _| include.iter().any(|x| name.contains(x.as_str())));
    }
    for (name, v) in &w {
        if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
            return Err(QuantizeError::Imatrix(format!(
                "imatrix contains non-finite value {bad} (entry {name})"
            )));
        }
    }
    Ok(w)
}

/// The `quantize.imatrix.*` keys llama-quantize adds (after the user's overrides): the file as
/// named on the command line and the first dataset (each cut to 127 bytes), the number of
/// entries used, and the chunk count where positive.
pub fn keys(file_arg: &str, m: &Imatrix, entries_used: usize) -> Vec<(String, KvOverride)> {
    let cut = |s: &str| {
        let b = &s.as_bytes()[..s.len().min(127)];
        String::from_utf8_lossy(b).into_owned()
    };
    let mut keys = vec![(
        "quantize.imatrix.file".to_owned(),
        KvOverride::Str(cut(file_arg)),
    )];
    if let Some(d) = m.datasets.first() {
        keys.push((
            "quantize.imatrix.dataset".to_owned(),
            KvOverride::Str(cut(d)),
        ));
    }
    keys.push((
        "quantize.imatrix.entries_count".to_owned(),
        KvOverride::Int(entries_used as i64),
    ));
    if m.chunk_count > 0 {
        keys.push((
            "quantize.imatrix.chunks_count".to_owned(),
            KvOverride::Int(i64::from(m.chunk_count)),
        ));
    }
    keys
}

/// `dims` as ggml writes them to a GGUF file (`ggml_n_dims`): up to the last dimension above
/// 1, and at least one.
fn ggml_dims(dims: &[u64]) -> &[u64] {
    let n = dims.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1);
    &dims[..n.min(dims.len())]
}

/// What llama-imatrix accumulates: raw sums of squared activations and per-matrix counts of
/// rows seen, per entry, with the chunk count and datasets; both file formats are written from
/// it as llama-imatrix writes them (`--output-format gguf|dat`), so converting a file is
/// reading it as llama-imatrix's `--in-file` reads it and saving it again.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Collected {
    /// Raw sums and counts by entry name.
    pub stats: BTreeMap<String, (Vec<f32>, Vec<i64>)>,
    /// Datasets, in order.
    pub datasets: Vec<String>,
    /// Chunks the sums cover.
    pub last_chunk: i32,
    /// Tokens per chunk (`n_ctx / n_parallel`).
    pub chunk_size: i32,
}

impl Collected {
    /// `m` as llama-imatrix loads it with `chunk_size` tokens a chunk: a legacy file's values
    /// and call counts times the chunk size, a GGUF file's sums and counts as they are. Each
    /// value is added to a zero, as llama-imatrix accumulates it: a stored -0 comes out +0.
    pub fn from_file(m: &Imatrix, chunk_size: i32) -> Collected {
        let mut stats = BTreeMap::new();
        let mut max_count = 0i64;
        for (name, e) in &m.entries {
            let (values, counts) = if m.legacy {
                let v = e.sums.iter().map(|s| 0.0 + s * chunk_size as f32).collect();
                (
                    v,
                    vec![e.counts.first().copied().unwrap_or(0) * i64::from(chunk_size)],
                )
            } else {
                (e.sums.iter().map(|s| 0.0 + s).collect(), e.counts.clone())
            };
            max_count = max_count.max(counts.iter().copied().max().unwrap_or(0));
            stats.insert(name.clone(), (values, counts));
        }
        Collected {
            stats,
            datasets: m.datasets.clone(),
            last_chunk: (max_count / i64::from(chunk_size.max(1))) as i32,
            chunk_size,
        }
    }

    /// The GGUF format: `general.type`, the datasets, chunk count and size, then per entry
    /// (in name order) `NAME.in_sum2` `[values / matrices, matrices]` and `NAME.counts`
    /// `[1, matrices]`, as F32, each shape without its trailing dimensions of 1 (llama-imatrix
    /// makes 2-D tensors, and ggml writes a tensor's dimensions up to its last one above 1:
    /// `[n]` and `[1]` for a dense model's entry). Refused where a tensor name would reach ggml's
    /// limit of 64 bytes (a legacy file's entry name can be any length; ggml cuts such a name
    /// short, and its reader refuses the file).
    pub fn to_gguf(&self) -> crate::Result<Vec<u8>> {
        const LONGEST_SUFFIX: usize = ".in_sum2".len();
        if let Some(name) = (self.stats.keys()).find(|n| n.len() + LONGEST_SUFFIX >= GGML_MAX_NAME)
        {
            return Err(QuantizeError::Imatrix(format!(
                "entry {name:?} is too long for the GGUF format: {name:?}.in_sum2 would be {} bytes, ggml's tensor names are shorter than {GGML_MAX_NAME}",
                name.len() + LONGEST_SUFFIX
            ))
            .into());
        }
        let datasets: crate::schema::StrList = self.datasets.iter().map(String::as_str).collect();
        let mut b = crate::Builder::new()
            .metadata("general.type", "imatrix")
            .metadata(
                DATASETS,
                Value::Array(crate::schema::Array::new(ArrayValues::String(datasets))),
            )
            .metadata(CHUNK_COUNT, Value::Uint32(self.last_chunk as u32))
            .metadata(CHUNK_SIZE, Value::Uint32(self.chunk_size as u32));
        let f32s = |v: &mut dyn Iterator<Item = f32>| -> Vec<u8> {
            v.flat_map(f32::to_le_bytes).collect()
        };
        for (name, (values, counts)) in &self.stats {
            let (nval, nmat) = (values.len() as u64, counts.len() as u64);
            if nval == 0 || nmat == 0 {
                continue;
            }
            b = b
                .tensor(
                    format!("{name}.in_sum2"),
                    GgmlType::F32,
                    ggml_dims(&[nval / nmat, nmat]),
                    f32s(&mut values.iter().copied()),
                )?
                .tensor(
                    format!("{name}.counts"),
                    GgmlType::F32,
                    ggml_dims(&[1, nmat]),
                    f32s(&mut counts.iter().map(|&c| c as f32)),
                )?;
        }
        b.build()?.to_bytes()
    }

    /// The legacy format: per entry with any data (in name order) its name, `ncall` (the
    /// largest count in chunks, rounded up, at most `i32::MAX`) and the values as `sum / count × ncall` (1 where a
    /// matrix has no data); then the chunk count and the last dataset.
    pub fn to_legacy(&self) -> Vec<u8> {
        let chunk = i64::from(self.chunk_size.max(1));
        let stored: Vec<_> = self
            .stats
            .iter()
            .filter(|(_, (_, c))| !c.is_empty() && c.iter().any(|&x| x != 0))
            .collect();
        let mut out = Vec::new();
        out.extend((stored.len() as i32).to_le_bytes());
        for (name, (values, counts)) in stored {
            out.extend((name.len() as i32).to_le_bytes());
            out.extend(name.as_bytes());
            let max = counts.iter().copied().max().unwrap_or(0);
            // A count read from a GGUF file can be any float rounded; past `int` the chunk
            // count is held at its largest (llama-imatrix's `int` arithmetic would overflow).
            let ncall = i32::try_from(max.saturating_add(chunk - 1) / chunk).unwrap_or(i32::MAX);
            out.extend(ncall.to_le_bytes());
            let (nval, nmat) = (values.len(), counts.len());
            out.extend((nval as i32).to_le_bytes());
            for (i, &v) in values.iter().enumerate() {
                let mut count = counts[i / (nval / nmat)] as f32;
                let mut value = v;
                if count == 0.0 {
                    (value, count) = (1.0, 1.0);
                }
                out.extend(((value / count) * ncall as f32).to_le_bytes());
            }
        }
        out.extend(self.last_chunk.to_le_bytes());
        let dataset = self.datasets.last().map_or("", String::as_str);
        out.extend((dataset.len() as i32).to_le_bytes());
        out.extend(dataset.as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF file's counts are floats rounded to any i64; the legacy chunk count of the
    /// largest one is held at `i32::MAX` instead of overflowing (found by the `imatrix` fuzz
    /// target).
    #[test]
    fn a_count_past_int_gives_the_largest_chunk_count() {
        let mut c = Collected {
            chunk_size: 512,
            ..Collected::default()
        };
        c.stats.insert("w".into(), (vec![1.0; 4], vec![i64::MAX]));
        let legacy = c.to_legacy();
        // Entries, the name's length, "w", then ncall.
        assert_eq!(legacy[9..13], i32::MAX.to_le_bytes());
        c.stats.insert("w".into(), (vec![1.0; 4], vec![1025]));
        assert_eq!(c.to_legacy()[9..13], 3i32.to_le_bytes());
    }

    /// The shapes llama-imatrix's files hold (tests/imatrix.rs compares whole files with
    /// llama-imatrix's): a dense entry's sums and count lose their trailing 1, an entry of
    /// experts keeps both dimensions.
    #[test]
    fn shapes_are_written_as_ggml_writes_them() {
        assert_eq!(ggml_dims(&[640, 1]), &[640]);
        assert_eq!(ggml_dims(&[1, 1]), &[1]);
        assert_eq!(ggml_dims(&[1, 4]), &[1, 4]);
        assert_eq!(ggml_dims(&[8, 4]), &[8, 4]);
    }

    /// An entry name that would make a tensor name of 64 bytes or more is refused by the GGUF
    /// form, naming it (found by the `imatrix` fuzz target: a legacy file's name of 19 bytes
    /// that are not UTF-8, read as 57 bytes of U+FFFD, gave a GGUF file no reader takes).
    #[test]
    fn names_too_long_for_ggml_are_refused_by_the_gguf_form() {
        let mut c = Collected::default();
        c.stats.insert("a".repeat(55), (vec![1.0; 4], vec![1]));
        assert!(c.to_gguf().is_ok(), "55 + 8 = 63 bytes fit");
        c.stats.insert("b".repeat(56), (vec![1.0; 4], vec![1]));
        let e = c.to_gguf().unwrap_err().to_string();
        assert!(e.contains("bbbb") && e.contains("64"), "{e}");
        assert!(Imatrix::from_legacy(Path::new("x"), &c.to_legacy()).is_ok());
    }
}
