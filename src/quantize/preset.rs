//! The quantization presets llama-quantize accepts: names, numeric ids, help text.

use super::cnum::stoi;
use crate::keys::FileType;
use crate::quant::GgmlType;

/// One preset: the name and file type llama-quantize takes on its command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name as llama-quantize lists it (`Q4_K_M`, `COPY`).
    pub name: &'static str,
    /// The `general.file_type` it writes (`COPY` writes the input's).
    pub file_type: FileType,
    /// llama-quantize's description: size and perplexity on a reference model, or bits per
    /// weight.
    pub help: &'static str,
}

macro_rules! presets {
    ($($name:literal $ft:ident $help:literal,)*) => {
        /// Every preset, in llama-quantize's order (the order its numeric ids are looked up
        /// in: `0` is `F32`, never `COPY`).
        pub const PRESETS: &[Preset] = &[
            $(Preset { name: $name, file_type: FileType::$ft, help: $help },)*
        ];
    };
}

presets! {
    "Q1_0" MOSTLY_Q1_0 "1.125 bpw quantization",
    "Q2_0" MOSTLY_Q2_0 "2.25 bpw quantization (group 64)",
    "Q4_0" MOSTLY_Q4_0 "4.34G, +0.4685 ppl @ Llama-3-8B",
    "Q4_1" MOSTLY_Q4_1 "4.78G, +0.4511 ppl @ Llama-3-8B",
    "MXFP4_MOE" MOSTLY_MXFP4_MOE "MXFP4 MoE",
    "Q5_0" MOSTLY_Q5_0 "5.21G, +0.1316 ppl @ Llama-3-8B",
    "Q5_1" MOSTLY_Q5_1 "5.65G, +0.1062 ppl @ Llama-3-8B",
    "IQ2_XXS" MOSTLY_IQ2_XXS "2.06 bpw quantization",
    "IQ2_XS" MOSTLY_IQ2_XS "2.31 bpw quantization",
    "IQ2_S" MOSTLY_IQ2_S "2.5  bpw quantization",
    "IQ2_M" MOSTLY_IQ2_M "2.7  bpw quantization",
    "IQ1_S" MOSTLY_IQ1_S "1.56 bpw quantization",
    "IQ1_M" MOSTLY_IQ1_M "1.75 bpw quantization",
    "TQ1_0" MOSTLY_TQ1_0 "1.69 bpw ternarization",
    "TQ2_0" MOSTLY_TQ2_0 "2.06 bpw ternarization",
    "Q2_K" MOSTLY_Q2_K "2.96G, +3.5199 ppl @ Llama-3-8B",
    "Q2_K_S" MOSTLY_Q2_K_S "2.96G, +3.1836 ppl @ Llama-3-8B",
    "IQ3_XXS" MOSTLY_IQ3_XXS "3.06 bpw quantization",
    "IQ3_S" MOSTLY_IQ3_S "3.44 bpw quantization",
    "IQ3_M" MOSTLY_IQ3_M "3.66 bpw quantization mix",
    "Q3_K" MOSTLY_Q3_K_M "alias for Q3_K_M",
    "IQ3_XS" MOSTLY_IQ3_XS "3.3 bpw quantization",
    "Q3_K_S" MOSTLY_Q3_K_S "3.41G, +1.6321 ppl @ Llama-3-8B",
    "Q3_K_M" MOSTLY_Q3_K_M "3.74G, +0.6569 ppl @ Llama-3-8B",
    "Q3_K_L" MOSTLY_Q3_K_L "4.03G, +0.5562 ppl @ Llama-3-8B",
    "IQ4_NL" MOSTLY_IQ4_NL "4.50 bpw non-linear quantization",
    "IQ4_XS" MOSTLY_IQ4_XS "4.25 bpw non-linear quantization",
    "Q4_K" MOSTLY_Q4_K_M "alias for Q4_K_M",
    "Q4_K_S" MOSTLY_Q4_K_S "4.37G, +0.2689 ppl @ Llama-3-8B",
    "Q4_K_M" MOSTLY_Q4_K_M "4.58G, +0.1754 ppl @ Llama-3-8B",
    "Q5_K" MOSTLY_Q5_K_M "alias for Q5_K_M",
    "Q5_K_S" MOSTLY_Q5_K_S "5.21G, +0.1049 ppl @ Llama-3-8B",
    "Q5_K_M" MOSTLY_Q5_K_M "5.33G, +0.0569 ppl @ Llama-3-8B",
    "Q6_K" MOSTLY_Q6_K "6.14G, +0.0217 ppl @ Llama-3-8B",
    "Q8_0" MOSTLY_Q8_0 "7.96G, +0.0026 ppl @ Llama-3-8B",
    "F16" MOSTLY_F16 "14.00G, +0.0020 ppl @ Mistral-7B",
    "BF16" MOSTLY_BF16 "14.00G, -0.0050 ppl @ Mistral-7B",
    "F32" ALL_F32 "26.00G              @ 7B",
    "COPY" ALL_F32 "only copy tensors, no quantizing",
}

impl Preset {
    /// The preset `text` names: a name in any case, else a number (read as C's `stoi` reads
    /// it: leading blanks, a sign, digits, anything after ignored) that is a preset's file
    /// type, the first in [`PRESETS`] order.
    pub fn parse(text: &str) -> Option<&'static Preset> {
        if let Some(p) = PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(text)) {
            return Some(p);
        }
        let id = stoi(text)?;
        PRESETS.iter().find(|p| i64::from(p.file_type as u32) == id)
    }

    /// Whether this is `COPY`: every tensor copied as it is.
    pub fn is_copy(&self) -> bool {
        self.name == "COPY"
    }

    /// The type most tensors get (llama.cpp's `llama_ftype_get_default_type`).
    pub fn default_type(&self) -> GgmlType {
        default_type(self.file_type).expect("every preset has a default type")
    }
}

/// The default tensor type of a file type, as llama.cpp's `llama_ftype_get_default_type`
/// gives it (`None` for the file types it does not quantize to).
pub fn default_type(ft: FileType) -> Option<GgmlType> {
    use FileType::*;
    use GgmlType as G;
    Some(match ft {
        MOSTLY_Q4_0 => G::Q4_0,
        MOSTLY_Q4_1 => G::Q4_1,
        MOSTLY_Q5_0 => G::Q5_0,
        MOSTLY_Q5_1 => G::Q5_1,
        MOSTLY_Q8_0 => G::Q8_0,
        MOSTLY_F16 => G::F16,
        MOSTLY_BF16 => G::BF16,
        ALL_F32 => G::F32,
        MOSTLY_Q1_0 => G::Q1_0,
        MOSTLY_Q2_0 => G::Q2_0,
        MOSTLY_MXFP4_MOE => G::MXFP4,
        MOSTLY_Q2_K_S | MOSTLY_Q2_K => G::Q2_K,
        MOSTLY_IQ3_XS => G::IQ3_S,
        MOSTLY_Q3_K_S | MOSTLY_Q3_K_M | MOSTLY_Q3_K_L => G::Q3_K,
        MOSTLY_Q4_K_S | MOSTLY_Q4_K_M => G::Q4_K,
        MOSTLY_Q5_K_S | MOSTLY_Q5_K_M => G::Q5_K,
        MOSTLY_Q6_K => G::Q6_K,
        MOSTLY_TQ1_0 => G::TQ1_0,
        MOSTLY_TQ2_0 => G::TQ2_0,
        MOSTLY_IQ2_XXS => G::IQ2_XXS,
        MOSTLY_IQ2_XS | MOSTLY_IQ2_S => G::IQ2_XS,
        MOSTLY_IQ2_M => G::IQ2_S,
        MOSTLY_IQ3_XXS => G::IQ3_XXS,
        MOSTLY_IQ1_S => G::IQ1_S,
        MOSTLY_IQ1_M => G::IQ1_M,
        MOSTLY_IQ4_NL => G::IQ4_NL,
        MOSTLY_IQ4_XS => G::IQ4_XS,
        MOSTLY_IQ3_S | MOSTLY_IQ3_M => G::IQ3_S,
        MOSTLY_NVFP4 | GUESSED => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ids_and_aliases() {
        assert_eq!(Preset::parse("q4_k_m").unwrap().name, "Q4_K_M");
        assert_eq!(
            Preset::parse("Q4_K").unwrap().file_type,
            FileType::MOSTLY_Q4_K_M
        );
        // An id finds the first preset of its file type: the alias, as llama-quantize does.
        assert_eq!(Preset::parse("15").unwrap().name, "Q4_K");
        assert_eq!(Preset::parse(" +17abc").unwrap().name, "Q5_K");
        assert_eq!(Preset::parse("0").unwrap().name, "F32");
        assert_eq!(Preset::parse("18").unwrap().name, "Q6_K");
        assert!(Preset::parse("copy").unwrap().is_copy());
        assert_eq!(Preset::parse("39"), None);
        assert_eq!(Preset::parse("Q4_K_X"), None);
        assert_eq!(Preset::parse("99999999999"), None);
        assert_eq!(stoi("-2147483648"), Some(-2147483648));
        assert_eq!(stoi("2147483648"), None);
    }

    #[test]
    fn every_preset_has_a_default_type() {
        for p in PRESETS {
            p.default_type();
        }
    }
}
