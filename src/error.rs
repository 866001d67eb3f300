//! The library's error type, and the errors of each job it wraps (defined here, so that the
//! jobs import their errors and this module imports no job).

use crate::quant::{type_name, GgmlType, InvalidData, QuantError, SizeError};
use ggufrw_schema::{version, ByteOrder, DecodeError, EncodeError, ALIGNMENT_KEY};
use std::fmt;
use std::path::{Path, PathBuf};

/// Anything that can go wrong reading, writing or accessing a GGUF file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not a well-formed GGUF file.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The model cannot be written: a reader would reject the result.
    #[error("cannot encode: {0}")]
    Encode(#[from] EncodeError),
    /// A tensor's data cannot be handed out, written or converted.
    #[error("tensor[{index}] ({name}): {source}")]
    Tensor {
        /// Index of the tensor info.
        index: usize,
        /// Its name.
        name: String,
        /// Why.
        source: TensorError,
    },
    /// A tensor index past the file's tensors.
    #[error("no tensor {index}: the file has {count}")]
    NoTensor {
        /// The index asked for.
        index: usize,
        /// Tensors in the file.
        count: usize,
    },
    /// `general.alignment` cannot place the data section (the decoder refuses such files).
    #[error("{key} {why}", key = ggufrw_schema::ALIGNMENT_KEY)]
    Alignment {
        /// What is wrong with it.
        why: String,
    },
    /// A version-gated header field that cannot be set so.
    #[error(transparent)]
    Gated(#[from] ggufrw_schema::GatedError),
    /// An edit that cannot be made as asked.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// Blocks that cannot be dequantized or quantized as asked.
    #[error(transparent)]
    Quant(#[from] QuantError),
    /// A model that cannot be quantized as asked.
    #[error(transparent)]
    Quantize(#[from] QuantizeError),
    /// A conversion that would convert no tensor (each chosen one refused, or none chosen).
    #[error("no tensor converted to {to}{}", refusals(skipped))]
    NothingConverted {
        /// The type asked for.
        to: GgmlType,
        /// The tensors chosen, and why each was refused.
        skipped: Vec<(String, String)>,
    },
    /// A split or merge that cannot be made as asked.
    #[error(transparent)]
    Split(#[from] SplitError),
    /// A byte-order conversion that cannot be made without loss.
    #[error(transparent)]
    Endian(#[from] EndianError),
    /// Lossless JSON that does not describe a file.
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    #[error("lossless JSON: {0}")]
    Lossless(#[from] LosslessError),
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A remote file could not be read (its header's own errors are `Decode`).
    #[cfg(feature = "remote")]
    #[cfg_attr(docsrs, doc(cfg(feature = "remote")))]
    #[error("{url}: {source}")]
    Remote {
        /// The URL.
        url: String,
        /// What went wrong.
        source: RemoteError,
    },
    /// Any of the above, about the file at `path`.
    #[error("{}: {source}", path.display())]
    File {
        /// The file the error is about.
        path: PathBuf,
        /// What went wrong with it.
        source: Box<Error>,
    },
}

impl Error {
    /// This error, said to be about the file at `path` (unless it already names a file).
    pub fn in_file(self, path: &Path) -> Error {
        match self {
            named @ Error::File { .. } => named,
            #[cfg(feature = "remote")]
            named @ Error::Remote { .. } => named,
            other => Error::File {
                path: path.to_path_buf(),
                source: Box::new(other),
            },
        }
    }

    /// The error without the file it is about.
    pub fn root(&self) -> &Error {
        match self {
            Error::File { source, .. } => source.root(),
            other => other,
        }
    }

    /// The file it is about, if it names one (a URL for remote files).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Error::File { path, .. } => Some(path),
            #[cfg(feature = "remote")]
            Error::Remote { url, .. } => Some(Path::new(url)),
            _ => None,
        }
    }

    /// Whether reading or writing failed (rather than the content being wrong or the job
    /// being refused).
    pub fn is_io(&self) -> bool {
        match self.root() {
            Error::Io(_)
            | Error::Tensor {
                source: TensorError::ShortSource { .. },
                ..
            } => true,
            #[cfg(feature = "remote")]
            Error::Remote { .. } => true,
            _ => false,
        }
    }
}

/// The first refusals, for a message.
fn refusals(skipped: &[(String, String)]) -> String {
    let mut text = String::new();
    for (name, why) in skipped.iter().take(3) {
        text += &format!("; {name}: {why}");
    }
    if skipped.len() > 3 {
        text += &format!("; and {} more", skipped.len() - 3);
    }
    text
}

/// Why one tensor's data cannot be handed out, written or converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The type id is not one ggml has (or had a size for).
    #[error("type {} has no known size", type_name(*.0))]
    UnknownType(u32),
    /// The shape has no byte size for the type.
    #[error(transparent)]
    Size(#[from] SizeError),
    /// The extent does not lie inside the data section.
    #[error("bytes {offset}..+{size} are outside the {data_len}-byte data section")]
    OutsideData {
        /// Offset in the data section.
        offset: u64,
        /// Bytes the type and shape take.
        size: u64,
        /// The data section's length.
        data_len: u64,
    },
    /// Data given for a new tensor is not the size its type and shape take.
    #[error(
        "{given} bytes of data for a {ty} tensor of shape {dimensions:?}, which takes {needed}"
    )]
    DataLength {
        /// The type.
        ty: GgmlType,
        /// The shape.
        dimensions: Vec<u64>,
        /// Bytes given.
        given: u64,
        /// Bytes needed.
        needed: u64,
    },
    /// Its elements were asked for as another type's.
    #[error("is {}, not {asked}", type_name(*ty))]
    NotElements {
        /// Its type id.
        ty: u32,
        /// The type asked for.
        asked: GgmlType,
    },
    /// The data section would pass 2^64 bytes.
    #[error("tensor data passes 2^64 bytes")]
    TooLarge,
    /// A source gave fewer bytes than it declared.
    #[error("its source gave {done} of its declared {len} bytes: {source}")]
    ShortSource {
        /// Bytes it gave.
        done: u64,
        /// Bytes it declared.
        len: u64,
        /// Why it stopped.
        source: std::io::Error,
    },
    /// A source made another number of bytes than it declared.
    #[error("its source made {gave} bytes, not the {declared} it declared")]
    SourceLength {
        /// Bytes it made (at least).
        gave: u64,
        /// Bytes it declared.
        declared: u64,
    },
    /// Its blocks cannot be converted.
    #[error(transparent)]
    Quant(#[from] QuantError),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a model cannot be quantized as asked.
#[derive(Debug, thiserror::Error)]
pub enum QuantizeError {
    /// `general.architecture` is not one llama.cpp knows (`--any-architecture` takes it).
    #[error("unknown model architecture: '{0}'")]
    UnknownArchitecture(String),
    /// A hyperparameter is missing, mistyped or out of llama.cpp's range.
    #[error("{0}")]
    Hparams(String),
    /// The type rules cannot place a tensor.
    #[error("{0}")]
    Plan(String),
    /// ggml's reader refuses the input (the `ggml` profile's errors).
    #[error("ggml's reader refuses the file: {0}")]
    Refused(String),
    /// `general.alignment` other than 32: llama-quantize would keep the key but lay the data
    /// out at 32, which ggml then refuses; refused here instead.
    #[error("general.alignment is {0}; llama-quantize writes data aligned to 32 only")]
    Alignment(String),
    /// A tensor's type needs an importance matrix and none was given.
    #[error("this quantization requires an importance matrix: tensor {tensor} would be {ty}")]
    NeedsImatrix {
        /// The first such tensor.
        tensor: String,
        /// Its type.
        ty: GgmlType,
    },
    /// A quantized tensor would be quantized again without `--allow-requantize`.
    #[error("tensor {tensor}: requantizing from type {from} is disabled (--allow-requantize)")]
    Requantize {
        /// The tensor.
        tensor: String,
        /// Its type.
        from: GgmlType,
    },
    /// A tensor of a type that has no conversion to f32 (integers, f64) would be converted.
    #[error("tensor {tensor}: cannot dequantize/convert tensor type {from}")]
    CannotConvert {
        /// The tensor.
        tensor: String,
        /// Its type.
        from: GgmlType,
    },
    /// The input holds NaN, infinity or a bad scale (llama.cpp's loader refuses it).
    #[error("tensor '{tensor}' has invalid data: {source}")]
    InvalidData {
        /// The tensor.
        tensor: String,
        /// The first bad block or element.
        source: InvalidData,
    },
    /// What was quantized does not pass ggml's check (a scale overflowed f16).
    #[error("tensor {tensor}: quantized data validation failed: {source}")]
    QuantizedInvalid {
        /// The tensor.
        tensor: String,
        /// The first bad block.
        source: InvalidData,
    },
    /// An importance matrix that cannot be read or used.
    #[error("{0}")]
    Imatrix(String),
    /// The block arithmetic refused.
    #[error(transparent)]
    Quant(#[from] QuantError),
}

/// Why an edit cannot be made as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EditError {
    /// A key to delete is not in the file.
    NoSuchKey(String),
    /// A standard key would get a value of another type than its standard one (allowed with
    /// [`crate::edit::Edit::force`]).
    NotStandardType {
        /// The key.
        key: String,
        /// Its standard type.
        expected: &'static str,
        /// The type of the value given.
        found: String,
    },
    /// `general.alignment` would change, which moves every tensor's data.
    AlignmentChanged {
        /// The alignment in force.
        from: u32,
        /// The one the edit sets.
        to: u32,
    },
    /// No tensor has the name.
    NoSuchTensor(String),
    /// Several tensors have the name, so it does not say which is meant.
    AmbiguousTensor(String),
    /// The new name of a renamed tensor is taken.
    TensorExists(String),
    /// In place: tensors cannot be deleted (that would leave a hole in the data section).
    DeleteInPlace,
    /// In place: the new header needs more room than the old one had.
    DoesNotFit {
        /// Bytes missing.
        needed: u64,
        /// Bytes the old header had before the data section.
        room: u64,
    },
    /// In place: the new header is shorter than the old one by more than the alignment slack,
    /// so the data section would move.
    ShrinksPastSlack {
        /// Bytes shorter.
        by: u64,
        /// The alignment.
        alignment: u32,
    },
    /// The output is the input (edit it in place instead).
    OutputIsInput,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EditError::*;
        match self {
            NoSuchKey(key) => write!(f, "--delete {key}: no such key"),
            NotStandardType { key, expected, found } => write!(
                f,
                "--set {key}: the standard type of {key} is {expected}, not {found} (--force sets it anyway)"
            ),
            AlignmentChanged { from, to } => write!(
                f,
                "{ALIGNMENT_KEY} would change from {from} to {to}: that moves every tensor's data, which edit does not do"
            ),
            NoSuchTensor(name) => write!(f, "{name}: no such tensor"),
            AmbiguousTensor(name) => write!(
                f,
                "{name}: several tensors have that name, so it does not say which"
            ),
            TensorExists(name) => write!(f, "a tensor named {name} exists"),
            DeleteInPlace => f.write_str(
                "deleting tensors in place would leave a hole in the data section; write a new file with -o",
            ),
            DoesNotFit { needed, room } => write!(
                f,
                "the new header needs {needed} more bytes than the {room} before the data section; write a new file with -o"
            ),
            ShrinksPastSlack { by, alignment } => write!(
                f,
                "the new header ends {by} bytes before the old one, past the {alignment}-byte alignment slack, which would move the data section; write a new file with -o"
            ),
            OutputIsInput => {
                f.write_str("is the input: edit it with --in-place, or write elsewhere")
            }
        }
    }
}

impl std::error::Error for EditError {}

/// Why a file cannot be converted to the other byte order without loss.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndianError {
    /// The version has no files in that byte order.
    #[error("version {version} files are not written {}-endian (versions: {})", to.name(), version::describe(*to))]
    NoSuchVersion {
        /// The file's version.
        version: u32,
        /// The byte order asked for.
        to: ByteOrder,
    },
    /// A tensor's data overlaps another's: its bytes would be swapped twice.
    #[error("tensor[{index}] ({name}): its data overlaps another tensor's, which would be swapped twice")]
    Overlap {
        /// The tensor's index.
        index: usize,
        /// Its name.
        name: String,
    },
    /// In place, the header would not keep its length (a bigger header moves the data).
    #[error("the header would change length in the other byte order")]
    HeaderLength,
}

/// Why lossless JSON and a data file do not make a file.
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LosslessError {
    /// The JSON does not describe a header: what is wrong, where.
    #[error("{0}")]
    Malformed(String),
    /// A tensor the JSON names is not in the data file.
    #[error("tensor {name}: {from} has no tensor of that name to take its data from")]
    NoSuchTensor {
        /// The tensor.
        name: String,
        /// The data file.
        from: PathBuf,
    },
    /// A tensor's type or shape is not the data file's.
    #[error("tensor {name}: {} {here:?} here, {} {there:?} in {}: its data cannot be taken", type_name(*here_type), type_name(*there_type), from.display())]
    Mismatch {
        /// The tensor.
        name: String,
        /// Its type id in the JSON.
        here_type: u32,
        /// Its shape in the JSON.
        here: Vec<u64>,
        /// Its type id in the data file.
        there_type: u32,
        /// Its shape in the data file.
        there: Vec<u64>,
        /// The data file.
        from: PathBuf,
    },
}

/// Why a split or a merge cannot be made as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// A shard must hold at least one tensor.
    #[error("at most 0 tensors per shard: a shard holds one at least")]
    NoTensorsPerShard,
    /// More shards than `split.count` (a UINT16) can count.
    #[error("{0} shards: split.count is a UINT16")]
    TooManyShards(usize),
    /// More tensors than `split.tensors.count` (an INT32) can count.
    #[error("{0} tensors: split.tensors.count is an INT32")]
    TooManyTensors(usize),
    /// The file named as the first shard is not named as one.
    #[error("is not a first shard: its name must end in -00001-of-NNNNN.gguf")]
    NotFirstShard,
    /// A shard with tensors ends before its data section: cut short (ggml, gguf-split and
    /// llama.cpp's loader refuse it; merged, its tensors would be laid out as if it were whole).
    #[error(
        "the file ends {missing} bytes before the data section its tensors are in (cut short?)"
    )]
    CutShort {
        /// Bytes missing up to the data section.
        missing: u64,
    },
    /// A shard disagrees with the set: the field, and how.
    #[error("{field}: {why}")]
    Inconsistent {
        /// The key or header field.
        field: String,
        /// How it disagrees.
        why: String,
    },
}

/// Why a remote read failed (beside the file's own decode errors).
#[cfg(feature = "remote")]
#[cfg_attr(docsrs, doc(cfg(feature = "remote")))]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The server answered with an error status.
    #[error("HTTP {status}{hint}")]
    Status {
        /// The status code.
        status: u16,
        /// What it probably means for a model file.
        hint: &'static str,
    },
    /// The connection failed or timed out (after the retries, if any were allowed).
    #[error("{0}")]
    Transport(String),
    /// The server's answer does not make sense for the range asked.
    #[error("{0}")]
    Protocol(String),
    /// The header goes past [`crate::remote::Options::max_header`].
    #[error("the header goes past {limit} bytes, the limit on a remote header")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// Not a URL this reader can fetch.
    #[error("not an http(s) URL: {0}")]
    BadUrl(String),
}
