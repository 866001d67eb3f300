//! The library's error type.

use crate::edit::EditError;
use ggufrw_schema::{DecodeError, EncodeError};
use std::path::{Path, PathBuf};

/// Anything that can go wrong reading, writing or accessing a GGUF file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not a well-formed GGUF file.
    #[error("{0}")]
    Decode(#[from] DecodeError),
    /// The model cannot be written: a reader would reject the result.
    #[error("cannot encode: {0}")]
    Encode(#[from] EncodeError),
    /// A tensor's data cannot be handed out.
    #[error("tensor[{index}] ({name}): {message}")]
    Tensor {
        /// Index of the tensor info.
        index: usize,
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
    /// An edit that cannot be made as asked.
    #[error("{0}")]
    Edit(#[from] EditError),
    /// Invalid input to a builder.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing failed.
    #[error("{0}")]
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

    /// Whether reading or writing failed (rather than the content being wrong).
    pub fn is_io(&self) -> bool {
        match self.root() {
            Error::Io(_) => true,
            #[cfg(feature = "remote")]
            Error::Remote { .. } => true,
            _ => false,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
