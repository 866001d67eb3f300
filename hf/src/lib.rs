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
//! Families: `LlamaForCausalLM` (and `LLaMAForCausalLM`, `MistralForCausalLM`),
//! `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, `Qwen2MoeForCausalLM`, `Qwen3MoeForCausalLM`,
//! `Gemma2ForCausalLM`, `Gemma3ForCausalLM` (and the text of `Gemma3ForConditionalGeneration`),
//! `Phi3ForCausalLM`. Vocabularies: SentencePiece (`tokenizer.model`), BPE (`tokenizer.json`,
//! the pre-tokenizer found by the reference's hash table), llama-hf (`tokenizer.json` alone,
//! BPE with byte fallback) and the special vocabulary.

mod config;
mod convert;
mod error;
pub mod export;
mod family;
mod kv;
pub mod metadata;
mod names;
pub mod safetensors;
#[rustfmt::skip]
mod tables;
mod bpe;
pub mod vocab;

pub use convert::{convert, convert_quantized, convert_with, Options, OutType, Report, TensorPlan};
pub use error::{Error, Result};
pub use export::{export_hf, Dtype, ExportOptions, ExportReport};

use std::path::Path;

/// Reads a JSON file, naming it on failure.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::field(
            path,
            format!("line {} column {}", e.line(), e.column()),
            format!("not JSON: {e}"),
        )
    })
}
