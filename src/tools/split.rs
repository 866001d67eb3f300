//! Splitting a model into shards and merging them, as llama.cpp's `llama-gguf-split` and model
//! loader expect: shard files `PREFIX-00001-of-00003.gguf`; the first holds all the metadata,
//! every shard ends its metadata with `split.no` (UINT16, from 0), `split.tensors.count` (INT32,
//! the total) and `split.count` (UINT16), in that order. Unlike llama-gguf-split, every shard
//! keeps the model's `general.alignment` (its data is laid out with it), its version and its
//! byte order.

pub use crate::error::SplitError;
use crate::error::{Error, Result};
use crate::file::Gguf;
use crate::fsutil::{Mode, Progress};
use crate::quant::GgmlType;
use crate::shards::{
    first_shard_prefix, is_split_key, shard_path, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT,
};
use crate::write::{Builder, Source};
use ggufrw_schema::{KeyValue, Value, ALIGNMENT_KEY};
use std::fs::File;
use std::path::{Path, PathBuf};

/// How to cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBy {
    /// At most this many tensors a shard.
    Tensors(usize),
    /// At most this many bytes of (padded) tensor data a shard; a larger tensor gets a shard
    /// of its own.
    Bytes(u64),
}

/// Which tensors go to which shard.
pub fn plan<B: AsRef<[u8]>>(
    file: &Gguf<B>,
    by: SplitBy,
    no_tensor_first: bool,
) -> Result<Vec<Vec<usize>>> {
    let alignment = u64::from(file.layout().alignment);
    let mut shards: Vec<Vec<usize>> = vec![Vec::new()];
    if no_tensor_first {
        shards.push(Vec::new());
    }
    let mut size = 0u64;
    for t in file.tensors() {
        let bytes = t.byte_size()?.next_multiple_of(alignment);
        let current = shards.last_mut().expect("one shard at least");
        let full = match by {
            SplitBy::Tensors(0) => return Err(SplitError::NoTensorsPerShard.into()),
            SplitBy::Tensors(n) => current.len() >= n,
            SplitBy::Bytes(max) => !current.is_empty() && size + bytes > max,
        };
        if full {
            shards.push(vec![t.index]);
            size = bytes;
        } else {
            current.push(t.index);
            size += bytes;
        }
    }
    if shards.len() > usize::from(u16::MAX) {
        return Err(SplitError::TooManyShards(shards.len()).into());
    }
    Ok(shards)
}

/// One shard written (or planned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Its path.
    pub path: PathBuf,
    /// Its tensors.
    pub tensors: usize,
    /// Bytes of its tensor data.
    pub data_bytes: u64,
}

/// The split keys, in llama-gguf-split's order.
fn split_keys(no: usize, count: usize, tensors: usize) -> [KeyValue; 3] {
    [
        KeyValue::new(SPLIT_NO, Value::Uint16(no as u16)),
        KeyValue::new(SPLIT_TENSORS_COUNT, Value::Int32(tensors as i32)),
        KeyValue::new(SPLIT_COUNT, Value::Uint16(count as u16)),
    ]
}

/// Splits `input` into shards named from `prefix` (each written atomically; on a failure the
/// shards already written are removed). With `dry_run`, only plans.
pub fn split(
    input: &Path,
    prefix: &Path,
    by: SplitBy,
    no_tensor_first: bool,
    dry_run: bool,
    progress: &dyn Progress,
) -> Result<Vec<Shard>> {
    let file = Gguf::open(input)?;
    let handle = File::open(input).map_err(|e| Error::from(e).in_file(input))?;
    let plan = plan(&file, by, no_tensor_first).map_err(|e| e.in_file(input))?;
    let header = file.header();
    let n = plan.len();
    let total = header.tensor_infos.len();
    if i32::try_from(total).is_err() {
        return Err(Error::from(SplitError::TooManyTensors(total)).in_file(input));
    }
    let mut shards = Vec::with_capacity(n);
    let alignment = header.metadata.iter().find(|kv| kv.key == *ALIGNMENT_KEY);
    let bytes_total: u64 = (file.tensors()).map(|t| t.byte_size().unwrap_or(0)).sum();
    progress.begin(bytes_total);
    for (i, indices) in plan.iter().enumerate() {
        let path = shard_path(prefix, i, n);
        let mut metadata: Vec<KeyValue> = if i == 0 {
            (header.metadata.iter())
                .filter(|kv| !is_split_key(&kv.key))
                .cloned()
                .collect()
        } else {
            alignment.into_iter().cloned().collect()
        };
        metadata.extend(split_keys(i, n, total));
        let mut builder = Builder::new().like(header).with_metadata(metadata);
        let mut data_bytes = 0;
        for &index in indices {
            let t = file
                .tensors()
                .nth(index)
                .expect("planned from these tensors");
            let size = t.byte_size()?;
            data_bytes += size;
            let ty = t.ggml_type.expect("sized, so known");
            builder = builder.tensor(
                t.name(),
                ty,
                &t.info.dimensions,
                Source::File {
                    file: &handle,
                    offset: t.file_offset,
                    len: size,
                },
            )?;
        }
        if !dry_run {
            if let Err(e) = builder.write_file_with(&path, Mode::Plain, progress) {
                for written in &shards {
                    let Shard { path, .. } = written;
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        }
        shards.push(Shard {
            path,
            tensors: indices.len(),
            data_bytes,
        });
    }
    progress.finish();
    Ok(shards)
}

/// Why shards do not merge.
fn inconsistent(shard: &Path, key: &str, why: String) -> Error {
    Error::from(SplitError::Inconsistent {
        field: key.to_string(),
        why,
    })
    .in_file(shard)
}

/// The value of a split key as an integer, or why not.
fn split_value(file: &Gguf, shard: &Path, key: &str) -> Result<i64> {
    match file.get(key) {
        Some(Value::Uint16(v)) => Ok(i64::from(*v)),
        Some(Value::Int32(v)) => Ok(i64::from(*v)),
        Some(other) => Err(inconsistent(
            shard,
            key,
            format!(
                "holds {}, llama.cpp reads it as an integer",
                other.value_type().name()
            ),
        )),
        None => Err(inconsistent(shard, key, "missing".into())),
    }
}

/// What a merge found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    /// The shards read.
    pub shards: Vec<PathBuf>,
    /// Tensors in all.
    pub tensors: usize,
}

/// Merges the shards whose first is `first` into `output`: every shard checked (its name,
/// `split.no` in sequence, the same `split.count` and `split.tensors.count`, the total,
/// unique tensor names, one byte order and version, the same version-gated fields), the first shard's metadata without the
/// split keys, every tensor's data in shard order, laid out as ggml lays it out.
pub fn merge(first: &Path, output: &Path, progress: &dyn Progress) -> Result<Merged> {
    let (prefix, n) = first_shard_prefix(first)
        .ok_or_else(|| Error::from(SplitError::NotFirstShard).in_file(first))?;
    let paths: Vec<PathBuf> = (0..n).map(|i| shard_path(&prefix, i, n)).collect();
    let files: Vec<Gguf> = paths.iter().map(Gguf::open).collect::<Result<_>>()?;
    let handles: Vec<File> = (paths.iter())
        .map(|p| File::open(p).map_err(|e| Error::from(e).in_file(p)))
        .collect::<Result<_>>()?;
    let head = files[0].header();
    let mut total = None;
    let mut names = std::collections::HashSet::new();
    let mut count = 0usize;
    for (i, (file, path)) in files.iter().zip(&paths).enumerate() {
        let h = file.header();
        if (h.version, h.byte_order) != (head.version, head.byte_order) {
            return Err(inconsistent(
                path,
                "version",
                format!(
                    "v{} {}-endian, the first shard is v{} {}-endian",
                    h.version,
                    h.byte_order.name(),
                    head.version,
                    head.byte_order.name()
                ),
            ));
        }
        let data_offset = file.layout().data_offset;
        let len = file.bytes().len() as u64;
        if !h.tensor_infos.is_empty() && len < data_offset {
            let missing = data_offset - len;
            return Err(Error::from(SplitError::CutShort { missing }).in_file(path));
        }
        // The same version-gated fields (the merged file takes the first shard's).
        let (theirs, first) = (h.gated.values(), head.gated.values());
        if let Some(((field, v), (_, w))) = theirs.iter().zip(&first).find(|(a, b)| a.1 != b.1) {
            return Err(inconsistent(
                path,
                field.name,
                format!("is {v}, the first shard's is {w}"),
            ));
        }
        let no = split_value(file, path, SPLIT_NO)?;
        if no != i as i64 {
            return Err(inconsistent(
                path,
                SPLIT_NO,
                format!("is {no}, shard {} of the sequence", i),
            ));
        }
        let c = split_value(file, path, SPLIT_COUNT)?;
        if c != n as i64 {
            return Err(inconsistent(
                path,
                SPLIT_COUNT,
                format!("is {c}, the names say {n}"),
            ));
        }
        let t = split_value(file, path, SPLIT_TENSORS_COUNT)?;
        if *total.get_or_insert(t) != t {
            return Err(inconsistent(
                path,
                SPLIT_TENSORS_COUNT,
                format!("is {t}, the first shard says {}", total.unwrap_or(t)),
            ));
        }
        for info in &h.tensor_infos {
            if !names.insert(info.name.to_string()) {
                return Err(inconsistent(
                    path,
                    "tensor",
                    format!("{:?} is in another shard too", info.name.as_str()),
                ));
            }
        }
        count += h.tensor_infos.len();
    }
    if total != Some(count as i64) {
        return Err(inconsistent(
            first,
            SPLIT_TENSORS_COUNT,
            format!("is {}, the shards hold {count} tensors", total.unwrap_or(0)),
        ));
    }
    let metadata: Vec<KeyValue> = (head.metadata.iter())
        .filter(|kv| !is_split_key(&kv.key))
        .cloned()
        .collect();
    let mut builder = Builder::new().like(head).with_metadata(metadata);
    let mut bytes = 0;
    for ((file, handle), path) in files.iter().zip(&handles).zip(&paths) {
        for t in file.tensors() {
            let size = t.byte_size().map_err(|e| e.in_file(path))?;
            file.tensor_data(t.index).map_err(|e| e.in_file(path))?;
            let ty: GgmlType = t.ggml_type.expect("sized, so known");
            bytes += size;
            builder = builder.tensor(
                t.name(),
                ty,
                &t.info.dimensions,
                Source::File {
                    file: handle,
                    offset: t.file_offset,
                    len: size,
                },
            )?;
        }
    }
    progress.begin(bytes);
    builder.write_file_with(output, Mode::Plain, progress)?;
    Ok(Merged {
        shards: paths,
        tensors: count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_are_llama_cpps() {
        let p = shard_path(Path::new("out/model"), 0, 3);
        assert_eq!(p, Path::new("out/model-00001-of-00003.gguf"));
        assert_eq!(
            first_shard_prefix(&p),
            Some((PathBuf::from("out/model"), 3))
        );
        assert_eq!(
            first_shard_prefix(Path::new("model-00002-of-00003.gguf")),
            None
        );
        assert_eq!(first_shard_prefix(Path::new("-00001-of-00003.gguf")), None);
        assert_eq!(first_shard_prefix(Path::new("model.gguf")), None);
    }
}
