//! The library's error type.

use ggufrw_schema::{DecodeError, EncodeError};

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
    /// Invalid input to a builder or editor.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
