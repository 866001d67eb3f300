//! Shard sets: one model cut into files named `PREFIX-NNNNN-of-NNNNN.gguf` (five digits each,
//! counting from 1), as llama.cpp's gguf-split writes them and its loader finds them, each
//! holding `split.no` (from 0), `split.count` and `split.tensors.count`. The one place that
//! knows the names and the keys: splitting, merging, the remote reader, the command line and
//! the naming convention use it.
//!
//! ```
//! use ggufrw::shards;
//! use std::path::Path;
//! let first = Path::new("models/grok-00001-of-00003.gguf");
//! let (prefix, count) = shards::first_shard_prefix(first).unwrap();
//! assert_eq!(count, 3);
//! assert_eq!(shards::shard_path(&prefix, 2, count), Path::new("models/grok-00003-of-00003.gguf"));
//! assert_eq!(shards::position("00002-of-00003"), Some((2, 3)));
//! ```

use crate::file::Gguf;
use ggufrw_schema::Value;
use std::path::{Path, PathBuf};

/// `split.no`: this shard's number, from 0.
pub const SPLIT_NO: &str = "split.no";
/// `split.count`: how many shards.
pub const SPLIT_COUNT: &str = "split.count";
/// `split.tensors.count`: tensors in all shards.
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// Whether `key` is one of the split keys (which a merge drops and a split writes).
pub fn is_split_key(key: impl AsRef<[u8]>) -> bool {
    [SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS_COUNT]
        .iter()
        .any(|k| k.as_bytes() == key.as_ref())
}

/// `NNNNN-of-NNNNN` (five digits each): the shard's number from 1 and the total.
pub fn position(text: &str) -> Option<(u32, u32)> {
    let (number, total) = text.split_once("-of-")?;
    Some((five_digits(number)?, five_digits(total)?))
}

/// One side of a position (`00003`): five digits, or `None`.
pub fn position_part(text: &str) -> Option<u32> {
    five_digits(text)
}

/// The `NNNNN-of-NNNNN` of shard `number` (from 1) of `total`.
pub fn position_text(number: u32, total: u32) -> String {
    format!("{number:05}-of-{total:05}")
}

fn five_digits(s: &str) -> Option<u32> {
    (s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The path of shard `i` (from 0) of `n`: `PREFIX-0000{i+1}-of-0000{n}.gguf`.
pub fn shard_path(prefix: &Path, i: usize, n: usize) -> PathBuf {
    let mut name = prefix.as_os_str().to_owned();
    name.push(format!("-{}.gguf", position_text(i as u32 + 1, n as u32)));
    PathBuf::from(name)
}

/// The prefix and shard count of a first shard's path (`…-00001-of-NNNNN.gguf`).
pub fn first_shard_prefix(path: &Path) -> Option<(PathBuf, usize)> {
    let stem = path.to_str()?.strip_suffix(".gguf")?;
    let (rest, total) = stem.rsplit_once("-of-")?;
    let (prefix, number) = rest.rsplit_once('-')?;
    let (number, total) = (five_digits(number)?, five_digits(total)?);
    (number == 1 && !prefix.is_empty() && total >= 1)
        .then(|| (PathBuf::from(prefix), total as usize))
}

/// `split.count` as llama.cpp's loader reads it (a UINT16; anything else is no set).
pub fn declared_count<B: AsRef<[u8]>>(file: &Gguf<B>) -> Option<usize> {
    match file.get(SPLIT_COUNT) {
        Some(Value::Uint16(n)) => Some(usize::from(*n)),
        _ => None,
    }
}

/// The paths of the other shards of the set whose first shard is `first` (holding `file`):
/// shards 2 to N, when the name is a first shard's and `split.count` says the same N above 1;
/// `None` for a file that is not the first of a set.
pub fn other_shards<B: AsRef<[u8]>>(first: &Path, file: &Gguf<B>) -> Option<Vec<PathBuf>> {
    let (prefix, named) = first_shard_prefix(first)?;
    let count = declared_count(file)?;
    (count > 1 && named == count)
        .then(|| (1..count).map(|i| shard_path(&prefix, i, count)).collect())
}
