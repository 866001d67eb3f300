//! IQ3_XXS and IQ3_S quantization: ggml's `quantize_row_iq3_xxs_impl` (the grid of 256) and
//! `quantize_row_iq3_s_impl` (the grid of 512, groups of 32). Without an importance matrix
//! each element is weighted by its square; with one, element `i` by `qw[i]·sqrt(σ² + x²)`, σ²
//! twice the block's mean square.

use super::super::c::nearest_int;
use super::lattice::{self, Lattice, Place};
use super::{block_sigma2, c_max, imatrix_weight, to_half};
use ggufrw_schema::blocks::scalar::U32;
use ggufrw_schema::blocks::{Iq3S, Iq3Xxs};

/// Levels per element: 0..8, the value `2l + 1`.
const K_MAX_Q: i32 = 8;
/// IQ3_XXS: a group whose largest |x| is below this is all zero.
const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;

/// A group's weights and their square roots: `x²`, or with importance weights `qw` (the
/// group's), `qw·sqrt(σ² + x²)`.
fn weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> ([f32; 32], [f32; 32]) {
    let mut weight = [0f32; 32];
    let mut waux = [0f32; 32];
    for i in 0..32 {
        weight[i] = match qw {
            Some(qw) => imatrix_weight(qw[i], sigma2, xb[i]),
            None => xb[i] * xb[i],
        };
        waux[i] = weight[i].sqrt();
    }
    (weight, waux)
}

/// Where the two quantizers' searches differ.
struct Search {
    /// Scales tried: `is` from `-range` to `range`.
    range: i32,
    /// IQ3_XXS starts with every pattern taken as on the grid, IQ3_S as off it.
    on_grid_at_first: bool,
    /// IQ3_XXS re-places only the patterns that were off the grid; IQ3_S all of them.
    skip_on_grid: bool,
}

/// The search over scales of one group of 32 (magnitudes `xval`, largest `max`): the scale,
/// and every pattern's levels (on the grid) in `l`.
fn search(
    lat: &Lattice<4>,
    xval: &[f32; 32],
    weight: &[f32; 32],
    waux: &[f32; 32],
    max: f32,
    how: &Search,
    l: &mut [i8; 32],
) -> f32 {
    let mut best = 0f32;
    let mut scale = max / (2 * K_MAX_Q - 1) as f32;
    let mut on_grid = [how.on_grid_at_first; 8];
    let mut laux = [0i8; 32];
    let mut on_grid_aux = [true; 8];
    for is in -how.range..=how.range {
        let id = ((2 * K_MAX_Q - 1) as f32 + is as f32 * 0.2) / max;
        let this_scale = 1.0 / id;
        for k in 0..8 {
            let la = &mut laux[4 * k..4 * k + 4];
            for (i, la) in la.iter_mut().enumerate() {
                *la = lattice::level(id, xval[4 * k + i], K_MAX_Q);
            }
            on_grid_aux[k] = true;
            if let Place::Off(candidates) = lat.place(lattice::word::<3>(la)) {
                on_grid_aux[k] = false;
                let (xs, ws) = (&xval[4 * k..], &waux[4 * k..]);
                lat.best_neighbour(candidates, xs, ws, this_scale, la);
            }
        }
        let (sumqx, sumq2) = lattice::sums(weight, xval, &laux);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            *l = laux;
            on_grid = on_grid_aux;
        }
    }
    if on_grid.iter().any(|&g| !g) && scale > 0.0 {
        let id = 1.0 / scale;
        for k in 0..8 {
            if how.skip_on_grid && on_grid[k] {
                continue;
            }
            let mut la = [0i8; 4];
            for (i, la) in la.iter_mut().enumerate() {
                *la = lattice::level(id, xval[4 * k + i], K_MAX_Q);
            }
            let lk = &mut l[4 * k..4 * k + 4];
            let k = match lat.place(lattice::word::<3>(&la)) {
                Place::On(k) => k,
                Place::Off(candidates) => {
                    let (xs, ws) = (&xval[4 * k..], &waux[4 * k..]);
                    lat.best_neighbour(candidates, xs, ws, scale, lk)
                }
            };
            lat.copy_levels(k, lk);
        }
        let (sumqx, sumq2) = lattice::sums(weight, xval, l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    scale
}

/// The scale stored for a group, on 4 bits against the block's `1/d`.
fn scale_index(id: f32, scale: f32) -> u8 {
    nearest_int(0.5 * (id * scale - 1.0)).clamp(0, 15) as u8
}

/// IQ3_XXS: signs in 7 bits per 8 elements (an odd number of minus signs is made even by
/// flipping the element of least weighted square), the grid of 256.
pub(super) fn quantize_xxs(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq3Xxs]) {
    let lat = lattice::iq3xxs();
    let how = Search {
        range: 15,
        on_grid_at_first: true,
        skip_on_grid: true,
    };
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let sigma2 = block_sigma2(xbl);
        let mut q3 = [0u8; 64];
        let mut signs_and_scales = [0u32; 8];
        let mut scales = [0f32; 8];
        let mut max_scale = 0f32;
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let qw = qw.map(|qw| &qw[256 * ibl + 32 * ib..256 * ibl + 32 * ib + 32]);
            let (weight, waux) = weights(xb, qw, sigma2);
            let (mut xval, mut block_signs) = lattice::magnitudes_and_signs::<32, 4>(xb);
            lattice::make_signs_even(xb, &weight, &mut xval, &mut block_signs);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max < GROUP_MAX_EPS_IQ3_XXS {
                scales[ib] = 0.0;
                continue;
            }
            let mut l = [0i8; 32];
            let mut scale = search(lat, &xval, &weight, &waux, max, &how, &mut l);
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s & 127;
                }
            }
            for (k, q) in q3[8 * ib..8 * ib + 8].iter_mut().enumerate() {
                *q = lat.entry(lattice::word::<3>(&l[4 * k..4 * k + 4])) as u8;
            }
            signs_and_scales[ib] = (block_signs.iter().enumerate())
                .fold(0, |a, (k, &s)| a | (u32::from(s) << (7 * k)));
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            y.d = to_half(0.0);
            y.qs = [0; 64];
            y.signs_and_scales = [U32::new(0); 8];
            continue;
        }
        let d = max_scale / 31.0;
        y.d = to_half(d * 1.0125);
        let id = 1.0 / d;
        for (s, &scale) in signs_and_scales.iter_mut().zip(&scales) {
            *s |= u32::from(scale_index(id, scale)) << 28;
        }
        y.qs = q3;
        y.signs_and_scales = signs_and_scales.map(U32::new);
    }
}

/// IQ3_S: all 8 signs of 8 elements, the grid of 512 (a 9th index bit in `qh`).
///
/// ggml advances its write positions for the grid indices and the signs only past groups it
/// quantizes, not past all-zero ones: a zero group shifts the later groups' indices and signs
/// towards the block's start (their scales and high bits stay in place). So do we.
pub(super) fn quantize_s(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq3S]) {
    let lat = lattice::iq3s();
    let how = Search {
        range: 9,
        on_grid_at_first: false,
        skip_on_grid: false,
    };
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let sigma2 = block_sigma2(xbl);
        y.d = to_half(0.0);
        y.qs = [0; 64];
        y.qh = [0; 8];
        y.signs = [0; 32];
        y.scales = [0; 4];
        let mut scales = [0f32; 8];
        let mut max_scale = 0f32;
        let mut at = 0;
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let qw = qw.map(|qw| &qw[256 * ibl + 32 * ib..256 * ibl + 32 * ib + 32]);
            let (weight, waux) = weights(xb, qw, sigma2);
            let (xval, mut block_signs) = lattice::magnitudes_and_signs::<32, 4>(xb);
            let max = xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v));
            if max == 0.0 {
                scales[ib] = 0.0;
                continue;
            }
            let mut l = [0i8; 32];
            let mut scale = search(lat, &xval, &weight, &waux, max, &how, &mut l);
            if scale < 0.0 {
                scale = -scale;
                for s in &mut block_signs {
                    *s = !*s;
                }
            }
            for k in 0..8 {
                let entry = lat.entry(lattice::word::<3>(&l[4 * k..4 * k + 4]));
                y.qs[8 * at + k] = entry as u8;
                y.qh[ib] |= ((entry >> 8) as u8) << k;
            }
            y.signs[4 * at..4 * at + 4].copy_from_slice(&block_signs);
            at += 1;
            scales[ib] = scale;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            continue;
        }
        let d = max_scale / 31.0;
        y.d = to_half(d * 1.033);
        let id = 1.0 / d;
        for (s, pair) in y.scales.iter_mut().zip(scales.chunks_exact(2)) {
            *s = scale_index(id, pair[0]) | (scale_index(id, pair[1]) << 4);
        }
    }
}
