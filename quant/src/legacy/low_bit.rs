//! Q1_0 and Q2_0: one and two bits an element, one scale a block of 128 (Q1_0) or 32.

use super::*;

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
pub(super) fn sums_abs_8(x: &[f32; 1024]) -> [f32; 8] {
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
pub(super) fn q1_0_block(x: &[f32], sum_abs: f32, y: &mut Q1_0) {
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
