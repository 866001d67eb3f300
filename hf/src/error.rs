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
    /// The checkpoint, or what was asked of it, is not converted: see [`Unsupported`].
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// Writing the GGUF file failed.
    #[error(transparent)]
    Output(#[from] ggufrw::Error),
}

impl Error {
    /// [`Unsupported::NotYet`].
    pub(crate) fn not_yet(message: impl Into<String>) -> Error {
        Unsupported::NotYet(message.into()).into()
    }

    /// [`Unsupported::Reference`].
    pub(crate) fn reference(message: impl Into<String>) -> Error {
        Unsupported::Reference(message.into()).into()
    }

    /// [`Unsupported::Options`].
    pub(crate) fn options(message: impl Into<String>) -> Error {
        Unsupported::Options(message.into()).into()
    }

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

/// Why a checkpoint, or a request, is not converted.
#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    /// The model path is not a folder.
    #[error("Error: {} is not a directory", .0.display())]
    NotAFolder(PathBuf),
    /// A model class the reference converts and ggufrw does not yet.
    #[error(
        "Model {class} is not converted by ggufrw yet: the reference converts it with \
         conversion/{module}.py ({py_class}); `ggufrw convert-hf --list` shows every class"
    )]
    Class {
        /// The `architectures` name.
        class: String,
        /// The reference's module that handles it.
        module: &'static str,
        /// The reference's Python class.
        py_class: &'static str,
    },
    /// A model class the reference does not convert either.
    #[error(
        "Model {0} is not supported: the reference does not convert it either \
         (`ggufrw convert-hf --list` shows the classes that are)"
    )]
    UnknownClass(String),
    /// A projector (`--mmproj`) the reference converts that ggufrw does not yet.
    #[error(
        "The projector of {class} is not converted by ggufrw yet: the reference converts it \
         with conversion/{module}.py ({py_class}); `ggufrw convert-hf --list` shows every class"
    )]
    Mmproj {
        /// The `architectures` name.
        class: String,
        /// The reference's module that handles it.
        module: &'static str,
        /// The reference's Python projector class.
        py_class: &'static str,
    },
    /// A class without a projector in the reference (`--mmproj` of a text model).
    #[error(
        "Model {0} has no projector to convert: the reference's MMPROJ_MODEL_MAP does not name \
         it (`ggufrw convert-hf --list` shows the classes that have one)"
    )]
    NoMmproj(String),
    /// Something of a class ggufrw converts that it does not convert yet: a feature, a kind of
    /// tokenizer, a key. The message says what.
    #[error("{0}")]
    NotYet(String),
    /// The input is one the reference refuses too; the message is the reference's own.
    #[error("{0}")]
    Reference(String),
    /// Options that do not go together, or an option's value that is not taken.
    #[error("{0}")]
    Options(String),
}

/// The converter's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
