//! Read and write GGUF, the model-file container of ggml and llama.cpp, exactly.
//!
//! Every file that decodes is written back byte for byte: version, byte order, key order,
//! float bits, padding and the data section as they were. Every file that does not decode
//! gets a [`DecodeError`] naming the field and byte offset. Decoding never panics and never
//! allocates more than the input's bytes can back.
//!
//! The wire format itself lives in the [`ggufrw_schema`] crate (re-exported as [`schema`]);
//! this crate adds files, tensors, validation, building and the `ggufrw` command.
//!
//! ```
//! use ggufrw::{Builder, GgmlType, Gguf, Value, validate::{validate, Profile}};
//!
//! // Build a file in code…
//! let built = Builder::new()
//!     .metadata("general.architecture", "llama")
//!     .metadata("llama.context_length", 4096u32)
//!     .tensor("token_embd.weight", GgmlType::F32, &[4, 2], vec![0u8; 32])?
//!     .build()?;
//! let bytes = built.to_bytes()?;
//!
//! // …decode it (from a slice here; `Gguf::open(path)` memory-maps a file)…
//! let file = Gguf::from_bytes(&bytes[..])?;
//! assert_eq!(file.header().version, 3);
//! assert_eq!(file.get("llama.context_length"), Some(&Value::Uint32(4096)));
//! let t = file.tensor("token_embd.weight").unwrap();
//! assert_eq!((t.info.dimensions.as_slice(), t.file_offset), (&[4u64, 2][..], file.layout().data_offset));
//! assert_eq!(file.tensor_data(t.index)?.len(), 32);
//! assert!(validate(&file, Profile::Ggml).is_empty());
//!
//! // …and write it back, unchanged.
//! assert_eq!(file.to_bytes()?, bytes);
//! # Ok::<(), ggufrw::Error>(())
//! ```
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | *(none, the default)* | the codec: [`Gguf`], [`view`], [`Builder`], [`edit`], [`validate`], [`keys`], [`naming`], the [`GgmlType`] table and its arithmetic ([`quant`]) |
//! | `json` | [`dump`]: the header as JSON and text; lossless JSON and `diff` in [`tools`] (serde_json) |
//! | `hash` | `tools::hash`: gguf-hash's per-tensor and per-file hashes (xxhash, sha1, sha2, uuid) |
//! | `half` | F16 and BF16 tensors as `half`'s types |
//! | `remote` | [`remote`]: headers read over HTTP(S) range requests (ureq with rustls) |
//!
//! The rest of the project is in crates of its own: the `ggufrw` command (`ggufrw-cli`), the
//! conformance harness and the proptest strategies (`ggufrw-conform`), the wire format
//! (`ggufrw-schema`) and the block arithmetic (`ggufrw-quant`, re-exported as [`quant`]).
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod dump;
pub mod edit;
mod elements;
mod error;
mod file;
pub mod fsutil;
pub mod keys;
pub mod lora;
pub mod naming;
pub mod params;
pub mod quantize;
#[cfg(feature = "remote")]
#[cfg_attr(docsrs, doc(cfg(feature = "remote")))]
pub mod remote;
pub mod shards;
pub mod tools;
pub mod validate;
pub mod view;
mod write;

pub use elements::{elements, TensorElement, HOST};
pub use error::{Error, Result, TensorError};
pub use file::{read_header, read_tensor_data, tensor_byte_size, Gguf, Tensor};
pub use ggufrw_quant as quant;
pub use ggufrw_quant::GgmlType;
pub use ggufrw_schema as schema;
pub use ggufrw_schema::{
    Array, ArrayValues, ByteOrder, DecodeError, DecodeErrorKind, EncodeError, GgufBool, GgufString,
    Header, KeyValue, Layout, Magic, NotUtf8, TensorInfo, Text, TextRef, Value, ValueType,
    ALIGNMENT_KEY,
};
pub use write::{Builder, Source};

/// The library guide's examples (docs/library.md), compiled and run as doc tests so that the
/// guide stays true.
#[cfg(all(doctest, feature = "json"))]
#[doc = include_str!("../docs/library.md")]
pub struct LibraryDoctests;
