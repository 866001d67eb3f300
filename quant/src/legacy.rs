//! The block types of 32 to 128 elements with one scale (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
//! Q1_0, Q2_0), the FP4 types (MXFP4, NVFP4) and the ternary types (TQ1_0, TQ2_0): each as
//! ggml's `dequantize_row_*` and `quantize_row_*_ref` compute it (`ggml_quantize_chunk` takes
//! the reference quantizer for all of them when it has no importance matrix).

use super::c::{fp16_to_fp32, fp32_to_fp16, round_to_i32_each, to_i32, to_i32_each, to_u8};
use super::k::search::{imatrix_weights, make_qkx2_quants, make_qx_quants_weighted, Qkx2};
use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::bits::{Crumbs, Nibbles};
use ggufrw_schema::blocks::scalar::{Half, U32};
use ggufrw_schema::blocks::{
    Mxfp4, Nvfp4, Tq1_0, Tq2_0, Q1_0, Q2_0, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1,
};

/// The E2M1 values, doubled (ggml's `kvalues_mxfp4`).
const FP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

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

impl Dequantize for Q1_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (j, y) in y.iter_mut().enumerate() {
            *y = if (self.qs[j / 8] >> (j % 8)) & 1 != 0 {
                d
            } else {
                -d
            };
        }
    }
}

/// Σ |x| of each of 8 blocks of 128, each added in element order from 0 as ggml adds it: the
/// eight chains side by side in lanes (one alone is 128 dependent additions).
#[inline(always)]
fn sums_abs_8(x: &[f32; 1024]) -> [f32; 8] {
    let mut sums = [0f32; 8];
    for j in 0..128 {
        for (k, sum) in sums.iter_mut().enumerate() {
            *sum += x[128 * k + j].abs();
        }
    }
    sums
}

/// A Q1_0 block from its values and their Σ |x|.
#[inline(always)]
fn q1_0_block(x: &[f32], sum_abs: f32, y: &mut Q1_0) {
    y.d = to_half(sum_abs / 128.0);
    // Bit j of the row set where x[j] >= 0 (not for NaN), a byte at a time without a branch.
    for (q, x8) in y.qs.iter_mut().zip(x.chunks_exact(8)) {
        let mut byte = 0u8;
        for (i, &v) in x8.iter().enumerate() {
            byte |= u8::from(v >= 0.0) << i;
        }
        *q = byte;
    }
}

impl Quantize for Q1_0 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        let eights = x.chunks_exact(1024).zip(out.chunks_exact_mut(8));
        let done = eights.len();
        for (x, ys) in eights {
            let sums = sums_abs_8(x.try_into().unwrap_or_else(|_| unreachable!()));
            for ((x, y), &sum) in x.chunks_exact(128).zip(ys).zip(&sums) {
                q1_0_block(x, sum, y);
            }
        }
        for (x, y) in x[1024 * done..].chunks_exact(128).zip(&mut out[8 * done..]) {
            q1_0_block(x, x.iter().fold(0f32, |s, v| s + v.abs()), y);
        }
    }
}

impl Dequantize for Q2_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Crumbs::from_bytes([q]);
            for (k, q) in [q.q0(), q.q1(), q.q2(), q.q3()].into_iter().enumerate() {
                y[4 * j + k] = (i32::from(q) - 1) as f32 * d;
            }
        }
    }
}

impl Quantize for Q2_0 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(64).zip(out) {
            let d = largest_abs(x);
            let id = if d > 0.0 { 1.0 / d } else { 0.0 };
            y.d = to_half(d);
            y.qs = [0; 16];
            let q = round_to_i32_each(&mapped::<64>(x, |v| v * id));
            for (j, q) in q.into_iter().enumerate() {
                let q = q.wrapping_add(1).clamp(0, 3);
                y.qs[j / 4] |= (q as u8) << ((j % 4) * 2);
            }
        }
    }
}

/// `GGML_E8M0_TO_FP32_HALF`: 2^(e − 128).
fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// UE4M3 (4-bit exponent, 3-bit mantissa, no sign) to f32, halved (`ggml_ue4m3_to_fp32`).
fn ue4m3(x: u8) -> f32 {
    UE4M3_HALF[usize::from(x)]
}

/// 2^k as f32, for the normal exponents `k` UE4M3 needs (exactly: a power of two's bits).
const fn pow2(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// [`ue4m3`] computed (every product exact: a small fraction times a power of two).
const fn ue4m3_computed(x: u8) -> f32 {
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
const UE4M3_HALF: [f32; 256] = {
    let mut table = [0f32; 256];
    let mut x = 0;
    while x < 256 {
        table[x] = ue4m3_computed(x as u8);
        x += 1;
    }
    table
};

/// f32 to UE4M3 (`ggml_fp32_to_ue4m3`).
fn to_ue4m3(x: f32) -> u8 {
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
fn best_fp4(x: f32, e: f32) -> u8 {
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

/// Trit `n` (0 = most significant) of each of `N` bytes of 5 (or 4) trits stored as a
/// fraction of 256, times `d`, into `y`: the same arithmetic in 16-bit
/// lanes (the byte product's low 8 bits, then `* 3 >> 8`), which LLVM vectorises where the
/// byte form (SSE2 has no byte multiply) it does not.
#[inline(always)]
fn trits_times<const N: usize>(q: &[u8; N], n: usize, d: f32, y: &mut [f32]) {
    const POW3: [u16; 6] = [1, 3, 9, 27, 81, 243];
    for (y, &q) in y.iter_mut().zip(q) {
        let q = (u16::from(q) * POW3[n]) & 0xff;
        let xi = ((q * 3) >> 8) as i16;
        *y = f32::from(xi - 1) * d;
    }
}

impl Dequantize for Tq1_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        let (low, high) = self.qs.split_at(32);
        let low: &[u8; 32] = low.try_into().unwrap_or(&[0; 32]);
        let high: &[u8; 16] = high.try_into().unwrap_or(&[0; 16]);
        for n in 0..5 {
            trits_times(low, n, d, &mut y[32 * n..32 * n + 32]);
        }
        for n in 0..5 {
            trits_times(high, n, d, &mut y[160 + 16 * n..160 + 16 * n + 16]);
        }
        for n in 0..4 {
            trits_times(&self.qh, n, d, &mut y[240 + 4 * n..240 + 4 * n + 4]);
        }
    }
}

/// -1, 0, 1 → 0, 1, 2, element by element as ggml writes it (the quantizers use
/// [`ternaries`]; their tests hold it to this).
#[cfg(test)]
fn ternary(v: f32, id: f32) -> u8 {
    use super::c::lround;
    (lround(v * id) as i32).wrapping_add(1) as u8
}

/// [`ternary`] of each of a block's 256 elements, rounded four at a time. The same bytes: in
/// `int`'s range the rounding is `lround`'s; outside it (a NaN elsewhere in the block can leave
/// the scale below an element, so quotients past 2^31 happen) `lround` gives a multiple of 256
/// (floats that large are) or `LONG_MIN`, whose low byte plus one is 1, as `INT_MIN`'s is.
#[inline(always)]
fn ternaries(x: &[f32], id: f32) -> [u8; 256] {
    round_to_i32_each(&mapped::<256>(x, |v| v * id)).map(|r| r.wrapping_add(1) as u8)
}

/// Trits, most significant first, as the fraction of 256 the byte stores (ceiling division).
fn pack_trits(trits: impl Iterator<Item = u8>) -> u8 {
    let q = trits.fold(0u8, |q, t| q.wrapping_mul(3).wrapping_add(t));
    (u16::from(q) * 256).div_ceil(243) as u8
}

impl Quantize for Tq1_0 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(256).zip(out) {
            let d = abs_max(x);
            let id = inverse(d);
            y.d = to_half(d);
            let t = ternaries(x, id);
            for m in 0..32 {
                y.qs[m] = pack_trits((0..5).map(|n| t[m + 32 * n]));
            }
            let t = &t[160..];
            for m in 0..16 {
                y.qs[32 + m] = pack_trits((0..5).map(|n| t[m + 16 * n]));
            }
            let t = &t[80..];
            for j in 0..4 {
                // Four trits, shifted to the most significant place of five.
                let trits = (0..4).map(|m| t[j + 4 * m]).chain([0]);
                y.qh[j] = pack_trits(trits);
            }
        }
    }
}

impl Dequantize for Tq2_0 {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for c in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    let q = (self.qs[32 * c + m] >> (2 * l)) & 3;
                    y[128 * c + 32 * l + m] = (i32::from(q) - 1) as f32 * d;
                }
            }
        }
    }
}

impl Quantize for Tq2_0 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in x.chunks_exact(256).zip(out) {
            let d = abs_max(x);
            let id = inverse(d);
            y.d = to_half(d);
            let t = ternaries(x, id);
            for c in 0..2 {
                for m in 0..32 {
                    let mut q = 0u8;
                    for n in 0..4 {
                        let xi = t[128 * c + m + 32 * n];
                        q = q.wrapping_add((xi & 3) << (2 * n));
                    }
                    y.qs[32 * c + m] = q;
                }
            }
        }
    }
}

/// The quantizers as they were written element by element (each conversion through the scalar
/// `to_i32`), kept to hold the four-at-a-time ones to them on arbitrary rows.
#[cfg(test)]
mod tests {
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
