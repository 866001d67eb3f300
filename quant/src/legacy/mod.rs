//! The block types of 32 to 128 elements with one scale (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
//! Q1_0, Q2_0), the FP4 types (MXFP4, NVFP4) and the ternary types (TQ1_0, TQ2_0): each as
//! ggml's `dequantize_row_*` and `quantize_row_*_ref` compute it (`ggml_quantize_chunk` takes
//! the reference quantizer for all of them when it has no importance matrix).
//!
//! Here the helpers they share and the one-scale types Q4_0 to Q8_1; the others by family.

mod fp4;
mod low_bit;
mod ternary;

use super::c::{fp16_to_fp32, fp32_to_fp16, round_to_i32_each, to_i32, to_i32_each, to_u8};
use super::k::search::{imatrix_weights, make_qkx2_quants, make_qx_quants_weighted, Qkx2};
use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::bits::{Crumbs, Nibbles};
use ggufrw_schema::blocks::scalar::{Half, U32};
use ggufrw_schema::blocks::{
    Mxfp4, Nvfp4, Tq1_0, Tq2_0, Q1_0, Q2_0, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
};

fn half(h: Half) -> f32 {
    fp16_to_fp32(h.get())
}

fn to_half(f: f32) -> Half {
    Half::new(fp32_to_fp16(f))
}

/// The largest |x| of a block, and the value that has it (the first such).
fn signed_max(x: &[f32]) -> (f32, f32) {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    (amax, max)
}

/// `MAX(amax, fabsf(v))` over the block, as C's macro compares (a NaN never wins).
fn abs_max(x: &[f32]) -> f32 {
    x.iter()
        .fold(0f32, |amax, &v| if amax > v.abs() { amax } else { v.abs() })
}

/// The largest |x| of a block by `if (fabsf(v) > amax)` from 0 (a NaN never wins).
fn largest_abs(x: &[f32]) -> f32 {
    let mut amax = 0f32;
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
        }
    }
    amax
}

fn min_max(x: &[f32]) -> (f32, f32) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

fn inverse(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// `f` of each of the `N` elements of a block, into an array: the form the conversions four
/// at a time take, which is what lets these loops vectorise.
#[inline(always)]
fn mapped<const N: usize>(x: &[f32], f: impl Fn(f32) -> f32) -> [f32; N] {
    let mut v = [0f32; N];
    for (v, &x) in v.iter_mut().zip(x) {
        *v = f(x);
    }
    v
}

/// `(int)f(x[j])` for the 32 elements of a block.
#[inline(always)]
fn quants(x: &[f32], f: impl Fn(f32) -> f32) -> [i32; 32] {
    to_i32_each(&mapped(x, f))
}

/// The importance-matrix quantizers' `sigma2`: the row's mean square, `sum_x2/n_per_row`
/// (whole rows, not blocks: the four `quantize_row_q*_impl` sum over `n_per_row`).
fn row_sigma2(x: &[f32]) -> f32 {
    x.iter().fold(0f32, |s, &v| s + v * v) / x.len() as f32
}

/// Each block of a row with its 32 importance weights and its output block.
fn weighted_blocks<'a, B>(
    x: &'a [f32],
    qw: &'a [f32],
    out: &'a mut [B],
) -> impl Iterator<Item = (&'a [f32; 32], &'a [f32; 32], &'a mut B)> {
    let blocks = |v: &'a [f32]| v.chunks_exact(32).filter_map(|c| c.first_chunk::<32>());
    blocks(x)
        .zip(blocks(qw))
        .zip(out)
        .map(|((x, qw), y)| (x, qw, y))
}

/// Q4_0 and Q5_0 with an importance matrix (`quantize_row_q4_0_impl`, `…q5_0_impl`): each
/// block's quants in `0..2 nmax` and scale from `make_qx_quants(32, nmax, x, L, 1, weight)`.
fn symmetric_weighted<B>(
    x: &[f32],
    qw: &[f32],
    out: &mut [B],
    nmax: i32,
    mut store: impl FnMut(&mut B, f32, &[u8; 32]),
) {
    let sigma2 = row_sigma2(x);
    for (xb, qw, y) in weighted_blocks(x, qw, out) {
        let (w, _) = imatrix_weights(xb, qw, sigma2);
        let mut l = [0i8; 32];
        let d = make_qx_quants_weighted(nmax, xb, &w, &mut l);
        store(y, d, &l.map(|l| l as u8));
    }
}

/// Q4_1 and Q5_1 with an importance matrix (`quantize_row_q4_1_impl`, `…q5_1_impl`): each
/// block's quants in `0..=nmax`, scale and minimum from `make_qkx3_quants`.
fn asymmetric_weighted<B>(
    x: &[f32],
    qw: &[f32],
    out: &mut [B],
    nmax: i32,
    mut store: impl FnMut(&mut B, f32, f32, &[u8; 32]),
) {
    let sigma2 = row_sigma2(x);
    let search = Qkx2::qkx3(nmax);
    for (xb, qw, y) in weighted_blocks(x, qw, out) {
        let (w, _) = imatrix_weights(xb, qw, sigma2);
        let mut l = [0u8; 32];
        let (d, the_min) = make_qkx2_quants(&search, xb, &w, &mut l);
        // `m = -min` of the search's `*the_min = -min`: two sign flips, NaNs' included.
        store(y, d, -the_min, &l);
    }
}

/// 4-bit quants, the first 16 in the low nibbles.
fn pack_nibbles(qs: &mut [u8; 16], l: &[u8; 32]) {
    for j in 0..16 {
        qs[j] = l[j] | (l[j + 16] << 4);
    }
}

/// 5-bit quants: the low 4 bits as [`pack_nibbles`], the 5th of element `j` in bit `j` of
/// the word returned.
fn pack_fives(qs: &mut [u8; 16], l: &[u8; 32]) -> U32 {
    let mut qh = 0u32;
    for j in 0..16 {
        let (lo, hi) = (l[j], l[j + 16]);
        qs[j] = (lo & 0x0f) | ((hi & 0x0f) << 4);
        qh |= u32::from((lo & 0x10) >> 4) << j;
        qh |= u32::from((hi & 0x10) >> 4) << (j + 16);
    }
    U32::new(qh)
}

/// `MIN(limit, (int8_t)q)` stored in a `uint8_t`, of an `int` conversion already made.
#[inline(always)]
fn clamp_i32(q: i32, limit: i32) -> u8 {
    i32::from(q as i8).min(limit) as u8
}

impl Dequantize for Q4_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Nibbles::from_bytes([q]);
            y[j] = (i32::from(q.lo()) - 8) as f32 * d;
            y[j + 16] = (i32::from(q.hi()) - 8) as f32 * d;
        }
    }
}

impl Quantize for Q4_0 {
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        symmetric_weighted(x, qw, out, 8, |y, d, l| {
            y.d = to_half(d);
            pack_nibbles(&mut y.qs, l);
        });
    }
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let (_, max) = signed_max(x);
            let d = max / -8.0;
            let id = inverse(d);
            y.d = to_half(d);
            let q = quants(x, |v| v * id + 8.5);
            for j in 0..16 {
                y.qs[j] = clamp_i32(q[j], 15) | (clamp_i32(q[j + 16], 15) << 4);
            }
        }
    }
}

impl Dequantize for Q4_1 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let (d, m) = (half(self.d), half(self.m));
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Nibbles::from_bytes([q]);
            y[j] = f32::from(q.lo()) * d + m;
            y[j + 16] = f32::from(q.hi()) * d + m;
        }
    }
}

impl Quantize for Q4_1 {
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        asymmetric_weighted(x, qw, out, 15, |y, d, m, l| {
            y.d = to_half(d);
            y.m = to_half(m);
            pack_nibbles(&mut y.qs, l);
        });
    }
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let (min, max) = min_max(x);
            let d = (max - min) / 15.0;
            let id = inverse(d);
            y.d = to_half(d);
            y.m = to_half(min);
            let q = quants(x, |v| (v - min) * id + 0.5);
            for j in 0..16 {
                y.qs[j] = clamp_i32(q[j], 15) | (clamp_i32(q[j + 16], 15) << 4);
            }
        }
    }
}

/// Element `j`'s 5th bit from the word of high bits.
fn high_bit(qh: u32, j: usize) -> i32 {
    ((qh >> j) & 1) as i32
}

impl Dequantize for Q5_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        let qh = self.qh.get();
        // Both halves cut to 16 up front: the loop then has no bounds checks and vectorises.
        let (lo, hi) = y[..32].split_at_mut(16);
        for (j, (&q, (lo, hi))) in (self.qs.iter().zip(lo.iter_mut().zip(hi))).enumerate() {
            let q = Nibbles::from_bytes([q]);
            *lo = ((i32::from(q.lo()) | high_bit(qh, j) << 4) - 16) as f32 * d;
            *hi = ((i32::from(q.hi()) | high_bit(qh, j + 16) << 4) - 16) as f32 * d;
        }
    }
}

impl Quantize for Q5_0 {
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        symmetric_weighted(x, qw, out, 16, |y, d, l| {
            y.d = to_half(d);
            y.qh = pack_fives(&mut y.qs, l);
        });
    }
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let (_, max) = signed_max(x);
            let d = max / -16.0;
            let id = inverse(d);
            y.d = to_half(d);
            let mut qh = 0u32;
            let q = quants(x, |v| v * id + 16.5);
            for j in 0..16 {
                let (lo, hi) = (clamp_i32(q[j], 31), clamp_i32(q[j + 16], 31));
                y.qs[j] = (lo & 0x0f) | ((hi & 0x0f) << 4);
                qh |= u32::from((lo & 0x10) >> 4) << j;
                qh |= u32::from((hi & 0x10) >> 4) << (j + 16);
            }
            y.qh = U32::new(qh);
        }
    }
}

impl Dequantize for Q5_1 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let (d, m) = (half(self.d), half(self.m));
        let qh = self.qh.get();
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Nibbles::from_bytes([q]);
            y[j] = (i32::from(q.lo()) | high_bit(qh, j) << 4) as f32 * d + m;
            y[j + 16] = (i32::from(q.hi()) | high_bit(qh, j + 16) << 4) as f32 * d + m;
        }
    }
}

impl Quantize for Q5_1 {
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        asymmetric_weighted(x, qw, out, 31, |y, d, m, l| {
            y.d = to_half(d);
            y.m = to_half(m);
            y.qh = pack_fives(&mut y.qs, l);
        });
    }
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let (min, max) = min_max(x);
            let d = (max - min) / 31.0;
            let id = inverse(d);
            y.d = to_half(d);
            y.m = to_half(min);
            let mut qh = 0u32;
            let q = quants(x, |v| (v - min) * id + 0.5);
            for j in 0..16 {
                let (lo, hi) = (q[j] as u8, q[j + 16] as u8);
                y.qs[j] = (lo & 0x0f) | ((hi & 0x0f) << 4);
                qh |= u32::from((lo & 0x10) >> 4) << j;
                qh |= u32::from((hi & 0x10) >> 4) << (j + 16);
            }
            y.qh = U32::new(qh);
        }
    }
}

impl Dequantize for Q8_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        // The bytes widened 16 at a time (exact either way), as the K-quants do.
        for (y, q) in y.chunks_exact_mut(16).zip(self.qs.chunks_exact(16)) {
            let q: [i8; 16] = std::array::from_fn(|k| q[k]);
            for (y, q) in y.iter_mut().zip(crate::k::widen::signed(q)) {
                *y = q * d;
            }
        }
    }
}

impl Quantize for Q8_0 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let d = abs_max(x) / 127.0;
            let id = inverse(d);
            y.d = to_half(d);
            let q = round_to_i32_each(&mapped::<32>(x, |v| v * id));
            for (y, q) in y.qs.iter_mut().zip(q) {
                *y = q as i8;
            }
        }
    }
}

/// ggml has no dequantization of Q8_1 (it is only ever a dot-product operand): its values are
/// the quants times the scale, as for Q8_0 (the second half, `s`, is their sum times the scale).
impl Dequantize for Q8_1 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (y, &q) in y.iter_mut().zip(&self.qs) {
            *y = f32::from(q) * d;
        }
    }
}

impl Quantize for Q8_1 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(32).zip(out) {
            let d = abs_max(x) / 127.0;
            let id = inverse(d);
            y.d = to_half(d);
            let mut sum = 0i32;
            let q = round_to_i32_each(&mapped::<32>(x, |v| v * id));
            for j in 0..16 {
                y.qs[j] = q[j] as i8;
                y.qs[j + 16] = q[j + 16] as i8;
                sum += i32::from(y.qs[j]) + i32::from(y.qs[j + 16]);
            }
            y.s = to_half(sum as f32 * d);
        }
    }
}

/// The quantizers as they were written element by element (each conversion through the scalar
/// `to_i32`), kept to hold the four-at-a-time ones to them on arbitrary rows.
#[cfg(test)]
mod tests {
    use super::fp4::*;
    use super::ternary::*;
    use super::*;
    use crate::c::to_i8;
    use ggufrw_schema::blocks::Block;
    use proptest::prelude::*;

    /// `MIN(limit, (int8_t)f)` stored in a `uint8_t`.
    fn clamp_u8(f: f32, limit: i32) -> u8 {
        i32::from(to_i8(f)).min(limit) as u8
    }

    proptest! {
        /// Q1_0 rows of eight blocks and more (their sums run side by side, the signs a byte at
        /// a time) give each block what the element-by-element form gives it alone: the sum in
        /// order, a bit set for each value at or above zero (NaN never).
        #[test]
        fn q1_0_rows_are_their_blocks_by_hand(values in prop::collection::vec(
            prop_oneof![6 => -2.0f32..2.0, 1 => Just(0.0f32), 1 => Just(-0.0f32), 1 => prop::num::f32::ANY],
            128 * 8..128 * 20,
        )) {
            let n = values.len() / 128 * 128;
            let x = &values[..n];
            let mut row = vec![<Q1_0 as bytemuck::Zeroable>::zeroed(); n / 128];
            Q1_0::quantize_row(x, &mut row);
            for (b, y) in x.chunks_exact(128).zip(&row) {
                let sum = b.iter().fold(0f32, |s, v| s + v.abs());
                prop_assert_eq!(y.d.get(), to_half(sum / 128.0).get());
                for (j, &v) in b.iter().enumerate() {
                    prop_assert_eq!(y.qs[j / 8] >> (j % 8) & 1 == 1, v >= 0.0, "bit {}", j);
                }
            }
        }
    }

    fn q4_0(x: &[f32], y: &mut Q4_0) {
        let (_, max) = signed_max(x);
        let d = max / -8.0;
        let id = inverse(d);
        y.d = to_half(d);
        for j in 0..16 {
            let lo = clamp_u8(x[j] * id + 8.5, 15);
            let hi = clamp_u8(x[j + 16] * id + 8.5, 15);
            y.qs[j] = lo | (hi << 4);
        }
    }

    fn q4_1(x: &[f32], y: &mut Q4_1) {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = inverse(d);
        y.d = to_half(d);
        y.m = to_half(min);
        for j in 0..16 {
            let lo = clamp_u8((x[j] - min) * id + 0.5, 15);
            let hi = clamp_u8((x[j + 16] - min) * id + 0.5, 15);
            y.qs[j] = lo | (hi << 4);
        }
    }

    fn q5_0(x: &[f32], y: &mut Q5_0) {
        let (_, max) = signed_max(x);
        let d = max / -16.0;
        let id = inverse(d);
        y.d = to_half(d);
        let mut qh = 0u32;
        for j in 0..16 {
            let lo = clamp_u8(x[j] * id + 16.5, 31);
            let hi = clamp_u8(x[j + 16] * id + 16.5, 31);
            y.qs[j] = (lo & 0x0f) | ((hi & 0x0f) << 4);
            qh |= u32::from((lo & 0x10) >> 4) << j;
            qh |= u32::from((hi & 0x10) >> 4) << (j + 16);
        }
        y.qh = U32::new(qh);
    }

    fn q5_1(x: &[f32], y: &mut Q5_1) {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = inverse(d);
        y.d = to_half(d);
        y.m = to_half(min);
        let mut qh = 0u32;
        for j in 0..16 {
            let lo = to_u8((x[j] - min) * id + 0.5);
            let hi = to_u8((x[j + 16] - min) * id + 0.5);
            y.qs[j] = (lo & 0x0f) | ((hi & 0x0f) << 4);
            qh |= u32::from((lo & 0x10) >> 4) << j;
            qh |= u32::from((hi & 0x10) >> 4) << (j + 16);
        }
        y.qh = U32::new(qh);
    }

    fn q8_0(x: &[f32], y: &mut Q8_0) {
        let d = abs_max(x) / 127.0;
        let id = inverse(d);
        y.d = to_half(d);
        for (q, &v) in y.qs.iter_mut().zip(x) {
            *q = to_i8((v * id).round());
        }
    }

    fn q8_1(x: &[f32], y: &mut Q8_1) {
        let d = abs_max(x) / 127.0;
        let id = inverse(d);
        y.d = to_half(d);
        let mut sum = 0i32;
        for j in 0..16 {
            y.qs[j] = to_i8((x[j] * id).round());
            y.qs[j + 16] = to_i8((x[j + 16] * id).round());
            sum += i32::from(y.qs[j]) + i32::from(y.qs[j + 16]);
        }
        y.s = to_half(sum as f32 * d);
    }

    fn tq1_0(x: &[f32], y: &mut Tq1_0) {
        let d = abs_max(x);
        let id = inverse(d);
        y.d = to_half(d);
        for m in 0..32 {
            y.qs[m] = pack_trits((0..5).map(|n| ternary(x[m + 32 * n], id)));
        }
        let x = &x[160..];
        for m in 0..16 {
            y.qs[32 + m] = pack_trits((0..5).map(|n| ternary(x[m + 16 * n], id)));
        }
        let x = &x[80..];
        for j in 0..4 {
            let trits = (0..4).map(|m| ternary(x[j + 4 * m], id)).chain([0]);
            y.qh[j] = pack_trits(trits);
        }
    }

    fn tq2_0(x: &[f32], y: &mut Tq2_0) {
        let d = abs_max(x);
        let id = inverse(d);
        y.d = to_half(d);
        for c in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    let xi = ternary(x[128 * c + m + 32 * n], id);
                    q = q.wrapping_add((xi & 3) << (2 * n));
                }
                y.qs[32 * c + m] = q;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Whole TQ blocks: ordinary values, and blocks where a NaN leaves the scale below an
        /// element (ggml's `MAX` macro) so that quotients pass 2^31.
        #[test]
        fn ternary_quantizers_in_lanes_are_the_element_wise_ones(
            x in proptest::collection::vec(element(), 256),
            nan_at in proptest::option::of(0usize..256),
            huge_at in proptest::option::of(0usize..256),
        ) {
            let mut x = x;
            if let Some(i) = huge_at {
                x[i] = 3e15;
            }
            if let Some(i) = nan_at {
                x[i] = f32::NAN;
            }
            same::<Tq1_0>(&x, tq1_0)?;
            same::<Tq2_0>(&x, tq2_0)?;
        }
    }

    /// The case the rounding's range matters in, made on purpose: a NaN after a huge element
    /// leaves the scale at the last element's magnitude (ggml's `MAX` keeps the NaN, then drops
    /// it), so the huge one's quotient is 6e9 and `lround` and `INT_MIN` must agree on it.
    #[test]
    fn ternary_quantizers_agree_past_ints_range() {
        let mut x = vec![0.5f32; 256];
        (x[0], x[1], x[2]) = (3e9, -3e9, f32::NAN);
        assert_eq!(abs_max(&x), 0.5);
        let t = ternaries(&x, inverse(abs_max(&x)));
        assert_eq!(t[0], ternary(x[0], 2.0));
        assert_eq!(t[1], ternary(x[1], 2.0));
        same::<Tq1_0>(&x, tq1_0).unwrap();
        same::<Tq2_0>(&x, tq2_0).unwrap();
    }

    fn q2_0(x: &[f32], y: &mut Q2_0) {
        let d = largest_abs(x);
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        y.d = to_half(d);
        y.qs = [0; 16];
        for (j, &v) in x.iter().enumerate() {
            let q = to_i32((v * id).round()).wrapping_add(1).clamp(0, 3);
            y.qs[j / 4] |= (q as u8) << ((j % 4) * 2);
        }
    }

    /// Elements of every kind: ordinary weights, huge and tiny magnitudes, subnormals, zeros of
    /// both signs, infinities and NaNs, any bits.
    fn element() -> impl Strategy<Value = f32> {
        prop_oneof![
            4 => -2.0f32..2.0,
            1 => any::<u32>().prop_map(f32::from_bits),
            1 => proptest::sample::select(vec![
                0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, 1e30, -1e30,
                3e38, f32::MIN_POSITIVE / 4.0, 65504.0, 65520.0, 1e-8,
            ]),
        ]
    }

    fn same<B: Block + Quantize + bytemuck::Zeroable + PartialEq + std::fmt::Debug>(
        x: &[f32],
        reference: fn(&[f32], &mut B),
    ) -> Result<(), TestCaseError> {
        let mut fast = vec![B::zeroed(); x.len() / B::ELEMENTS];
        B::quantize_row(x, &mut fast);
        for (x, fast) in x.chunks_exact(B::ELEMENTS).zip(&fast) {
            let mut slow = B::zeroed();
            reference(x, &mut slow);
            prop_assert_eq!(fast, &slow, "{:?}", x);
        }
        Ok(())
    }

    /// UE4M3 as first written, with `powi`.
    fn ue4m3_powi(x: u8) -> f32 {
        if x == 0 || x == 0x7f {
            return 0.0;
        }
        let exp = i32::from((x >> 3) & 0xf);
        let man = f32::from(x & 7);
        let raw = if exp == 0 {
            man * 2f32.powi(-9)
        } else {
            (1.0 + man / 8.0) * 2f32.powi(exp - 7)
        };
        raw * 0.5
    }

    #[test]
    fn the_ue4m3_table_is_the_conversion() {
        for x in 0..=255u8 {
            assert_eq!(ue4m3(x).to_bits(), ue4m3_powi(x).to_bits(), "{x:#x}");
        }
    }

    /// `best_index_mxfp4` as ggml writes it: a running minimum.
    fn best_fp4_running(x: f32, e: f32) -> u8 {
        let mut best = 0;
        let mut best_err = (f32::from(FP4_VALUES[0]) * e - x).abs();
        for (i, &v) in FP4_VALUES.iter().enumerate().skip(1) {
            let err = (f32::from(v) * e - x).abs();
            if err < best_err {
                best = i as u8;
                best_err = err;
            }
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]
        #[test]
        fn the_nearest_fp4_value_is_the_running_minimums(
            x in element(),
            scale in prop_oneof![
                3 => (0u8..=255).prop_map(e8m0_half),
                1 => (0u8..=255).prop_map(ue4m3),
                1 => element().prop_filter("finite", |e| e.is_finite()),
            ],
            // Halfway points between two values, where the first of equals must win.
            tie in proptest::option::of(0usize..15),
        ) {
            let x = match tie {
                Some(i) => (f32::from(FP4_VALUES[i]) + f32::from(FP4_VALUES[i + 1])) * scale / 2.0,
                None => x,
            };
            prop_assert_eq!(best_fp4(x, scale), best_fp4_running(x, scale), "{} at {}", x, scale);
        }
    }

    /// Trit `n` of a byte, in byte arithmetic as ggml writes it.
    fn trit(q: u8, n: usize) -> f32 {
        const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];
        let q = q.wrapping_mul(POW3[n]);
        let xi = ((u16::from(q) * 3) >> 8) as i16;
        f32::from(xi - 1)
    }

    /// TQ1_0 as first written: each trit through [`trit`].
    fn tq1_0_elementwise(b: &Tq1_0) -> Vec<f32> {
        let d = half(b.d);
        let mut y = Vec::with_capacity(256);
        for n in 0..5 {
            y.extend((0..32).map(|m| trit(b.qs[m], n) * d));
        }
        for n in 0..5 {
            y.extend((0..16).map(|m| trit(b.qs[32 + m], n) * d));
        }
        for n in 0..4 {
            y.extend((0..4).map(|j| trit(b.qh[j], n) * d));
        }
        y
    }

    proptest! {
        #[test]
        fn q8_0_widened_is_q8_0_element_by_element(bytes in proptest::collection::vec(any::<u8>(), 34)) {
            let block: Q8_0 = *bytemuck::from_bytes(&bytes);
            let mut y = vec![0f32; 32];
            block.dequantize(&mut y);
            let d = half(block.d);
            let want: Vec<u32> = block.qs.iter().map(|&q| (f32::from(q) * d).to_bits()).collect();
            prop_assert_eq!(y.iter().map(|f| f.to_bits()).collect::<Vec<_>>(), want);
        }

        #[test]
        fn tq1_0_in_lanes_is_tq1_0_trit_by_trit(bytes in proptest::collection::vec(any::<u8>(), 54)) {
            let block: Tq1_0 = *bytemuck::from_bytes(&bytes);
            let mut y = vec![0f32; 256];
            block.dequantize(&mut y);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&y), bits(&tq1_0_elementwise(&block)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn four_at_a_time_quantizers_are_the_element_by_element_ones(
            x in proptest::collection::vec(element(), 64),
            // Scales per block: tiny ones make the inverse scale infinite, and so the
            // conversions out of range, where C's semantics matter.
            scales in proptest::collection::vec(
                proptest::sample::select(vec![1.0f32, 1e-30, 1e-38, 1e-41, 1e-45, 1e20, 1e38]),
                2,
            ),
        ) {
            let x: Vec<f32> = (x.chunks_exact(32).zip(&scales))
                .flat_map(|(block, &s)| block.iter().map(move |v| v * s))
                .collect();
            same::<Q4_0>(&x, q4_0)?;
            same::<Q4_1>(&x, q4_1)?;
            same::<Q5_0>(&x, q5_0)?;
            same::<Q5_1>(&x, q5_1)?;
            same::<Q2_0>(&x, q2_0)?;
            same::<Q8_0>(&x, q8_0)?;
            same::<Q8_1>(&x, q8_1)?;
        }
    }
}
