//! What `ggml_validate_row_data` accepts: the loader's check of tensor data (llama.cpp's
//! `check_tensors`) and llama-quantize's check of what it quantized. Floats must be finite;
//! a quantized block's f16 scales (its E8M0 exponent for MXFP4) must be finite; integers and
//! NVFP4's byte scales are anything. Q8_1 has no case there and is always refused.

use crate::GgmlType;
use std::fmt;

/// Why data failed the check: the first bad block (element, for the float types).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidData {
    /// The type checked.
    pub ty: GgmlType,
    /// Index of the first bad block (or element) in the bytes given.
    pub block: usize,
    /// What is wrong with it.
    pub what: &'static str,
}

impl fmt::Display for InvalidData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} {}", self.what, self.ty, self.block)
    }
}

impl std::error::Error for InvalidData {}

fn f16_bad(bits: u16) -> Option<&'static str> {
    match bits & 0x7fff {
        0x7c00 => Some("infinity"),
        b if b > 0x7c00 => Some("NaN"),
        _ => None,
    }
}

fn f32_bad(bits: u32) -> Option<&'static str> {
    match bits & 0x7fff_ffff {
        0x7f80_0000 => Some("infinity"),
        b if b > 0x7f80_0000 => Some("NaN"),
        _ => None,
    }
}

/// Byte offsets of the little-endian f16 scales in one block of `ty`, for the types whose
/// check is "every block's `d` (and `m` / `dmin`) is finite".
fn f16_scales(ty: GgmlType) -> Option<&'static [usize]> {
    use GgmlType as G;
    Some(match ty {
        G::Q1_0 | G::Q2_0 | G::Q4_0 | G::Q5_0 | G::Q8_0 => &[0],
        G::Q4_1 | G::Q5_1 | G::Q4_K | G::Q5_K => &[0, 2],
        G::Q2_K => &[80, 82],
        G::Q3_K => &[108],
        G::Q6_K => &[208],
        G::TQ1_0 => &[52],
        G::TQ2_0 => &[64],
        G::IQ1_S | G::IQ2_XXS | G::IQ2_XS | G::IQ2_S | G::IQ3_XXS | G::IQ3_S | G::IQ4_XS => &[0],
        G::IQ4_NL => &[0],
        _ => return None,
    })
}

/// Checks little-endian `bytes` of `ty` as `ggml_validate_row_data` does.
pub fn validate_row_data(ty: GgmlType, bytes: &[u8]) -> Result<(), InvalidData> {
    use GgmlType as G;
    let size = ty.type_size() as usize;
    let fail = |block: usize, what: &'static str| Err(InvalidData { ty, block, what });
    if bytes.len() % size != 0 {
        return fail(bytes.len() / size, "a partial block");
    }
    let half = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    match ty {
        G::F32 => {
            // Whole words at a time: LLVM vectorises the fold, and only a bad word is looked at.
            for (i, w) in bytes.chunks_exact(4).enumerate() {
                let bits = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                if bits & 0x7f80_0000 == 0x7f80_0000 {
                    if let Some(what) = f32_bad(bits) {
                        return fail(i, what);
                    }
                }
            }
        }
        G::F16 => {
            for (i, w) in bytes.chunks_exact(2).enumerate() {
                if let Some(what) = f16_bad(half(w, 0)) {
                    return fail(i, what);
                }
            }
        }
        G::BF16 => {
            for (i, w) in bytes.chunks_exact(2).enumerate() {
                let bits = half(w, 0) & 0x7fff;
                if bits > 0x7f80 {
                    return fail(i, "NaN");
                }
                if bits == 0x7f80 {
                    return fail(i, "infinity");
                }
            }
        }
        G::F64 => {
            for (i, w) in bytes.chunks_exact(8).enumerate() {
                let v = f64::from_le_bytes(w.try_into().expect("8 bytes"));
                if v.is_nan() {
                    return fail(i, "NaN");
                }
                if v.is_infinite() {
                    return fail(i, "infinity");
                }
            }
        }
        G::Q8_K => {
            for (i, b) in bytes.chunks_exact(size).enumerate() {
                if let Some(what) = f32_bad(u32::from_le_bytes([b[0], b[1], b[2], b[3]])) {
                    return fail(i, what);
                }
            }
        }
        G::MXFP4 => {
            for (i, b) in bytes.chunks_exact(size).enumerate() {
                if b[0] == 0xff {
                    return fail(i, "an exponent of 0xff");
                }
            }
        }
        G::IQ1_M => {
            // The f16 scale is spread over the top nibbles of the four scale words.
            for (i, b) in bytes.chunks_exact(size).enumerate() {
                let sc = |k: usize| half(b, 48 + 2 * k);
                let bits = (sc(0) >> 12)
                    | ((sc(1) >> 8) & 0x00f0)
                    | ((sc(2) >> 4) & 0x0f00)
                    | (sc(3) & 0xf000);
                if let Some(what) = f16_bad(bits) {
                    return fail(i, what);
                }
            }
        }
        G::NVFP4 | G::I8 | G::I16 | G::I32 | G::I64 => {}
        G::Q8_1 => return fail(0, "a type ggml does not check (it refuses it)"),
        _ => {
            let offsets = f16_scales(ty).expect("every other type has f16 scales");
            for (i, b) in bytes.chunks_exact(size).enumerate() {
                for &at in offsets {
                    if let Some(what) = f16_bad(half(b, at)) {
                        return fail(i, what);
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    /// Every scale offset is where the block declaration puts a `Half`: writing an f16
    /// infinity there, and nowhere else, is what fails, for each quantized type.
    #[test]
    fn scale_offsets_are_the_scales() {
        for ty in GgmlType::iter() {
            let Some(offsets) = f16_scales(ty) else {
                continue;
            };
            let size = ty.type_size() as usize;
            let mut block = vec![0u8; size];
            assert_eq!(validate_row_data(ty, &block), Ok(()), "{ty}");
            for &at in offsets {
                block[at..at + 2].copy_from_slice(&0x7c00u16.to_le_bytes());
                assert_eq!(validate_row_data(ty, &block).unwrap_err().what, "infinity");
                block[at..at + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
                assert_eq!(validate_row_data(ty, &block).unwrap_err().what, "NaN");
                block[at..at + 2].copy_from_slice(&[0, 0]);
            }
            // A quantized block dequantizes from its scales: a NaN scale shows in the values.
            let mut bad = vec![0u8; size];
            bad[offsets[0]..offsets[0] + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
            let mut out = vec![0f32; ty.block_size() as usize];
            crate::dequantize(ty, &bad, ggufrw_schema::ByteOrder::Little, &mut out).unwrap();
            assert!(
                out.iter().any(|v| v.is_nan()),
                "{ty}: offset {} is not a scale",
                offsets[0]
            );
        }
    }

    #[test]
    fn floats() {
        let mut row: Vec<u8> = [1.0f32, -2.0, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(validate_row_data(GgmlType::F32, &row), Ok(()));
        row.extend_from_slice(&f32::NAN.to_le_bytes());
        let e = validate_row_data(GgmlType::F32, &row).unwrap_err();
        assert_eq!((e.block, e.what), (3, "NaN"));
        let inf = f32::NEG_INFINITY.to_le_bytes();
        assert_eq!(
            validate_row_data(GgmlType::F32, &inf).unwrap_err().what,
            "infinity"
        );
        assert_eq!(
            validate_row_data(GgmlType::BF16, &[0x80, 0x7f])
                .unwrap_err()
                .what,
            "infinity"
        );
        assert_eq!(
            validate_row_data(GgmlType::BF16, &[0xc1, 0xff])
                .unwrap_err()
                .what,
            "NaN"
        );
        assert_eq!(
            validate_row_data(GgmlType::F16, &[0x00, 0xfc])
                .unwrap_err()
                .what,
            "infinity"
        );
        assert!(validate_row_data(GgmlType::F16, &[0xff, 0x7b]).is_ok());
        assert!(validate_row_data(GgmlType::F32, &[0; 3]).is_err());
    }

    #[test]
    fn iq1_m_scale_and_mxfp4_exponent() {
        let mut b = vec![0u8; 56];
        assert!(validate_row_data(GgmlType::IQ1_M, &b).is_ok());
        // 0x7c00 spread: the top nibbles of words 0..3 hold its nibbles 0, 0, 0xc, 0x7.
        b[53] = 0xc0;
        b[55] = 0x70;
        assert_eq!(
            validate_row_data(GgmlType::IQ1_M, &b).unwrap_err().what,
            "infinity"
        );
        let mut m = vec![0u8; 17];
        assert!(validate_row_data(GgmlType::MXFP4, &m).is_ok());
        m[0] = 0xff;
        assert!(validate_row_data(GgmlType::MXFP4, &m).is_err());
    }
}
