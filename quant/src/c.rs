//! The few C conversions ggml's reference code relies on, as x86-64 compiles them, so that
//! results are bit-identical with ggml's even for NaN, infinities and values out of range.

/// `(int)f`: truncation, and `INT_MIN` ("integer indefinite") for NaN and out-of-range values,
/// as `cvttss2si` gives.
#[inline]
pub fn to_i32(f: f32) -> i32 {
    if !(-2_147_483_648.0..2_147_483_648.0).contains(&f) {
        i32::MIN
    } else {
        f as i32
    }
}

/// [`to_i32`] of four floats at once: `cvttps2dq`, whose lanes give exactly what `cvttss2si`
/// gives (truncation, `INT_MIN` for NaN and out of range), where a loop of [`to_i32`] is
/// scalarised by LLVM (Rust's saturating `as` has no vector form on SSE2).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unused_unsafe)]
pub fn to_i32x4(f: [f32; 4]) -> [i32; 4] {
    use std::arch::x86_64::{__m128, _mm_cvttps_epi32};
    let v: __m128 = bytemuck::cast(f);
    // SAFETY: SSE2 is part of x86-64; the intrinsic only computes on a register.
    bytemuck::cast(unsafe { _mm_cvttps_epi32(v) })
}

/// [`to_i32`] of four floats.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn to_i32x4(f: [f32; 4]) -> [i32; 4] {
    f.map(to_i32)
}

/// [`to_i32`] of every float of `f`, four at a time.
#[inline(always)]
pub fn to_i32_each<const N: usize>(f: &[f32; N]) -> [i32; N] {
    let mut out = [0i32; N];
    for (o, f) in out.chunks_exact_mut(4).zip(f.chunks_exact(4)) {
        let f: [f32; 4] = [f[0], f[1], f[2], f[3]];
        o.copy_from_slice(&to_i32x4(f));
    }
    for (o, &f) in (out.iter_mut().zip(f)).skip(N / 4 * 4) {
        *o = to_i32(f);
    }
    out
}

/// `(int)roundf(f)` of every float of `f` (round half away from zero, then [`to_i32`]'s
/// conversion), four at a time: `roundf` is a library call on x86-64's baseline (no SSE4.1),
/// so the rounding is made from the truncation: `t = (int)f`, and one more step away from zero
/// when `f - t` is at least a half. Exact: for |f| < 2^31 the truncation is representable and
/// `f - t` is computed without rounding; out of range, NaN (and -2^31 itself) give `INT_MIN`
/// both ways.
#[inline(always)]
pub fn round_to_i32_each<const N: usize>(f: &[f32; N]) -> [i32; N] {
    let t = to_i32_each(f);
    let mut out = [0i32; N];
    for ((o, &t), &f) in out.iter_mut().zip(&t).zip(f) {
        let frac = f - t as f32;
        let step = i32::from(frac >= 0.5) - i32::from(frac <= -0.5);
        *o = if t == i32::MIN { t } else { t + step };
    }
    out
}

/// `lroundf(f)`: round half away from zero to a `long`, and `LONG_MIN` for NaN and
/// out-of-range values (the ternary types' element-by-element form, which their tests keep).
#[cfg(test)]
#[inline]
pub fn lround(f: f32) -> i64 {
    let r = f.round();
    if !(-9.223_372e18..9.223_372e18).contains(&r) {
        i64::MIN
    } else {
        r as i64
    }
}

/// `(int8_t)f`: the `int` conversion, then its low 8 bits (the quantizers convert four at a
/// time now; this is the element-by-element form their tests hold them to).
#[cfg(test)]
#[inline]
pub fn to_i8(f: f32) -> i8 {
    to_i32(f) as i8
}

/// `(uint8_t)f`: the `int` conversion, then its low 8 bits.
#[inline]
pub fn to_u8(f: f32) -> u8 {
    to_i32(f) as u8
}

/// ggml's `nearest_int`: round to nearest, ties to even, by adding 1.5 × 2^23 and reading the
/// low mantissa bits (only meaningful for |f| ≤ 4194303, which callers ensure).
#[inline]
pub fn nearest_int(f: f32) -> i32 {
    let bits = (f + 12_582_912.0).to_bits() as i32;
    (bits & 0x007f_ffff) - 0x0040_0000
}

/// IEEE binary16 bits to f32, as ggml's scalar `ggml_compute_fp16_to_fp32` computes it
/// (through a float multiply: a signalling NaN comes out quiet).
#[inline]
pub fn fp16_to_fp32(h: u16) -> f32 {
    let w = u32::from(h) << 16;
    let sign = w & 0x8000_0000;
    let two_w = w.wrapping_add(w);
    let exp_offset = 0xE0u32 << 23;
    let exp_scale = f32::from_bits(0x0780_0000);
    let normalized = f32::from_bits((two_w >> 4).wrapping_add(exp_offset)) * exp_scale;
    let magic_mask = 126u32 << 23;
    let magic_bias = 0.5f32;
    let denormalized = f32::from_bits((two_w >> 17) | magic_mask) - magic_bias;
    let denormalized_cutoff = 1u32 << 27;
    let result = sign
        | if two_w < denormalized_cutoff {
            denormalized.to_bits()
        } else {
            normalized.to_bits()
        };
    f32::from_bits(result)
}

/// f32 to IEEE binary16 bits, as ggml's scalar `ggml_compute_fp32_to_fp16` computes it.
#[inline]
pub fn fp32_to_fp16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000);
    let scale_to_zero = f32::from_bits(0x0880_0000);
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let mut bias = shl1_w & 0xFF00_0000;
    if bias < 0x7100_0000 {
        bias = 0x7100_0000;
    }
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    ((sign >> 16)
        | if shl1_w > 0xFF00_0000 {
            0x7E00
        } else {
            nonsign
        }) as u16
}

/// bfloat16 bits to f32 (exact).
#[inline]
pub fn bf16_to_fp32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// f32 to bfloat16 bits, as ggml's `ggml_compute_fp32_to_bf16`: NaN made quiet, others rounded
/// to nearest even.
#[inline]
pub fn fp32_to_bf16(f: f32) -> u16 {
    let u = f.to_bits();
    if (u & 0x7fff_ffff) > 0x7f80_0000 {
        ((u >> 16) | 64) as u16
    } else {
        (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_behave_as_c_on_x86() {
        assert_eq!(to_i32(f32::NAN), i32::MIN);
        assert_eq!(to_i32(f32::INFINITY), i32::MIN);
        assert_eq!(to_i8(200.7), -56);
        assert_eq!(to_i32(-3.9), -3);
        assert_eq!(nearest_int(2.5), 2);
        assert_eq!(nearest_int(3.5), 4);
        assert_eq!(nearest_int(-2.5), -2);
    }

    /// The vector conversion is the scalar one, lane for lane, on every kind of float: NaNs of
    /// every payload, infinities, the range's edges, subnormals, any bits.
    #[test]
    fn four_at_a_time_is_the_scalar_conversion() {
        use proptest::prelude::*;
        let edges = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            2_147_483_648.0,
            2_147_483_520.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            -0.0,
            0.5,
            -0.9999999,
            f32::MIN_POSITIVE / 2.0,
            f32::MAX,
            f32::MIN,
        ];
        let float = prop_oneof![
            any::<u32>().prop_map(f32::from_bits),
            proptest::sample::select(edges.to_vec()),
            (-3e9f32..3e9),
        ];
        proptest!(|(f in proptest::array::uniform7(float))| {
            let all: [f32; 7] = f;
            let ours = to_i32_each(&all);
            for (o, x) in ours.iter().zip(all) {
                prop_assert_eq!(*o, to_i32(x), "{:?} ({:#x})", x, x.to_bits());
            }
        });
    }

    /// The rounding made from the truncation is `roundf`'s, converted, on every kind of float,
    /// halves of both signs included.
    #[test]
    fn rounding_from_the_truncation_is_roundf() {
        use proptest::prelude::*;
        let float = prop_oneof![
            any::<u32>().prop_map(f32::from_bits),
            (-3e9f32..3e9),
            (-20i32..20).prop_map(|k| k as f32 + 0.5),
            (-20i32..20).prop_map(|k| k as f32 + 0.49999997),
            proptest::sample::select(vec![
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                2_147_483_648.0,
                -2_147_483_648.0,
                2_147_483_520.0,
                8_388_607.5,
                -8_388_607.5,
                0.5,
                -0.5,
                -0.0,
            ]),
        ];
        proptest!(|(f in proptest::array::uniform6(float))| {
            let all: [f32; 6] = f;
            for (o, x) in round_to_i32_each(&all).iter().zip(all) {
                prop_assert_eq!(*o, to_i32(x.round()), "{:?} ({:#x})", x, x.to_bits());
            }
        });
    }

    #[test]
    fn halves_round_trip_and_quiet_signalling_nans() {
        for h in 0..=u16::MAX {
            let f = fp16_to_fp32(h);
            let is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
            if is_nan {
                assert!(f.is_nan());
                assert_ne!(f.to_bits() & 0x0040_0000, 0, "quiet: {h:#x}");
            } else {
                assert_eq!(fp32_to_fp16(f), h, "{h:#x}");
            }
        }
    }
}
