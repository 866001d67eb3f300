//! IQ2_S quantization: ggml's `quantize_row_iq2_s_impl`; groups of 16, the grid of 1024.
//! Without an importance matrix each element is weighted by `σ²/4 + x²` (σ² twice the block's
//! mean square), with one by `qw·sqrt(σ² + x²)`.

use super::super::c::nearest_int;
use super::lattice::{self, Lattice, Place};
use super::{block_sigma2, c_max, imatrix_weight, to_half};
use ggufrw_schema::blocks::Iq2S;

/// Levels per element: 0..3, the value `2l + 1`.
const K_MAX_Q: i32 = 3;
/// A group whose largest |x| is below this is all zero.
const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;

/// `qw`: the row's importance weights, if any.
pub(super) fn quantize(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq2S]) {
    let lat = lattice::iq2s();
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        y.d = to_half(0.0);
        y.qs = [0; 64];
        y.qh = [0; 8];
        y.scales = [0; 8];
        let mut scales = [0f32; 16];
        let mut max_scale = 0f32;
        let sigma2 = block_sigma2(xbl);
        for (ib, xb) in xbl.chunks_exact(16).enumerate() {
            let mut weight = [0f32; 16];
            let mut waux = [0f32; 16];
            let qw = qw.map(|qw| &qw[256 * ibl + 16 * ib..256 * ibl + 16 * ib + 16]);
            for i in 0..16 {
                weight[i] = match qw {
                    Some(qw) => imatrix_weight(qw[i], sigma2, xb[i]),
                    None => 0.25 * sigma2 + xb[i] * xb[i],
                };
                waux[i] = weight[i].sqrt();
            }
            let (xval, mut block_signs) = lattice::magnitudes_and_signs::<16, 2>(xb);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS_IQ2_S {
                scales[ib] = 0.0;
                continue;
            }
            let (l, mut scale) = search(lat, &xval, &weight, &waux, max);
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s;
                }
            }
            for (k, &signs) in block_signs.iter().enumerate() {
                let entry = lat.entry(lattice::word::<2>(&l[8 * k..8 * k + 8]));
                let i8 = 2 * ib + k;
                y.qs[i8] = entry as u8;
                y.qh[i8 / 4] |= ((entry >> 8) as u8) << (2 * (i8 % 4));
                y.qs[32 + i8] = signs;
            }
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            continue;
        }
        let d = max_scale / 31.0;
        y.d = to_half(d * 0.9875);
        let id = 1.0 / d;
        for (ib, &scale) in scales.iter().enumerate() {
            let l = nearest_int(0.5 * (id * scale - 1.0)).clamp(0, 15) as u8;
            y.scales[ib / 2] |= l << (4 * (ib % 2));
        }
    }
}

/// The search over scales of one group of 16 (magnitudes `xval`, largest `max`) on an 8-element
/// grid of 3 levels, as `quantize_row_iq2_s_impl` and `quantize_row_iq2_xs_impl` both run it:
/// 19 scales around `max/5`, the best by `sumqx²/sumq2`, then the halves that were off the grid
/// placed again at that scale. The levels, on the grid, and the scale.
pub(super) fn search(
    lat: &Lattice<8>,
    xval: &[f32; 16],
    weight: &[f32; 16],
    waux: &[f32; 16],
    max: f32,
) -> ([i8; 16], f32) {
    let mut l = [0i8; 16];
    let mut best = 0f32;
    let mut scale = max / (2 * K_MAX_Q - 1) as f32;
    let mut on_grid = [true; 2];
    let mut laux = [0i8; 16];
    let mut on_grid_aux = [true; 2];
    for is in -9..=9 {
        let id = ((2 * K_MAX_Q - 1) as f32 + is as f32 * 0.1) / max;
        let this_scale = 1.0 / id;
        for k in 0..2 {
            let la = &mut laux[8 * k..8 * k + 8];
            for (i, la) in la.iter_mut().enumerate() {
                *la = lattice::level(id, xval[8 * k + i], K_MAX_Q);
            }
            on_grid_aux[k] = true;
            if let Place::Off(candidates) = lat.place(lattice::word::<2>(la)) {
                on_grid_aux[k] = false;
                let (xs, ws) = (&xval[8 * k..], &waux[8 * k..]);
                lat.best_neighbour(candidates, xs, ws, this_scale, la);
            }
        }
        let (sumqx, sumq2) = lattice::sums(weight, xval, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            l = laux;
            on_grid = on_grid_aux;
        }
    }
    if on_grid.iter().any(|&g| !g) && scale > 0.0 {
        let id = 1.0 / scale;
        for k in 0..2 {
            if on_grid[k] {
                continue;
            }
            let lk = &mut l[8 * k..8 * k + 8];
            for (i, lk) in lk.iter_mut().enumerate() {
                *lk = lattice::level(id, xval[8 * k + i], K_MAX_Q);
            }
            if let Place::Off(candidates) = lat.place(lattice::word::<2>(lk)) {
                let (xs, ws) = (&xval[8 * k..], &waux[8 * k..]);
                lat.best_neighbour(candidates, xs, ws, scale, lk);
            }
        }
        let (sumqx, sumq2) = lattice::sums(weight, xval, &l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    (l, scale)
}
