//! Hugging Face checkpoints to GGUF, byte for byte as llama.cpp's `convert_hf_to_gguf.py`
//! (the tree pinned by the project's `scripts/ggml.sh`) writes them, without Python or torch.
//!
//! A conversion is planned from the headers alone (tensor names, types, shapes, the metadata
//! and the file names), then carried out tensor by tensor: each tensor is read from the mapped
//! checkpoint, converted a group of rows at a time on every core and written, so that memory
//! holds a few rows and one tensor's checkpoint pages, never a model.
//!
//! ```no_run
//! use ggufrw_hf::{convert, Options, OutType};
//! let report = convert("models/TinyLlama".as_ref(), &Options {
//!     outtype: OutType::F16,
//!     outfile: Some("tiny.gguf".into()),
//!     ..Options::default()
//! })?;
//! println!("{}", report.outputs[0].display());
//! # Ok::<(), ggufrw_hf::Error>(())
//! ```
//!
//! [`convert_quantized`] goes on to a llama-quantize preset in the same pass, with nothing
//! written but the output.
//!
//! Model classes: one module per family of the reference (`conversion/<family>.py`), each
//! class a line of the registry; [`classes`] lists every class the reference converts and
//! whether this converter does. Vocabularies: SentencePiece (`tokenizer.model`), BPE (`tokenizer.json`,
//! the pre-tokenizer found by the reference's hash table), llama-hf (`tokenizer.json` alone,
//! BPE with byte fallback) and the special vocabulary.

mod config;
mod convert;
mod dequant;
mod error;
pub mod export;
mod json;
mod kv;
mod lora;
pub mod metadata;
mod model_dir;
mod models;
mod names;
mod nvfp4;
pub mod safetensors;
#[rustfmt::skip]
mod tables;
mod bpe;
pub mod vocab;

pub use convert::{convert, convert_quantized, convert_with, Options, OutType, Report, TensorPlan};
pub use error::{Error, Result, Unsupported};
pub use export::{export_hf, Dtype, ExportOptions, ExportReport};
pub use lora::{convert_lora, LoraOptions};
pub use model_dir::ModelDir;
pub use models::{classes, mmproj_classes, ClassState, MmprojState};

pub(crate) use json::read_json;
