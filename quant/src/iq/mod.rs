//! The IQ types: grids of 8-element (or 4-element) patterns, sign patterns, non-linear tables.
//! Dequantization as ggml's `dequantize_row_iq*`; quantization as `ggml_quantize_chunk` does it,
//! with an importance matrix or without (IQ2_XXS, IQ2_XS and IQ1_S only with one: without,
//! ggml refuses them, and so do we).
//!
//! The tables are in [`tables`], in a form of our own; what the grid quantizers search (ggml's
//! `kmap` and `kneighbors`) is built once per grid by [`lattice`].

mod iq1m;
mod iq1s;
mod iq2s;
mod iq2xs;
mod iq3;
mod iq4;
mod lattice;
mod tables;

use super::c::{fp16_to_fp32, fp32_to_fp16};
use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::bits::{
    Iq1mHigh, Iq1mScales, Iq1sHigh, Iq2xsWord, Nibbles, SignsAndScale,
};
use ggufrw_schema::blocks::scalar::Half;
use ggufrw_schema::blocks::{Iq1M, Iq1S, Iq2S, Iq2Xs, Iq2Xxs, Iq3S, Iq3Xxs, Iq4Nl, Iq4Xs};
use tables::{
    IQ1S_GRID, IQ1_DELTA, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, IQ4NL_VALUES,
    KSIGNS,
};

const NEEDS_IMATRIX: Option<&str> = Some(
    "ggml quantizes this type only with an importance matrix (ggml_quantize_requires_imatrix)",
);

fn half(h: Half) -> f32 {
    fp16_to_fp32(h.get())
}

fn to_half(f: f32) -> Half {
    Half::new(fp32_to_fp16(f))
}

/// `σ²` of a block of 256 as the grid quantizers compute it: `2*sumx2/QK_K`, in that order
/// (`2*sumx2` overflows where `sumx2*(2/256)` might not).
fn block_sigma2(xbl: &[f32]) -> f32 {
    let mut sumx2 = 0f32;
    for &v in xbl {
        sumx2 += v * v;
    }
    2.0 * sumx2 / 256.0
}

/// The weight of element `x` with importance `qw`: `qw * sqrtf(sigma2 + x*x)`.
#[inline(always)]
fn imatrix_weight(qw: f32, sigma2: f32, x: f32) -> f32 {
    qw * (sigma2 + x * x).sqrt()
}

/// C's `MAX(a, b)`: `a > b ? a : b`, so `b` where either is NaN.
fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// `db * v`, negated where `negative`: ggml writes `db * v * (neg ? -1.f : 1.f)`, which
/// compiles to a flip of the product's sign bit (a NaN's too), not to a multiply. The flip is
/// an XOR with a mask made from the data: written as a negation, the compiler may move it onto
/// `v` before the multiply (the same number, but a NaN `db` then keeps its sign).
#[inline(always)]
fn signed(db: f32, v: u8, negative: bool) -> f32 {
    let y = db * f32::from(v);
    f32::from_bits(y.to_bits() ^ (u32::from(negative) << 31))
}

/// Eight values of an 8-element grid entry, scaled, with the signs of `signs`' bits.
#[inline(always)]
fn put8(y: &mut [f32], db: f32, grid: &[u8; 8], signs: u8) {
    for (j, (y, &g)) in y.iter_mut().zip(grid).enumerate() {
        *y = signed(db, g, (signs >> j) & 1 != 0);
    }
}

/// Eight values from two 4-element grid entries, the first taking sign bits 0–3, the second
/// 4–7.
#[inline(always)]
fn put4x2(y: &mut [f32], db: f32, grid1: &[u8; 4], grid2: &[u8; 4], signs: u8) {
    for j in 0..4 {
        y[j] = signed(db, grid1[j], (signs >> j) & 1 != 0);
        y[j + 4] = signed(db, grid2[j], (signs >> (j + 4)) & 1 != 0);
    }
}

/// Eight values of an IQ1 grid entry: `dl * (v + delta)`.
#[inline(always)]
fn put_iq1(y: &mut [f32], dl: f32, grid: &[i8; 8], delta: f32) {
    for (y, &g) in y.iter_mut().zip(grid) {
        *y = dl * (f32::from(g) + delta);
    }
}

impl Dequantize for Iq2Xxs {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (group, y) in self.groups.iter().zip(y.chunks_exact_mut(32)) {
            let aux = SignsAndScale::from_bytes(group.signs_and_scale.0);
            let db = d * (0.5 + f32::from(aux.scale())) * 0.25;
            let signs = [aux.signs0(), aux.signs1(), aux.signs2(), aux.signs3()];
            for ((&g, s), y) in group.grid.iter().zip(signs).zip(y.chunks_exact_mut(8)) {
                put8(y, db, &IQ2XXS_GRID[usize::from(g)], KSIGNS[usize::from(s)]);
            }
        }
    }
}

impl Quantize for Iq2Xxs {
    const REFUSAL: Option<&'static str> = NEEDS_IMATRIX;
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq2xs::quantize_xxs(x, qw, out)
    }
}

impl Dequantize for Iq2Xs {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = Nibbles::from_bytes([self.scales[ib]]);
            let db = [
                d * (0.5 + f32::from(sc.lo())) * 0.25,
                d * (0.5 + f32::from(sc.hi())) * 0.25,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let w = Iq2xsWord::from_bytes(self.qs[4 * ib + l].0);
                let grid = &IQ2XS_GRID[usize::from(w.grid())];
                put8(y, db[l / 2], grid, KSIGNS[usize::from(w.signs())]);
            }
        }
    }
}

impl Quantize for Iq2Xs {
    const REFUSAL: Option<&'static str> = NEEDS_IMATRIX;
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq2xs::quantize_xs(x, qw, out)
    }
}

impl Dequantize for Iq2S {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        let (qs, signs) = self.qs.split_at(32);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = Nibbles::from_bytes([self.scales[ib]]);
            let db = [
                d * (0.5 + f32::from(sc.lo())) * 0.25,
                d * (0.5 + f32::from(sc.hi())) * 0.25,
            ];
            let qh = u16::from(self.qh[ib]);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let idx = u16::from(qs[4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300);
                put8(
                    y,
                    db[l / 2],
                    &IQ2S_GRID[usize::from(idx)],
                    signs[4 * ib + l],
                );
            }
        }
    }
}

impl Quantize for Iq2S {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq2s::quantize(x, None, out)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq2s::quantize(x, Some(qw), out)
    }
}

impl Dequantize for Iq3Xxs {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let aux = SignsAndScale::from_bytes(self.signs_and_scales[ib].0);
            let db = d * (0.5 + f32::from(aux.scale())) * 0.5;
            let signs = [aux.signs0(), aux.signs1(), aux.signs2(), aux.signs3()];
            let qs = &self.qs[8 * ib..8 * ib + 8];
            for (l, (s, y)) in signs.into_iter().zip(y.chunks_exact_mut(8)).enumerate() {
                let grid1 = &IQ3XXS_GRID[usize::from(qs[2 * l])];
                let grid2 = &IQ3XXS_GRID[usize::from(qs[2 * l + 1])];
                put4x2(y, db, grid1, grid2, KSIGNS[usize::from(s)]);
            }
        }
    }
}

impl Quantize for Iq3Xxs {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq3::quantize_xxs(x, None, out)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq3::quantize_xxs(x, Some(qw), out)
    }
}

impl Dequantize for Iq3S {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = Nibbles::from_bytes([self.scales[ib / 2]]);
            let s = if ib % 2 == 0 { sc.lo() } else { sc.hi() };
            let db = d * (1 + 2 * i32::from(s)) as f32;
            let qh = u16::from(self.qh[ib]);
            let qs = &self.qs[8 * ib..8 * ib + 8];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let i1 = u16::from(qs[2 * l]) | ((qh << (8 - 2 * l)) & 256);
                let i2 = u16::from(qs[2 * l + 1]) | ((qh << (7 - 2 * l)) & 256);
                let (grid1, grid2) = (&IQ3S_GRID[usize::from(i1)], &IQ3S_GRID[usize::from(i2)]);
                put4x2(y, db, grid1, grid2, self.signs[4 * ib + l]);
            }
        }
    }
}

impl Quantize for Iq3S {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq3::quantize_s(x, None, out)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq3::quantize_s(x, Some(qw), out)
    }
}

impl Dequantize for Iq1S {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let h = Iq1sHigh::from_bytes(self.qh[ib].0);
            let dl = d * (2 * i32::from(h.scale()) + 1) as f32;
            let delta = if h.negative_delta() {
                -IQ1_DELTA
            } else {
                IQ1_DELTA
            };
            let high = [h.idx0(), h.idx1(), h.idx2(), h.idx3()];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let idx = u16::from(self.qs[4 * ib + l]) | (u16::from(high[l]) << 8);
                put_iq1(y, dl, &IQ1S_GRID[usize::from(idx)], delta);
            }
        }
    }
}

impl Quantize for Iq1S {
    const REFUSAL: Option<&'static str> = NEEDS_IMATRIX;
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq1s::quantize(x, qw, out)
    }
}

impl Dequantize for Iq1M {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let sc = self.scales.map(|w| Iq1mScales::from_bytes(w.0));
        let d_bits = u16::from(sc[0].d_bits())
            | u16::from(sc[1].d_bits()) << 4
            | u16::from(sc[2].d_bits()) << 8
            | u16::from(sc[3].d_bits()) << 12;
        let d = fp16_to_fp32(d_bits);
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let w = &sc[ib / 2];
            let (s1, s2) = if ib % 2 == 0 {
                (w.s0(), w.s1())
            } else {
                (w.s2(), w.s3())
            };
            let dl = [
                d * (2 * i32::from(s1) + 1) as f32,
                d * (2 * i32::from(s2) + 1) as f32,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let h = Iq1mHigh::from_bytes([self.qh[2 * ib + l / 2]]);
                let (high, negative) = if l % 2 == 0 {
                    (h.idx0(), h.negative0())
                } else {
                    (h.idx1(), h.negative1())
                };
                let delta = if negative { -IQ1_DELTA } else { IQ1_DELTA };
                let idx = u16::from(self.qs[4 * ib + l]) | (u16::from(high) << 8);
                put_iq1(y, dl[l / 2], &IQ1S_GRID[usize::from(idx)], delta);
            }
        }
    }
}

impl Quantize for Iq1M {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq1m::quantize(x, None, out)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq1m::quantize(x, Some(qw), out)
    }
}

impl Dequantize for Iq4Nl {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        for (j, &q) in self.qs.iter().enumerate() {
            let q = Nibbles::from_bytes([q]);
            y[j] = d * f32::from(IQ4NL_VALUES[usize::from(q.lo())]);
            y[j + 16] = d * f32::from(IQ4NL_VALUES[usize::from(q.hi())]);
        }
    }
}

impl Quantize for Iq4Nl {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq4::quantize_nl(x, None, out, 7)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq4::quantize_nl(x, Some(qw), out, 7)
    }
    /// `quantize_row_iq4_nl_ref`: no search over scales (`ntry = -1`).
    fn quantize_row_ref(x: &[f32], out: &mut [Self]) {
        iq4::quantize_nl(x, None, out, -1)
    }
}

impl Dequantize for Iq4Xs {
    #[inline(always)]
    fn dequantize(&self, y: &mut [f32]) {
        let d = half(self.d);
        let scales_h = self.scales_h.get();
        for (ib, y) in y.chunks_exact_mut(32).enumerate() {
            let sl = Nibbles::from_bytes([self.scales_l[ib / 2]]);
            let low = if ib % 2 == 0 { sl.lo() } else { sl.hi() };
            let ls = i32::from(low) | (i32::from((scales_h >> (2 * ib)) & 3) << 4);
            let dl = d * (ls - 32) as f32;
            for (j, &q) in self.qs[16 * ib..16 * ib + 16].iter().enumerate() {
                let q = Nibbles::from_bytes([q]);
                y[j] = dl * f32::from(IQ4NL_VALUES[usize::from(q.lo())]);
                y[j + 16] = dl * f32::from(IQ4NL_VALUES[usize::from(q.hi())]);
            }
        }
    }
}

impl Quantize for Iq4Xs {
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        iq4::quantize_xs(x, None, out)
    }
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        iq4::quantize_xs(x, Some(qw), out)
    }
}
