//! The ternary types TQ1_0 and TQ2_0: values in {-1, 0, 1} times a scale a block of 256,
//! five trits a byte (TQ1_0) or two bits each (TQ2_0).

use super::*;

/// Trit `n` (0 = most significant) of each of `N` bytes of 5 (or 4) trits stored as a
/// fraction of 256, times `d`, into `y`: the same arithmetic in 16-bit
/// lanes (the byte product's low 8 bits, then `* 3 >> 8`), which LLVM vectorises where the
/// byte form (SSE2 has no byte multiply) it does not.
#[inline(always)]
pub(super) fn trits_times<const N: usize>(q: &[u8; N], n: usize, d: f32, y: &mut [f32]) {
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
pub(super) fn ternary(v: f32, id: f32) -> u8 {
    use crate::c::lround;
    (lround(v * id) as i32).wrapping_add(1) as u8
}

/// [`ternary`] of each of a block's 256 elements, rounded four at a time. The same bytes: in
/// `int`'s range the rounding is `lround`'s; outside it (a NaN elsewhere in the block can leave
/// the scale below an element, so quotients past 2^31 happen) `lround` gives a multiple of 256
/// (floats that large are) or `LONG_MIN`, whose low byte plus one is 1, as `INT_MIN`'s is.
#[inline(always)]
pub(super) fn ternaries(x: &[f32], id: f32) -> [u8; 256] {
    round_to_i32_each(&mapped::<256>(x, |v| v * id)).map(|r| r.wrapping_add(1) as u8)
}

/// Trits, most significant first, as the fraction of 256 the byte stores (ceiling division).
pub(super) fn pack_trits(trits: impl Iterator<Item = u8>) -> u8 {
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
