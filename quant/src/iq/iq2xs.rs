//! IQ2_XXS and IQ2_XS quantization: ggml's `quantize_row_iq2_xxs_impl` (groups of 32, the grid
//! of 256) and `quantize_row_iq2_xs_impl` (groups of 16, the grid of 512). ggml runs them only
//! with an importance matrix: element `i` weighted by `qw[i]·sqrt(σ² + x²)`, σ² here the
//! block's mean square (not twice it, as for the other grid types). Both store 7 sign bits per
//! 8 elements, so an odd pattern of signs is made even first.

use super::super::c::nearest_int;
use super::lattice::{self, Place};
use super::{c_max, imatrix_weight, iq2s, to_half};
use ggufrw_schema::blocks::scalar::{U16, U32};
use ggufrw_schema::blocks::{Iq2Xs, Iq2Xxs};

/// Levels per element: 0..3, the value `2l + 1`.
const K_MAX_Q: i32 = 3;
// The sub-block scales go through the K-quants' `make_qp_quants` (ggml shares it too).
use crate::k::search::{make_qp_quants, GROUP_MAX_EPS};

/// σ² of a block of 256 for these two: `sumx2/QK_K`.
fn sigma2(xbl: &[f32]) -> f32 {
    let mut sumx2 = 0f32;
    for &v in xbl {
        sumx2 += v * v;
    }
    sumx2 / 256.0
}

/// A group's weights `qw·sqrt(σ² + x²)` and their square roots.
fn weights<const N: usize>(xb: &[f32], qw: &[f32], sigma2: f32) -> ([f32; N], [f32; N]) {
    let weight: [f32; N] = std::array::from_fn(|i| imatrix_weight(qw[i], sigma2, xb[i]));
    let waux = weight.map(f32::sqrt);
    (weight, waux)
}

/// The scale stored for a group, on 4 bits against the block's `1/d`.
fn scale_index(id: f32, scale: f32) -> u32 {
    nearest_int(0.5 * (id * scale - 1.0)).clamp(0, 15) as u32
}

/// IQ2_XXS: per group of 32, four grid indices in one word, four 7-bit sign codes and the
/// 4-bit scale in the other. `qw`: the row's importance weights.
pub(super) fn quantize_xxs(x: &[f32], qw: &[f32], out: &mut [Iq2Xxs]) {
    let lat = lattice::iq2xxs();
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let sigma2 = sigma2(xbl);
        let mut q2 = [0u32; 16];
        let mut scales = [0f32; 8];
        let mut max_scale = 0f32;
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let at = 256 * ibl + 32 * ib;
            let (weight, waux) = weights::<32>(xb, &qw[at..at + 32], sigma2);
            let (mut xval, mut block_signs) = lattice::magnitudes_and_signs::<32, 4>(xb);
            lattice::make_signs_even(xb, &weight, &mut xval, &mut block_signs);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS {
                scales[ib] = 0.0;
                continue;
            }
            // The first guess only gives the scales the search tries around: its quants reach
            // the block only where ggml's search keeps none and the scale is NaN, where ggml
            // aborts (`GGML_ASSERT(scale >= 0)`); then we keep zeros, a grid point.
            let mut scale = make_qp_quants(K_MAX_Q + 1, &xval, &mut [0; 32], &weight);
            let eff_max = scale * K_MAX_Q as f32;
            if eff_max <= 0.0 {
                scales[ib] = 0.0;
                continue;
            }
            let mut l = [0i8; 32];
            let mut laux = [0i8; 32];
            let mut best = 0f32;
            for is in -6..=6 {
                let id = ((2 * K_MAX_Q - 1) as f32 + is as f32 * 0.1) / eff_max;
                let this_scale = 1.0 / id;
                for k in 0..4 {
                    let la = &mut laux[8 * k..8 * k + 8];
                    for (i, la) in la.iter_mut().enumerate() {
                        *la = lattice::level(id, xval[8 * k + i], K_MAX_Q);
                    }
                    if let Place::Off(candidates) = lat.place(lattice::word::<2>(la)) {
                        let (xs, ws) = (&xval[8 * k..], &waux[8 * k..]);
                        lat.best_neighbour(candidates, xs, ws, this_scale, la);
                    }
                }
                let (sumqx, sumq2) = lattice::sums(&weight, &xval, &laux);
                if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    l = laux;
                }
            }
            // Unlike IQ2_XS, every 8 are placed again at the scale found, on the grid or not.
            if scale > 0.0 {
                let id = 1.0 / scale;
                for k in 0..4 {
                    let mut la = [0i8; 8];
                    for (i, la) in la.iter_mut().enumerate() {
                        *la = lattice::level(id, xval[8 * k + i], K_MAX_Q);
                    }
                    let lk = &mut l[8 * k..8 * k + 8];
                    match lat.place(lattice::word::<2>(&la)) {
                        Place::On(g) => lat.copy_levels(g, lk),
                        Place::Off(candidates) => {
                            let (xs, ws) = (&xval[8 * k..], &waux[8 * k..]);
                            lat.best_neighbour(candidates, xs, ws, scale, lk);
                        }
                    }
                }
                let (sumqx, sumq2) = lattice::sums(&weight, &xval, &l);
                if sumq2 > 0.0 {
                    scale = sumqx / sumq2;
                }
            }
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s & 127;
                }
            }
            for (k, &s) in block_signs.iter().enumerate() {
                let entry = lat.entry(lattice::word::<2>(&l[8 * k..8 * k + 8]));
                q2[2 * ib] |= (entry as u32) << (8 * k);
                q2[2 * ib + 1] |= u32::from(s) << (7 * k);
            }
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            y.d = to_half(0.0);
            for g in &mut y.groups {
                g.grid = [0; 4];
                g.signs_and_scale = U32::new(0);
            }
            continue;
        }
        let d = max_scale / 31.0;
        y.d = to_half(d);
        let id = 1.0 / d;
        for (ib, g) in y.groups.iter_mut().enumerate() {
            q2[2 * ib + 1] |= scale_index(id, scales[ib]) << 28;
            g.grid = q2[2 * ib].to_le_bytes();
            g.signs_and_scale = U32::new(q2[2 * ib + 1]);
        }
    }
}

/// IQ2_XS: per 8 elements a 16-bit word of grid index (9 bits) and 7-bit sign code; per group
/// of 16 a 4-bit scale. `qw`: the row's importance weights.
pub(super) fn quantize_xs(x: &[f32], qw: &[f32], out: &mut [Iq2Xs]) {
    let lat = lattice::iq2xs();
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let sigma2 = sigma2(xbl);
        let mut q2 = [0u16; 32];
        let mut scales = [0f32; 16];
        let mut max_scale = 0f32;
        y.scales = [0; 8];
        for (ib, xb) in xbl.chunks_exact(16).enumerate() {
            let at = 256 * ibl + 16 * ib;
            let (weight, waux) = weights::<16>(xb, &qw[at..at + 16], sigma2);
            let (mut xval, mut block_signs) = lattice::magnitudes_and_signs::<16, 2>(xb);
            lattice::make_signs_even(xb, &weight, &mut xval, &mut block_signs);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS {
                scales[ib] = 0.0;
                continue;
            }
            let (l, mut scale) = iq2s::search(lat, &xval, &weight, &waux, max);
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s & 127;
                }
            }
            for (k, &s) in block_signs.iter().enumerate() {
                let entry = lat.entry(lattice::word::<2>(&l[8 * k..8 * k + 8]));
                q2[2 * ib + k] = entry as u16 | (u16::from(s) << 9);
            }
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            y.d = to_half(0.0);
            y.qs = [U16::new(0); 32];
            continue;
        }
        let d = max_scale / 31.0;
        y.d = to_half(d);
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            y.scales[ib / 2] |= (scale_index(id, scale) as u8) << (4 * (ib % 2));
        }
        y.qs = q2.map(U16::new);
    }
}
