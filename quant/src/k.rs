//! The K-quants (Q2_K … Q6_K, Q8_K): super-blocks of 256 elements with 6-bit or 8-bit sub-block scales.
//! Each as ggml's `dequantize_row_*` and `quantize_row_*_ref` compute it: `ggml_quantize_chunk`
//! without an importance matrix calls `quantize_qX_K`, which then takes the reference quantizer
//! (`quantize_row_qX_K_ref`) for the whole chunk. Q8_K is not one of `ggml_quantize_chunk`'s
//! types; its quantizer here is `quantize_row_q8_K_ref`.
//!
//! Within a super-block the element order is ggml's: in Q2_K, Q3_K and Q6_K each half of 128
//! elements takes 32 bytes of 2-bit quants, bits `2j, 2j + 1` of byte `l` for element `32j + l`
//! (Q6_K's low 4 bits likewise in nibbles of 64 bytes); in Q4_K and Q5_K each 64 elements take
//! 32 bytes, low nibbles first.

pub(crate) mod search;
mod weighted;

use super::c::{fp16_to_fp32, fp32_to_fp16, nearest_int};
use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::bits::{Crumbs, Nibbles, ScaleByte};
use ggufrw_schema::blocks::scalar::{Half, I16, U32};
use ggufrw_schema::blocks::{Q2K, Q3K, Q4K, Q5K, Q6K, Q8K};
use search::{
    make_q3_quants_lanes, make_qkx2_quants_lanes, make_qx_quants_lanes,
    make_qx_quants_weighted_lanes, Qkx2, GROUP_MAX_EPS,
};

/// 16 small integers (the quants of one scale) converted to f32 at once: exact either way, so
/// the same bits as ggml's `int`-to-`float` conversions; the point is speed. For x86-64's
/// baseline SSE2, LLVM vectorises a byte-to-float loop 4 bytes at a time, two unpacks per 4
/// floats; GCC, compiling ggml's loops, widens 16 bytes with 6 unpacks in all, and so does this.
/// Only register operations (no memory access): the `unsafe` is needed by Rust before 1.87 only.
pub(crate) mod widen {
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::{
        __m128i, _mm_cmpgt_epi16, _mm_cmpgt_epi8, _mm_cvtepi32_ps, _mm_setzero_si128,
        _mm_unpackhi_epi16, _mm_unpackhi_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi8,
    };

    /// Bytes `0..=255` as floats.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(unused_unsafe)]
    pub(crate) fn unsigned(q: [u8; 16]) -> [f32; 16] {
        let v: __m128i = bytemuck::cast(q);
        // SAFETY: SSE2 is part of x86-64; these only compute on registers.
        unsafe {
            let zero = _mm_setzero_si128();
            let (lo, hi) = (_mm_unpacklo_epi8(v, zero), _mm_unpackhi_epi8(v, zero));
            bytemuck::cast([
                _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, zero)),
                _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, zero)),
                _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, zero)),
                _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, zero)),
            ])
        }
    }

    /// Signed bytes as floats (each widened with its sign: the unpacks take the sign masks).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(unused_unsafe)]
    pub(crate) fn signed(q: [i8; 16]) -> [f32; 16] {
        let v: __m128i = bytemuck::cast(q);
        // SAFETY: SSE2 is part of x86-64; these only compute on registers.
        unsafe {
            let zero = _mm_setzero_si128();
            let sign = _mm_cmpgt_epi8(zero, v);
            let (lo, hi) = (_mm_unpacklo_epi8(v, sign), _mm_unpackhi_epi8(v, sign));
            let (sign_lo, sign_hi) = (_mm_cmpgt_epi16(zero, lo), _mm_cmpgt_epi16(zero, hi));
            bytemuck::cast([
                _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, sign_lo)),
                _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, sign_lo)),
                _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, sign_hi)),
                _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, sign_hi)),
            ])
        }
    }

    /// Bytes `0..=255` as floats.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(crate) fn unsigned(q: [u8; 16]) -> [f32; 16] {
        q.map(f32::from)
    }

    /// Signed bytes as floats.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(crate) fn signed(q: [i8; 16]) -> [f32; 16] {
        q.map(f32::from)
    }
}

/// Elements of a super-block (`QK_K`).
const QK_K: usize = 256;

fn half(h: Half) -> f32 {
    fp16_to_fp32(h.get())
}

fn to_half(f: f32) -> Half {
    Half::new(fp32_to_fp16(f))
}

/// `x` as consecutive arrays of `N` (whole blocks: there is no remainder).
fn groups<const N: usize, T>(x: &[T]) -> impl Iterator<Item = &[T; N]> {
    x.chunks_exact(N).filter_map(|c| c.first_chunk())
}

/// `x` as consecutive mutable arrays of `N`.
fn groups_mut<const N: usize, T>(x: &mut [T]) -> impl Iterator<Item = &mut [T; N]> {
    x.chunks_exact_mut(N).filter_map(|c| c.first_chunk_mut())
}

/// Crumb `k` (bits `2k`, `2k + 1`) of a byte.
#[inline]
fn crumb(c: Crumbs, k: usize) -> u8 {
    match k {
        0 => c.q0(),
        1 => c.q1(),
        2 => c.q2(),
        _ => c.q3(),
    }
}

/// Packs four 2-bit quants of a half of 128 elements into the byte of element `l`
/// (`L[l] | L[l + 32] << 2 | L[l + 64] << 4 | L[l + 96] << 6`, as ggml writes it).
fn pack_crumbs(ls: &[i32; 4]) -> u8 {
    (ls[0] | ls[1] << 2 | ls[2] << 4 | ls[3] << 6) as u8
}

/// Q2_K and Q3_K: the 2-bit quants `qs` of `L` (256 values in `0..4`).
fn pack_qs(qs: &mut [u8; 64], ls: &[i32; QK_K]) {
    for (qs, ls) in groups_mut::<32, _>(qs).zip(groups::<128, _>(ls)) {
        for (l, q) in qs.iter_mut().enumerate() {
            *q = pack_crumbs(&[ls[l], ls[l + 32], ls[l + 64], ls[l + 96]]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q2_K

impl Dequantize for Q2K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let (d, min) = (half(self.d), half(self.dmin));
        let sc = self.scales.map(|sc| Nibbles::from_bytes([sc]));
        let dl = sc.map(|sc| d * f32::from(sc.lo()));
        let ml = sc.map(|sc| min * f32::from(sc.hi()));
        // Element 128h + 32j + l: crumb j of qs[32h + l], scale (128h + 32j + l) / 16.
        for h in 0..2 {
            for j in 0..4 {
                let (e, g) = (128 * h + 32 * j, 8 * h + 2 * j);
                for l in 0..32 {
                    let q = (self.qs[32 * h + l] >> (2 * j)) & 3;
                    y[e + l] = dl[g + l / 16] * f32::from(q) - ml[g + l / 16];
                }
            }
        }
    }
}

/// The largest scale and the largest minimum the sub-block searches found (0 when none is
/// above 0; a NaN never), in sub-block order as ggml's loops take them.
fn largest_scale_and_min<const L: usize>(found: &[(f32, f32); L]) -> (f32, f32) {
    let (mut max_scale, mut max_min) = (0f32, 0f32);
    for &(scale, min) in found {
        if scale > max_scale {
            max_scale = scale;
        }
        if min > max_min {
            max_min = min;
        }
    }
    (max_scale, max_min)
}

impl Quantize for Q2K {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        const Q4SCALE: f32 = 15.0;
        let search = Qkx2 {
            nmax: 3,
            rmin: -0.5,
            rdelta: 0.1,
            nstep: 15,
            use_mad: true,
        };
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            let mut ls = [0u8; QK_K];
            let xs: &[[f32; 16]; QK_K / 16] = bytemuck::cast_ref(x);
            let weights = xs.map(|g| g.map(f32::abs));
            // The sixteen sub-blocks searched side by side.
            let found = make_qkx2_quants_lanes(&search, xs, &weights, bytemuck::cast_mut(&mut ls));
            let (scales, mins) = (found.map(|f| f.0), found.map(|f| f.1));
            // Scales are never negative: the minimum is taken off.
            let (max_scale, max_min) = largest_scale_and_min(&found);
            if max_scale > 0.0 {
                let iscale = Q4SCALE / max_scale;
                for (q, &s) in y.scales.iter_mut().zip(&scales) {
                    *q = nearest_int(iscale * s) as u8;
                }
                y.d = to_half(max_scale / Q4SCALE);
            } else {
                y.scales = [0; 16];
                y.d = to_half(0.0);
            }
            if max_min > 0.0 {
                let iscale = Q4SCALE / max_min;
                for (q, &m) in y.scales.iter_mut().zip(&mins) {
                    *q |= (nearest_int(iscale * m) << 4) as u8;
                }
                y.dmin = to_half(max_min / Q4SCALE);
            } else {
                y.dmin = to_half(0.0);
            }
            q2k_requantize(x, &mut ls, y);
        }
    }

    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        for ((x, qw), y) in groups::<QK_K, _>(x).zip(groups::<QK_K, _>(qw)).zip(out) {
            weighted::q2k(x, qw, y);
        }
    }
}

/// The end of both Q2_K quantizers: the quants again from the scales and minimums as stored
/// (a sub-block whose scale is 0 keeps the search's), packed.
fn q2k_requantize(x: &[f32; QK_K], ls: &mut [u8; QK_K], y: &mut Q2K) {
    let (d_all, m_all) = (half(y.d), half(y.dmin));
    let mut qs = [0i32; QK_K];
    let subs = groups::<16, _>(x).zip(groups_mut::<16, _>(ls));
    for (((xs, ls), qs), &sc) in subs.zip(groups_mut::<16, _>(&mut qs)).zip(&y.scales) {
        let sc = Nibbles::from_bytes([sc]);
        let d = d_all * f32::from(sc.lo());
        // `if (!d) continue;`: a NaN scale requantizes.
        if d != 0.0 {
            let dm = m_all * f32::from(sc.hi());
            for (l, &v) in ls.iter_mut().zip(xs) {
                *l = nearest_int((v + dm) / d).clamp(0, 3) as u8;
            }
        }
        for (q, &l) in qs.iter_mut().zip(ls.iter()) {
            *q = i32::from(l);
        }
    }
    pack_qs(&mut y.qs, &qs);
}

// ---------------------------------------------------------------------------------------------
// Q3_K

/// Q3_K's 16 6-bit scales, 0..64 (ggml subtracts 32): the low 4 bits from the low (scales 0–7)
/// or high (8–15) nibble of bytes 0–7, the high 2 bits from crumb `i / 4` of byte `8 + i % 4`.
fn q3k_scales(scales: &[u8; 12]) -> [i32; 16] {
    std::array::from_fn(|i| {
        let low = Nibbles::from_bytes([scales[i % 8]]);
        let low = if i < 8 { low.lo() } else { low.hi() };
        let high = crumb(Crumbs::from_bytes([scales[8 + i % 4]]), i / 4);
        i32::from(low | high << 4)
    })
}

/// Puts scale `j` (0..16), `l` in `0..64`, into Q3_K's 12 bytes as ggml does, scales in order
/// from zeroed bytes (the inverse of [`q3k_scales`]): its low 4 bits set byte `j` (`j < 8`) or
/// are ORed into the high nibble of byte `j - 8`; its top 2 bits into crumb `j / 4` of byte
/// `8 + j % 4`.
fn pack_q3k_scale(scales: &mut [u8; 12], j: usize, l: i32) {
    if j < 8 {
        scales[j] = (l & 0xF) as u8;
    } else {
        scales[j - 8] |= ((l & 0xF) << 4) as u8;
    }
    scales[j % 4 + 8] |= ((l >> 4) << (2 * (j / 4))) as u8;
}

impl Dequantize for Q3K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let d_all = half(self.d);
        let scales = q3k_scales(&self.scales);
        // Element 128h + 32j + l: crumb j of qs[32h + l], less 4 unless bit 4h + j of hmask[l]
        // is set; its scale (128h + 32j + l) / 16.
        let mut q = [0i8; QK_K];
        for h in 0..2 {
            for j in 0..4 {
                for l in 0..32 {
                    let low = ((self.qs[32 * h + l] >> (2 * j)) & 3) as i8;
                    let high = ((self.hmask[l] >> (4 * h + j)) & 1) as i8;
                    q[128 * h + 32 * j + l] = low - 4 + 4 * high;
                }
            }
        }
        for (g, &sc) in scales.iter().enumerate() {
            let dl = d_all * (sc - 32) as f32;
            for l in 0..16 {
                y[16 * g + l] = dl * f32::from(q[16 * g + l]);
            }
        }
    }
}

impl Quantize for Q3K {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            let mut ls = [0i8; QK_K];
            // The sixteen sub-blocks searched side by side.
            let scales = make_q3_quants_lanes::<16, { QK_K / 16 }>(
                4,
                bytemuck::cast_ref(x),
                bytemuck::cast_mut(&mut ls),
            );
            let (mut max_scale, mut amax) = (0f32, 0f32);
            for scale in &scales {
                if scale.abs() > amax {
                    amax = scale.abs();
                    max_scale = *scale;
                }
            }
            y.scales = [0; 12];
            // `if (max_scale)`.
            if max_scale != 0.0 {
                let iscale = -32.0 / max_scale;
                for (j, &s) in scales.iter().enumerate() {
                    // `int8_t l = nearest_int(…)`: the int's low byte, then clamped.
                    let l = i32::from(nearest_int(iscale * s) as i8).clamp(-32, 31) + 32;
                    pack_q3k_scale(&mut y.scales, j, l);
                }
                y.d = to_half(1.0 / iscale);
            } else {
                y.d = to_half(0.0);
            }
            q3k_requantize(x, &mut ls, y);
        }
    }

    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        for ((x, qw), y) in groups::<QK_K, _>(x).zip(groups::<QK_K, _>(qw)).zip(out) {
            weighted::q3k(x, qw, y);
        }
    }
}

/// The end of both Q3_K quantizers: the quants again from the scales as stored (a sub-block
/// whose scale is 0 keeps the search's), their high bits into `hmask`, the rest packed.
fn q3k_requantize(x: &[f32; QK_K], ls: &mut [i8; QK_K], y: &mut Q3K) {
    let d_all = half(y.d);
    let stored = q3k_scales(&y.scales);
    let subs = groups::<16, _>(x).zip(groups_mut::<16, _>(ls));
    for ((xs, ls), &sc) in subs.zip(&stored) {
        let d = d_all * (sc - 32) as f32;
        if d == 0.0 {
            continue;
        }
        for (l, &v) in ls.iter_mut().zip(xs) {
            *l = (nearest_int(v / d).clamp(-4, 3) + 4) as i8;
        }
    }
    // The high bit of element j goes to bit j / 32 of hmask[j % 32].
    y.hmask = [0; 32];
    let mut qs = [0i32; QK_K];
    for (bit, (ls, qs)) in groups::<32, _>(ls)
        .zip(groups_mut::<32, _>(&mut qs))
        .enumerate()
    {
        for ((h, q), &l) in y.hmask.iter_mut().zip(qs).zip(ls) {
            // Branch-free: the high bit set where l > 3, and taken off.
            let high = u8::from(l > 3);
            *h |= high << bit;
            *q = i32::from(l) - 4 * i32::from(high);
        }
    }
    pack_qs(&mut y.qs, &qs);
}

// ---------------------------------------------------------------------------------------------
// Q4_K and Q5_K

/// ggml's `get_scale_min_k4`: scale and minimum `j` (0..8) of the 12 bytes. Bytes 0–3 hold
/// scales 0–3 (low 6 bits) and the top 2 bits of scales 4–7, bytes 4–7 the same for the
/// minimums, bytes 8–11 the low 4 bits of scale (low nibble) and minimum (high nibble) 4–7.
#[inline]
fn scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    let b = |k: usize| ScaleByte::from_bytes([q[k]]);
    if j < 4 {
        (b(j).low6(), b(j + 4).low6())
    } else {
        let low = Nibbles::from_bytes([q[j + 4]]);
        (
            low.lo() | b(j - 4).high2() << 4,
            low.hi() | b(j).high2() << 4,
        )
    }
}

/// The inverse of [`scale_min_k4`], as ggml packs the 6-bit scales `ls` and minimums `lm`.
fn pack_scale_min_k4(q: &mut [u8; 12], ls: &[u8; 8], lm: &[u8; 8]) {
    for j in 0..8 {
        let (s, m) = (ls[j], lm[j]);
        if j < 4 {
            q[j] = s;
            q[j + 4] = m;
        } else {
            q[j + 4] = (s & 0xF) | ((m & 0xF) << 4);
            q[j - 4] |= (s >> 4) << 6;
            q[j] |= (m >> 4) << 6;
        }
    }
}

/// The scale-and-minimum search shared by Q4_K and Q5_K (`nmax` 15 or 31): each 32 elements'
/// quants `ls` and their 6-bit scales and minimums stored in `scales`, `d`, `dmin`; then the
/// quants again from the stored scales.
fn quantize_k4(
    x: &[f32; QK_K],
    search: &Qkx2,
    ls: &mut [u8; QK_K],
    q: &mut [u8; 12],
    d: &mut Half,
    dmin: &mut Half,
) {
    let xs: &[[f32; 32]; QK_K / 32] = bytemuck::cast_ref(x);
    let weights: [[f32; 32]; QK_K / 32] = std::array::from_fn(|j| {
        let mut sum_x2 = 0f32;
        for &v in &xs[j] {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        xs[j].map(|v| av_x + v.abs())
    });
    // The eight sub-blocks searched side by side.
    let found = make_qkx2_quants_lanes(search, xs, &weights, bytemuck::cast_mut(ls));
    let (scales, mins) = (found.map(|f| f.0), found.map(|f| f.1));
    let (max_scale, max_min) = largest_scale_and_min(&found);
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    // `uint8_t ls = nearest_int(…)`: the int's low byte, then at most 63.
    let ls6 = scales.map(|s| (nearest_int(inv_scale * s) as u8).min(63));
    let lm6 = mins.map(|m| (nearest_int(inv_min * m) as u8).min(63));
    pack_scale_min_k4(q, &ls6, &lm6);
    *d = to_half(max_scale / 63.0);
    *dmin = to_half(max_min / 63.0);
    requantize_k4(x, search.nmax, ls, q, *d, *dmin);
}

/// The end of the Q4_K and Q5_K quantizers, with and without weights: each 32 elements'
/// quants in `0..=nmax` again from the scales and minimums as stored (a sub-block whose scale
/// is 0 keeps the search's).
fn requantize_k4(
    x: &[f32; QK_K],
    nmax: i32,
    ls: &mut [u8; QK_K],
    q: &[u8; 12],
    d: Half,
    dmin: Half,
) {
    let (d_all, m_all) = (half(d), half(dmin));
    let subs = groups::<32, _>(x).zip(groups_mut::<32, _>(ls));
    for (j, (xs, ls)) in subs.enumerate() {
        let (sc, m) = scale_min_k4(j, q);
        let d = d_all * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        let dm = m_all * f32::from(m);
        // `x + dm`: where both are NaN (an input NaN; dmin infinite and m 0) the sum is x's NaN
        // here, and in ggml whichever operand the C compiler put first (the peer's GCC build
        // puts dm first for the last 4 of each 32): its payload can decide the quant.
        for (l, &v) in ls.iter_mut().zip(xs) {
            *l = nearest_int((v + dm) / d).clamp(0, nmax) as u8;
        }
    }
}

impl Dequantize for Q4K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let (d, min) = (half(self.d), half(self.dmin));
        // 64 elements per 32 bytes: low nibbles with scale 2p, high nibbles with 2p + 1.
        for p in 0..4 {
            let (sc1, m1) = scale_min_k4(2 * p, &self.scales);
            let (sc2, m2) = scale_min_k4(2 * p + 1, &self.scales);
            let (d1, m1) = (d * f32::from(sc1), min * f32::from(m1));
            let (d2, m2) = (d * f32::from(sc2), min * f32::from(m2));
            for c in 0..2 {
                let o = 32 * p + 16 * c;
                let q = std::array::from_fn(|k| Nibbles::from_bytes([self.qs[o + k]]));
                let lo = widen::unsigned(q.map(|q| q.lo()));
                let hi = widen::unsigned(q.map(|q| q.hi()));
                let e = 64 * p + 16 * c;
                for k in 0..16 {
                    y[e + k] = d1 * lo[k] - m1;
                    y[e + 32 + k] = d2 * hi[k] - m2;
                }
            }
        }
    }
}

impl Quantize for Q4K {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        let search = Qkx2 {
            nmax: 15,
            rmin: -1.0,
            rdelta: 0.1,
            nstep: 20,
            use_mad: false,
        };
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            let mut ls = [0u8; QK_K];
            quantize_k4(x, &search, &mut ls, &mut y.scales, &mut y.d, &mut y.dmin);
            pack_q4k(&mut y.qs, &ls);
        }
    }

    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        for ((x, qw), y) in groups::<QK_K, _>(x).zip(groups::<QK_K, _>(qw)).zip(out) {
            let mut ls = [0u8; QK_K];
            weighted::k4(x, qw, 15, &mut ls, &mut y.scales, &mut y.d, &mut y.dmin);
            pack_q4k(&mut y.qs, &ls);
        }
    }
}

/// Q4_K's quants: each 64 elements in 32 bytes, the first 32 in the low nibbles.
fn pack_q4k(qs: &mut [u8; QK_K / 2], ls: &[u8; QK_K]) {
    for (qs, ls) in groups_mut::<32, _>(qs).zip(groups::<64, _>(ls)) {
        for (l, q) in qs.iter_mut().enumerate() {
            *q = ls[l] | (ls[l + 32] << 4);
        }
    }
}

impl Dequantize for Q5K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let (d, min) = (half(self.d), half(self.dmin));
        // As Q4_K, plus 16 if bit 2p of qh[l] is set (element 64p + l) or bit 2p + 1
        // (element 64p + 32 + l): crumb p of qh[l].
        let mut q = [0u8; QK_K];
        for p in 0..4 {
            for l in 0..32 {
                let low = Nibbles::from_bytes([self.qs[32 * p + l]]);
                let high = self.qh[l] >> (2 * p);
                q[64 * p + l] = low.lo() + 16 * (high & 1);
                q[64 * p + 32 + l] = low.hi() + 16 * ((high >> 1) & 1);
            }
        }
        for j in 0..8 {
            let (sc, m) = scale_min_k4(j, &self.scales);
            let (dl, ml) = (d * f32::from(sc), min * f32::from(m));
            for l in 0..32 {
                y[32 * j + l] = dl * f32::from(q[32 * j + l]) - ml;
            }
        }
    }
}

impl Quantize for Q5K {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        let search = Qkx2 {
            nmax: 31,
            rmin: -0.5,
            rdelta: 0.1,
            nstep: 15,
            use_mad: false,
        };
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            let mut ls = [0u8; QK_K];
            quantize_k4(x, &search, &mut ls, &mut y.scales, &mut y.d, &mut y.dmin);
            pack_q5k(y, &ls);
        }
    }

    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        for ((x, qw), y) in groups::<QK_K, _>(x).zip(groups::<QK_K, _>(qw)).zip(out) {
            let mut ls = [0u8; QK_K];
            weighted::k4(x, qw, 31, &mut ls, &mut y.scales, &mut y.d, &mut y.dmin);
            pack_q5k(y, &ls);
        }
    }
}

/// Q5_K's quants: the low 4 bits as Q4_K's, the 5th of element `64p + j` in bit `2p` of
/// `qh[j]` (of `64p + 32 + j` in bit `2p + 1`).
fn pack_q5k(y: &mut Q5K, ls: &[u8; QK_K]) {
    y.qh = [0; 32];
    let quarters = groups_mut::<32, _>(&mut y.qs).zip(groups::<64, _>(ls));
    for (p, (qs, ls)) in quarters.enumerate() {
        for (j, q) in qs.iter_mut().enumerate() {
            let (mut l1, mut l2) = (ls[j], ls[j + 32]);
            if l1 > 15 {
                l1 -= 16;
                y.qh[j] |= 1 << (2 * p);
            }
            if l2 > 15 {
                l2 -= 16;
                y.qh[j] |= 2 << (2 * p);
            }
            *q = l1 | (l2 << 4);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q6_K

impl Dequantize for Q6K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let d = half(self.d);
        // Half h: element 128h + 32k + l from the low (k even) or high (k odd) nibble of
        // ql[64h + 32 (k % 2) + l] and crumb k of qh[32h + l], less 32; its scale
        // (128h + 32k + l) / 16.
        let mut q = [0i8; QK_K];
        for h in 0..2 {
            for l in 0..32 {
                let a = Nibbles::from_bytes([self.ql[64 * h + l]]);
                let b = Nibbles::from_bytes([self.ql[64 * h + 32 + l]]);
                let c = Crumbs::from_bytes([self.qh[32 * h + l]]);
                let six = |low: u8, high: u8| (low | high << 4) as i8 - 32;
                q[128 * h + l] = six(a.lo(), c.q0());
                q[128 * h + 32 + l] = six(b.lo(), c.q1());
                q[128 * h + 64 + l] = six(a.hi(), c.q2());
                q[128 * h + 96 + l] = six(b.hi(), c.q3());
            }
        }
        for (g, &sc) in self.scales.iter().enumerate() {
            let ds = d * f32::from(sc);
            for l in 0..16 {
                y[16 * g + l] = ds * f32::from(q[16 * g + l]);
            }
        }
    }
}

impl Quantize for Q6K {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            quantize_q6k(x, y, |xs, ls| make_qx_quants_lanes(32, xs, ls));
        }
    }

    /// `quantize_row_q6_K_impl` with weights: the search of each 16 weighted by the imatrix
    /// itself (ggml's use of `sigma2` there is commented out), the rest as without.
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        for ((x, qw), y) in groups::<QK_K, _>(x).zip(groups::<QK_K, _>(qw)).zip(out) {
            quantize_q6k(x, y, |xs, ls| {
                make_qx_quants_weighted_lanes(32, xs, bytemuck::cast_ref(qw), ls)
            });
        }
    }
}

/// A Q6_K super-block whose 16 sub-block searches `search(x, L)` make, side by side (scale and
/// quants `L` in `0..64` each): the scales to 8 bits, the quants again from them, packed.
#[inline(always)]
fn quantize_q6k(
    x: &[f32; QK_K],
    y: &mut Q6K,
    search: impl Fn(&[[f32; 16]; QK_K / 16], &mut [[i8; 16]; QK_K / 16]) -> [f32; QK_K / 16],
) {
    let mut ls = [0i8; QK_K];
    let scales = search(bytemuck::cast_ref(x), bytemuck::cast_mut(&mut ls));
    let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
    for scale in &scales {
        if scale.abs() > max_abs_scale {
            max_abs_scale = scale.abs();
            max_scale = *scale;
        }
    }
    if max_abs_scale < GROUP_MAX_EPS {
        *y = bytemuck::Zeroable::zeroed();
        y.d = to_half(0.0);
        return;
    }
    let iscale = -128.0 / max_scale;
    y.d = to_half(1.0 / iscale);
    for (q, &s) in y.scales.iter_mut().zip(&scales) {
        *q = nearest_int(iscale * s).min(127) as i8;
    }
    // The quants again, from the scales as stored.
    let d_all = half(y.d);
    let subs = groups::<16, _>(x).zip(groups_mut::<16, _>(&mut ls));
    for ((xs, ls), &sc) in subs.zip(&y.scales) {
        let d = d_all * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        for (l, &v) in ls.iter_mut().zip(xs) {
            *l = (nearest_int(v / d).clamp(-32, 31) + 32) as i8;
        }
    }
    let halves = groups_mut::<64, _>(&mut y.ql).zip(groups_mut::<32, _>(&mut y.qh));
    for ((ql, qh), ls) in halves.zip(groups::<128, _>(&ls)) {
        for l in 0..32 {
            let q = [ls[l], ls[l + 32], ls[l + 64], ls[l + 96]].map(i32::from);
            ql[l] = ((q[0] & 0xF) | (q[2] & 0xF) << 4) as u8;
            ql[l + 32] = ((q[1] & 0xF) | (q[3] & 0xF) << 4) as u8;
            qh[l] = pack_crumbs(&q.map(|q| q >> 4));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Q8_K

impl Dequantize for Q8K {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let Some(y) = y.first_chunk_mut::<QK_K>() else {
            return;
        };
        let d = f32::from_bits(self.d.get());
        for (y, &q) in groups_mut::<16, _>(y).zip(groups::<16, _>(&self.qs)) {
            let q = widen::signed(q);
            for k in 0..16 {
                y[k] = d * q[k];
            }
        }
    }
}

impl Quantize for Q8K {
    /// `quantize_row_q8_K_ref`. For a block with no nonzero value (all zero, or NaN) ggml
    /// zeroes the scale and quants and leaves `bsums` as the buffer had them; here they are
    /// zeroed too (ggml's output on a zeroed buffer).
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (x, y) in groups::<QK_K, _>(x).zip(out) {
            let (mut max, mut amax) = (0f32, 0f32);
            for &v in x {
                if v.abs() > amax {
                    amax = v.abs();
                    max = v;
                }
            }
            if amax == 0.0 {
                y.d = U32::new(0);
                y.qs = [0; QK_K];
                y.bsums = [I16::new(0); 16];
                continue;
            }
            let iscale = -127.0 / max;
            for (q, &v) in y.qs.iter_mut().zip(x) {
                *q = nearest_int(iscale * v).min(127) as i8;
            }
            for (sum, qs) in y.bsums.iter_mut().zip(groups::<16, _>(&y.qs)) {
                *sum = I16::new(qs.iter().map(|&q| i32::from(q)).sum::<i32>() as i16);
            }
            y.d = U32::new((1.0 / iscale).to_bits());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytemuck::Zeroable;

    #[test]
    fn widening_16_at_a_time_keeps_every_value_in_its_lane() {
        for base in 0..=255u8 {
            let u: [u8; 16] = std::array::from_fn(|k| base.wrapping_add(17 * k as u8));
            assert_eq!(widen::unsigned(u), u.map(f32::from));
            let i = u.map(|b| b as i8);
            assert_eq!(widen::signed(i), i.map(f32::from));
        }
    }

    /// The 12 scale bytes of Q4_K and Q5_K decoded by hand: bytes 0–3 hold scales 0–3 and the
    /// top bits of scales 4–7, bytes 4–7 the minimums likewise, bytes 8–11 the low nibbles.
    const K4_SCALES: [u8; 12] = [
        0x41, 0x02, 0xC3, 0x04, 0x05, 0x46, 0x07, 0x88, 0x9A, 0xBC, 0xDE, 0xF0,
    ];
    const K4_DECODED: [(u8, u8); 8] = [
        (1, 5),
        (2, 6),
        (3, 7),
        (4, 8),
        (0xA | 1 << 4, 9),
        (0xC, 0xB | 1 << 4),
        (0xE | 3 << 4, 0xD),
        (0, 0xF | 2 << 4),
    ];

    #[test]
    fn q4k_scales_and_minimums_decode_as_by_hand_and_pack_back() {
        for (j, &expected) in K4_DECODED.iter().enumerate() {
            assert_eq!(scale_min_k4(j, &K4_SCALES), expected, "{j}");
        }
        for v in 0..64 {
            let ls: [u8; 8] = std::array::from_fn(|j| ((v + 7 * j) % 64) as u8);
            let lm: [u8; 8] = std::array::from_fn(|j| ((5 * v + j) % 64) as u8);
            let mut q = [0xA5; 12];
            pack_scale_min_k4(&mut q, &ls, &lm);
            for j in 0..8 {
                assert_eq!(scale_min_k4(j, &q), (ls[j], lm[j]));
            }
        }
    }

    #[test]
    fn q4k_block_dequantizes_as_by_hand() {
        let mut block = Q4K::zeroed();
        block.d = Half::new(0x3C00); // 1
        block.dmin = Half::new(0x3400); // 0.25
        block.scales = K4_SCALES;
        for (l, q) in block.qs.iter_mut().enumerate() {
            *q = (l % 16) as u8 | ((15 - l % 16) as u8) << 4;
        }
        let mut y = [0f32; 256];
        block.dequantize(&mut y);
        for p in 0..4 {
            for l in 0..32 {
                let ((s1, m1), (s2, m2)) = (K4_DECODED[2 * p], K4_DECODED[2 * p + 1]);
                let (lo, hi) = ((l % 16) as f32, (15 - l % 16) as f32);
                assert_eq!(y[64 * p + l], f32::from(s1) * lo - f32::from(m1) / 4.0);
                assert_eq!(y[64 * p + 32 + l], f32::from(s2) * hi - f32::from(m2) / 4.0);
            }
        }
        assert_eq!(
            (y[131], y[163], y[197], y[229]),
            (75.75, 137.25, 306.75, -11.75)
        );
    }

    /// Q3_K's 16 6-bit scales decoded by hand: low 4 bits in the nibbles of bytes 0–7, top 2
    /// bits in the crumbs of bytes 8–11.
    const Q3_SCALES: [u8; 12] = [
        0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, 0b11100100, 0b00011011, 0b10101010,
        0b01010101,
    ];
    const Q3_DECODED: [i32; 16] = [
        0, 50, 36, 22, 24, 42, 44, 30, 33, 19, 37, 23, 57, 11, 45, 31,
    ];

    #[test]
    fn q3k_scales_decode_as_by_hand_and_pack_back() {
        assert_eq!(q3k_scales(&Q3_SCALES), Q3_DECODED);
        for v in 0..64 {
            let ls: [i32; 16] = std::array::from_fn(|j| (v + 11 * j as i32) % 64);
            let mut q = [0; 12];
            for (j, &l) in ls.iter().enumerate() {
                pack_q3k_scale(&mut q, j, l);
            }
            assert_eq!(q3k_scales(&q), ls);
        }
    }

    #[test]
    fn q3k_block_dequantizes_as_by_hand() {
        let mut block = Q3K::zeroed();
        block.d = Half::new(0x3800); // 0.5
        block.scales = Q3_SCALES;
        // Crumb j of every byte is j; every high bit set (+0) but those of element l = 5.
        block.qs = [0b11_10_01_00; 64];
        block.hmask = [0xFF; 32];
        block.hmask[5] = 0;
        let mut y = [0f32; 256];
        block.dequantize(&mut y);
        for h in 0..2 {
            for j in 0..4 {
                for l in 0..32 {
                    let scale = (Q3_DECODED[8 * h + 2 * j + l / 16] - 32) as f32 * 0.5;
                    let q = j as f32 - if l == 5 { 4.0 } else { 0.0 };
                    assert_eq!(y[128 * h + 32 * j + l], scale * q, "{h} {j} {l}");
                }
            }
        }
    }

    /// ggml leaves `bsums` as they were for a block with nothing to scale; here they are zeroed
    /// (what ggml gives on a zeroed buffer), whatever the buffer held.
    #[test]
    fn q8k_of_zeros_is_all_zero_whatever_the_buffer_held() {
        let mut out = [Q8K {
            d: U32::new(0xDEAD_BEEF),
            qs: [7; 256],
            bsums: [I16::new(-3); 16],
        }];
        Q8K::quantize_row_ref(&[0.0; 256], &mut out);
        assert_eq!(out[0], Q8K::zeroed());
        let mut nan = [Q8K::zeroed()];
        nan[0].bsums = [I16::new(9); 16];
        Q8K::quantize_row_ref(&[f32::NAN; 256], &mut nan);
        assert_eq!(nan[0], Q8K::zeroed());
    }

    /// A Q6_K block below ggml's `GROUP_MAX_EPS` is all zero bytes, whatever the buffer held.
    #[test]
    fn q6k_of_tiny_values_is_all_zero() {
        let mut out = [Q6K {
            ql: [1; 128],
            qh: [2; 64],
            scales: [3; 16],
            d: Half::new(0x3C00),
        }];
        Q6K::quantize_row(&[1e-20; 256], &mut out);
        assert_eq!(out[0], Q6K::zeroed());
    }
}
