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
mod cnum;
mod command_line;
pub mod imatrix;
mod options;
mod plan;
pub(crate) use plan::set as gguf_set_val;
mod preset;
mod run;

pub use arch::{Hparams, ARCHITECTURES};
pub use command_line::{CommandLine, Pattern};
pub use options::{KvOverride, Matcher, Options, TensorType};
pub use plan::{Plan, PlannedTensor};
pub use preset::{default_type, Preset, PRESETS};
pub(crate) use run::Rows;
pub use run::{check_input, quantize, quantize_built, split_output_path, Model, Report, Run};

pub use crate::error::QuantizeError;
