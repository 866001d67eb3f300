//! Whole models quantized as llama.cpp's `llama-quantize` quantizes them, byte for byte: its
//! presets ([`Preset`]), the per-tensor plan computed from the headers alone ([`Plan`]: which
//! tensors, which type, the order, the metadata written) and the driver ([`quantize()`]) that
//! streams each tensor from the memory map through the writer, on every thread asked for.
//!
//! ```
//! use ggufrw::quantize::{Options, Plan, Preset};
//! use ggufrw::{Builder, GgmlType};
//! let model = Builder::new()
//!     .metadata("general.architecture", "llama")
//!     .metadata("llama.context_length", 4096u32)
//!     .metadata("llama.embedding_length", 256u32)
//!     .metadata("llama.block_count", 1u32)
//!     .metadata("llama.attention.head_count", 4u32)
//!     .metadata("llama.attention.layer_norm_rms_epsilon", 1e-5f32)
//!     .tensor("blk.0.attn_v.weight", GgmlType::F16, &[256, 64], vec![0u8; 256 * 64 * 2])?
//!     .tensor("blk.0.ffn_down.weight", GgmlType::F16, &[256, 256], vec![0u8; 256 * 256 * 2])?
//!     .build()?;
//! let plan = Plan::new(&[model.header()], &Options::new(Preset::parse("Q4_K_M").unwrap()))?;
//! let types: Vec<_> = plan.tensors.iter().map(|t| t.to).collect();
//! assert_eq!(types, [GgmlType::Q6_K, GgmlType::Q6_K]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arch;
pub mod imatrix;
mod plan;
mod preset;
mod run;

pub use arch::{Hparams, ARCHITECTURES};
pub use plan::{KvOverride, Options, Plan, PlannedTensor, TensorType};
pub use preset::{default_type, stoi, Preset, PRESETS};
pub(crate) use run::Rows;
pub use run::{check_input, quantize, quantize_built, split_output_path, Model, Report, Run};

use crate::quant::{GgmlType, InvalidData, QuantError};

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
