//! Enumerations that standard keys hold: names both ways.

use crate::quant::GgmlType;

/// `general.file_type`: the file's main quantization (gguf-py's `LlamaFileType`; ids 4–6 and
/// 33–35 are retired).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::FromRepr,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::Display,
)]
#[strum(ascii_case_insensitive)]
#[repr(u32)]
#[allow(non_camel_case_types, missing_docs)]
pub enum FileType {
    ALL_F32 = 0,
    MOSTLY_F16 = 1,
    MOSTLY_Q4_0 = 2,
    MOSTLY_Q4_1 = 3,
    MOSTLY_Q8_0 = 7,
    MOSTLY_Q5_0 = 8,
    MOSTLY_Q5_1 = 9,
    MOSTLY_Q2_K = 10,
    MOSTLY_Q3_K_S = 11,
    MOSTLY_Q3_K_M = 12,
    MOSTLY_Q3_K_L = 13,
    MOSTLY_Q4_K_S = 14,
    MOSTLY_Q4_K_M = 15,
    MOSTLY_Q5_K_S = 16,
    MOSTLY_Q5_K_M = 17,
    MOSTLY_Q6_K = 18,
    MOSTLY_IQ2_XXS = 19,
    MOSTLY_IQ2_XS = 20,
    MOSTLY_Q2_K_S = 21,
    MOSTLY_IQ3_XS = 22,
    MOSTLY_IQ3_XXS = 23,
    MOSTLY_IQ1_S = 24,
    MOSTLY_IQ4_NL = 25,
    MOSTLY_IQ3_S = 26,
    MOSTLY_IQ3_M = 27,
    MOSTLY_IQ2_S = 28,
    MOSTLY_IQ2_M = 29,
    MOSTLY_IQ4_XS = 30,
    MOSTLY_IQ1_M = 31,
    MOSTLY_BF16 = 32,
    MOSTLY_TQ1_0 = 36,
    MOSTLY_TQ2_0 = 37,
    MOSTLY_MXFP4_MOE = 38,
    MOSTLY_NVFP4 = 39,
    MOSTLY_Q1_0 = 40,
    MOSTLY_Q2_0 = 41,
    GUESSED = 1024,
}

impl FileType {
    /// The name used in file names: the part after `ALL_`/`MOSTLY_` (`Q4_K_M`, `F32`); empty
    /// for `GUESSED`, as llama.cpp's converter (`partition("_")[2]`) gives it.
    pub fn encoding(self) -> &'static str {
        let name: &'static str = self.into();
        name.split_once('_').map_or("", |(_, rest)| rest)
    }

    /// The ggml type most tensors of such a file have (None for `GUESSED`).
    pub fn main_type(self) -> Option<GgmlType> {
        use FileType::*;
        use GgmlType as G;
        Some(match self {
            ALL_F32 => G::F32,
            MOSTLY_F16 => G::F16,
            MOSTLY_Q4_0 => G::Q4_0,
            MOSTLY_Q4_1 => G::Q4_1,
            MOSTLY_Q8_0 => G::Q8_0,
            MOSTLY_Q5_0 => G::Q5_0,
            MOSTLY_Q5_1 => G::Q5_1,
            MOSTLY_Q2_K | MOSTLY_Q2_K_S => G::Q2_K,
            MOSTLY_Q3_K_S | MOSTLY_Q3_K_M | MOSTLY_Q3_K_L => G::Q3_K,
            MOSTLY_Q4_K_S | MOSTLY_Q4_K_M => G::Q4_K,
            MOSTLY_Q5_K_S | MOSTLY_Q5_K_M => G::Q5_K,
            MOSTLY_Q6_K => G::Q6_K,
            MOSTLY_IQ2_XXS => G::IQ2_XXS,
            MOSTLY_IQ2_XS => G::IQ2_XS,
            MOSTLY_IQ3_XS | MOSTLY_IQ3_S | MOSTLY_IQ3_M => G::IQ3_S,
            MOSTLY_IQ3_XXS => G::IQ3_XXS,
            MOSTLY_IQ1_S => G::IQ1_S,
            MOSTLY_IQ4_NL => G::IQ4_NL,
            MOSTLY_IQ2_S | MOSTLY_IQ2_M => G::IQ2_S,
            MOSTLY_IQ4_XS => G::IQ4_XS,
            MOSTLY_IQ1_M => G::IQ1_M,
            MOSTLY_BF16 => G::BF16,
            MOSTLY_TQ1_0 => G::TQ1_0,
            MOSTLY_TQ2_0 => G::TQ2_0,
            MOSTLY_MXFP4_MOE => G::MXFP4,
            MOSTLY_NVFP4 => G::NVFP4,
            MOSTLY_Q1_0 => G::Q1_0,
            MOSTLY_Q2_0 => G::Q2_0,
            GUESSED => return None,
        })
    }
}

/// `tokenizer.ggml.token_type` values.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::FromRepr,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::Display,
)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE", ascii_case_insensitive)]
#[repr(i32)]
#[allow(missing_docs)]
pub enum TokenType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
}

/// `tokenizer.ggml.model` values.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::Display,
)]
#[strum(serialize_all = "snake_case")]
#[allow(missing_docs)]
pub enum TokenizerModel {
    /// No vocabulary.
    NoVocab,
    /// SentencePiece (LLaMA).
    Llama,
    Replit,
    /// Byte-level BPE.
    Gpt2,
    /// WordPiece.
    Bert,
    /// Unigram.
    T5,
    Rwkv,
    Plamo2,
}

/// `[arch].pooling_type` values.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::FromRepr,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::Display,
)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE", ascii_case_insensitive)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum PoolingType {
    None = 0,
    Mean = 1,
    Cls = 2,
    Last = 3,
    Rank = 4,
}

/// `[arch].rope.scaling.type` values.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumIter,
    strum::Display,
)]
#[strum(serialize_all = "lowercase")]
#[allow(missing_docs)]
pub enum RopeScalingType {
    None,
    Linear,
    Yarn,
    Longrope,
}
