//! The families export-hf writes back: the GGUF architectures it knows, each with the
//! transformers class it is exported as (`config.rs`) and the layout undone (`weights.rs`).

use crate::tables::{self, ArchTable};

/// A GGUF architecture export-hf writes back, by the reference class that wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// `conversion/llama.py`'s `LlamaModel`.
    Llama,
    /// `conversion/qwen.py`'s `Qwen2Model`.
    Qwen2,
    /// `conversion/qwen.py`'s `Qwen3Model`.
    Qwen3,
    /// `conversion/qwen.py`'s `Qwen2MoeModel`.
    Qwen2Moe,
    /// `conversion/qwen.py`'s `Qwen3MoeModel`.
    Qwen3Moe,
    /// `conversion/gemma.py`'s `Gemma2Model`.
    Gemma2,
    /// `conversion/gemma.py`'s `Gemma3Model` (text; also the text of
    /// `Gemma3ForConditionalGeneration`).
    Gemma3,
    /// `conversion/phi.py`'s `Phi3MiniModel`.
    Phi3,
}

impl Family {
    /// The architecture's tables.
    pub fn arch(self) -> &'static ArchTable {
        match self {
            Family::Llama => &tables::LLAMA,
            Family::Qwen2 => &tables::QWEN2,
            Family::Qwen3 => &tables::QWEN3,
            Family::Qwen2Moe => &tables::QWEN2MOE,
            Family::Qwen3Moe => &tables::QWEN3MOE,
            Family::Gemma2 => &tables::GEMMA2,
            Family::Gemma3 => &tables::GEMMA3,
            Family::Phi3 => &tables::PHI3,
        }
    }
}
