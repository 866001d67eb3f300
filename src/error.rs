//! The library's error type.

use crate::edit::EditError;
use crate::quant::{type_name, GgmlType, QuantError, SizeError};
use ggufrw_schema::{DecodeError, EncodeError};
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
    Quantize(#[from] crate::quantize::QuantizeError),
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
    Split(#[from] crate::tools::split::SplitError),
    /// A byte-order conversion that cannot be made without loss.
    #[error(transparent)]
    Endian(#[from] crate::tools::endian::EndianError),
    /// Lossless JSON that does not describe a file.
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    #[error("lossless JSON: {0}")]
    Lossless(#[from] crate::tools::lossless::LosslessError),
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
        source: crate::remote::RemoteError,
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
