//! The FP4 types: MXFP4 (an E8M0 scale a block of 32) and NVFP4 (a UE4M3 scale a
//! sub-block of 16), both over E2M1 values.

use super::*;

/// The E2M1 values, doubled (ggml's `kvalues_mxfp4`).
pub(super) const FP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// `GGML_E8M0_TO_FP32_HALF`: 2^(e − 128).
pub(super) fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// UE4M3 (4-bit exponent, 3-bit mantissa, no sign) to f32, halved (`ggml_ue4m3_to_fp32`).
pub(super) fn ue4m3(x: u8) -> f32 {
    UE4M3_HALF[usize::from(x)]
}

/// 2^k as f32, for the normal exponents `k` UE4M3 needs (exactly: a power of two's bits).
pub(super) const fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// [`ue4m3`] computed (every product exact: a small fraction times a power of two).
pub(super) const fn ue4m3_computed(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let exp = ((x >> 3) & 0xf) as i32;
    let man = (x & 7) as f32;
    let raw = if exp == 0 {
        man * pow2(-9)
    } else {
        (1.0 + man / 8.0) * pow2(exp - 7)
    };
    raw * 0.5
}

/// Every byte's [`ue4m3`], so that a scale costs a load, not two `powi` calls.
pub(super) const UE4M3_HALF: [f32; 256] = {
    let mut table = [0f32; 256];
    let mut x = 0;
    while x < 256 {
        table[x] = ue4m3_computed(x as u8);
        x += 1;
    }
    table
};

/// f32 to UE4M3 (`ggml_fp32_to_ue4m3`).
pub(super) fn to_ue4m3(x: f32) -> u8 {
    // Not above zero, NaN included.
    if x.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return 0;
    }
    let x = if x > 448.0 { 448.0 } else { x };
    let bits = x.to_bits();
    let fp32_exp = ((bits >> 23) & 0xff) as i32 - 127;
    let fp32_man = ((bits >> 20) & 7) as i32;
    let mut exp = fp32_exp + 7;
    if exp <= 0 {
        let man = to_i32(x * 512.0 + 0.5).min(7);
        return if man < 1 { 0 } else { man as u8 };
    }
    if exp >= 15 {
        return 0x7e;
    }
    let mut man = fp32_man + ((bits >> 19) & 1) as i32;
    if man > 7 {
        man = 0;
        exp += 1;
        if exp >= 15 {
            return 0x7e;
        }
    }
    ((exp << 3) | man) as u8
}

/// The FP4 value nearest `x` at scale `e` (the first of equals), as ggml's `best_index_mxfp4`
/// finds it by a running minimum, here without its chain of 15 dependent compares: the 16
/// errors at once, their minimum (a tree of lanes), the first that has it. The same answer,
/// because an error is NaN only when `x` is (`e` is finite, so `k * e - x` is a number or an
/// infinity), and then ggml keeps index 0; otherwise the running minimum under `<` ends on the
/// first index of the least error.
#[inline(always)]
pub(super) fn best_fp4(x: f32, e: f32) -> u8 {
    if x.is_nan() {
        return 0;
    }
    let err: [f32; 16] = std::array::from_fn(|i| (f32::from(FP4_VALUES[i]) * e - x).abs());
    let mut lanes = [f32::INFINITY; 4];
    for c in 0..4 {
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = lane.min(err[4 * c + l]);
        }
    }
    let least = lanes[0].min(lanes[1]).min(lanes[2].min(lanes[3]));
    let hits = (0..16).fold(0u32, |m, i| m | (u32::from(err[i] == least) << i));
    // `least` is one of the errors, so a bit is set (but an all-infinite row: index 0 too).
    (hits.trailing_zeros() % 16) as u8
}

impl Dequantize for Mxfp4 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = e8m0_half(self.e);
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Nibbles::from_bytes([q]);
            y[j] = f32::from(FP4_VALUES[usize::from(q.lo())]) * d;
            y[j + 16] = f32::from(FP4_VALUES[usize::from(q.hi())]) * d;
        }
    }
}

impl Quantize for Mxfp4 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let (amax, _) = signed_max(x);
            y.e = if amax > 0.0 {
                to_u8(amax.log2().floor() - 2.0 + 127.0)
            } else {
                0
            };
            let d = e8m0_half(y.e);
            for j in 0..16 {
                y.qs[j] = best_fp4(x[j], d) | (best_fp4(x[j + 16], d) << 4);
            }
        }
    }
}

impl Dequantize for Nvfp4 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        for s in 0..4 {
            let d = ue4m3(self.d[s]);
            for j in 0..8 {
                let q = Nibbles::from_bytes([self.qs[8 * s + j]]);
                y[16 * s + j] = f32::from(FP4_VALUES[usize::from(q.lo())]) * d;
                y[16 * s + j + 8] = f32::from(FP4_VALUES[usize::from(q.hi())]) * d;
            }
        }
    }
}

impl Quantize for Nvfp4 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(64).zip(out) {
            for (s, xb) in x.chunks_exact(16).enumerate() {
                let (amax, _) = signed_max(xb);
                y.d[s] = to_ue4m3(amax / 6.0);
                let d = ue4m3(y.d[s]);
                for j in 0..8 {
                    y.qs[8 * s + j] = best_fp4(xb[j], d) | (best_fp4(xb[j + 8], d) << 4);
                }
            }
        }
    }
}
