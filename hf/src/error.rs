//! The converter's errors: each names the file and, where one is to blame, the field.

use std::path::{Path, PathBuf};

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A field of an input file is missing, malformed or contradicts another.
    #[error("{}: {field}: {message}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field, as a dotted path.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The checkpoint is of a kind this converter (or the reference) does not convert.
    #[error("{0}")]
    Unsupported(String),
    /// Writing the GGUF file failed.
    #[error(transparent)]
    Output(#[from] ggufrw::Error),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn field(
        path: &Path,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Error {
        Error::Field {
            path: path.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The converter's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
