//! IQ1_M quantization: ggml's `quantize_row_iq1_m_impl`, each element weighted by its square
//! or, with an importance matrix, by `qw·sqrt(σ² + x²)` (σ² twice the block's mean square). Groups of 16, each split exactly into three levels (−1, 0,
//! 1) by its sorted values, shifted by ±[`IQ1_DELTA`] per half; the grid of 2048.

use super::super::c::{fp32_to_fp16, nearest_int};
use super::lattice::{self, Lattice, Place};
use super::tables::IQ1_DELTA;
use super::{block_sigma2, c_max, imatrix_weight};
use ggufrw_schema::blocks::scalar::U16;
use ggufrw_schema::blocks::Iq1M;

/// A group whose largest |x| is below this is all zero.
const GROUP_MAX_EPS_IQ1_M: f32 = 1e-7;
/// The three levels shifted up (`x_p`) …
pub(super) const X_P: [f32; 3] = [-1.0 + IQ1_DELTA, IQ1_DELTA, 1.0 + IQ1_DELTA];
/// … and down (`x_m`).
pub(super) const X_M: [f32; 3] = [-1.0 - IQ1_DELTA, -IQ1_DELTA, 1.0 - IQ1_DELTA];
/// The delta-sign bits in `qh` of each shift choice: 0 (+, +), 1 (+, −), 2 (−, +), 3 (−, −).
const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];

/// The levels of 8-element half `k` of a group under shift choice `shift`.
fn shifted(shift: usize, k: usize) -> &'static [f32; 3] {
    let up = if k == 0 { shift < 2 } else { shift % 2 == 0 };
    if up {
        &X_P
    } else {
        &X_M
    }
}

/// The packed word of eight level indices (2 bits each).
pub(super) fn word(l: &[i8]) -> u16 {
    (l.iter().enumerate()).fold(0, |u, (i, &l)| u | ((l as u16) << (2 * i)))
}

/// ggml's `iq1_sort_helper`: less, greater, or equal (equal where either is NaN).
fn compare(l: f32, r: f32) -> i32 {
    if l < r {
        -1
    } else if l > r {
        1
    } else {
        0
    }
}

/// `qsort` of the (value, index) pairs as glibc sorts 16 (or 32) elements of 8 bytes: its merge sort
/// (halves of `n/2` and `n − n/2`, the left element taken while the comparison is `<= 0`), so
/// equal values keep their order and a NaN is placed as glibc places it.
pub(super) fn sort(p: &mut [(f32, usize)], tmp: &mut [(f32, usize)]) {
    let n = p.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (a, b) = p.split_at_mut(n1);
        sort(a, tmp);
        sort(b, tmp);
    }
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if compare(p[i].0, p[j].0) <= 0 {
            tmp[k] = p[i];
            i += 1;
        } else {
            tmp[k] = p[j];
            j += 1;
        }
        k += 1;
    }
    while i < n1 {
        tmp[k] = p[i];
        i += 1;
        k += 1;
    }
    p[..k].copy_from_slice(&tmp[..k]);
}

/// ggml's `iq1_find_best_neighbour2`: of `candidates`, the entry nearest the 8 values at the
/// start of `xval` at `scale` with levels `xg` (weighted squared distance, the first of
/// equals); its level indices go to `l`.
///
/// Where every candidate's distance is NaN or at least `FLT_MAX`, ggml tries the whole grid,
/// reading `xval[i]` for grid entry `i` (a slip for `xval[j]`: up to 2047 values past the group,
/// beyond the row for the last groups, where we read nothing and that entry loses), and aborts
/// if that finds nothing either; then we take the first candidate.
pub(super) fn best_neighbour(
    lat: &Lattice<8>,
    candidates: &[u16],
    xval: &[f32],
    weight: &[f32],
    scale: f32,
    xg: &[f32; 3],
    l: &mut [i8],
) -> usize {
    let mut best = f32::MAX;
    let mut found = None;
    for &j in candidates {
        let pg = lat.levels(usize::from(j));
        let mut d2 = 0f32;
        for i in 0..8 {
            let q = xg[usize::from(pg[i])];
            let w = weight[i];
            let diff = scale * q - xval[i];
            d2 += w * diff * diff;
        }
        if d2 < best {
            best = d2;
            found = Some(usize::from(j));
        }
    }
    if found.is_none() {
        for i in 0..lat.len() {
            let Some(&xi) = xval.get(i) else { break };
            let g = lat.levels(i);
            let mut d2 = 0f32;
            for j in 0..8 {
                let w = weight[j];
                let q = xg[usize::from(g[j])];
                let diff = scale * q - xi;
                d2 += w * diff * diff;
            }
            if d2 < best {
                best = d2;
                found = Some(i);
            }
        }
    }
    let k = found.unwrap_or(usize::from(candidates[0]));
    lat.copy_levels(k, l);
    k
}

/// The levels of a split: the sorted elements `..i1` at 0, `i1..i2` at 1, the rest at 2, each
/// put back in its place (IQ1_S and IQ1_M).
pub(super) fn split_levels<const N: usize>(
    order: &[(f32, usize); N],
    i1: usize,
    i2: usize,
) -> [i8; N] {
    let mut l = [0i8; N];
    for (j, &(_, i)) in order.iter().enumerate() {
        l[i] = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
    }
    l
}

/// The best split of a group of 16 into three levels: `(i1, i2, shift, scale)`, the sorted
/// elements `..i1` at level 0, `i1..i2` at 1, the rest at 2. `None` if no split has a positive
/// `Σ w·q²` and a score above `-FLT_MAX` (NaN everywhere).
fn best_split(
    xb: &[f32],
    weight: &[f32; 16],
    order: &[(f32, usize); 16],
    max: f32,
) -> Option<(usize, usize, usize, f32)> {
    let mut px = [[0f32; 17]; 2];
    let mut pw = [[0f32; 17]; 2];
    for (j, &(_, i)) in order.iter().enumerate() {
        let h = usize::from(i >= 8);
        px[h][j + 1] = px[h][j] + weight[i] * xb[i];
        px[1 - h][j + 1] = px[1 - h][j];
        pw[h][j + 1] = pw[h][j] + weight[i];
        pw[1 - h][j + 1] = pw[1 - h][j];
    }
    let txs = [px[0][16], px[1][16]];
    let tws = [pw[0][16], pw[1][16]];
    let (p2, m2) = (X_P[2], X_M[2]);
    let cp1 = X_P[0] * X_P[0] - X_P[1] * X_P[1];
    let cp2 = X_P[1] * X_P[1] - X_P[2] * X_P[2];
    let cm1 = X_M[0] * X_M[0] - X_M[1] * X_M[1];
    let cm2 = X_M[1] * X_M[1] - X_M[2] * X_M[2];
    let mut best_score = -f32::MAX;
    let mut scale = max;
    let mut best = None;
    for i1 in 0..=16 {
        for i2 in i1..=16 {
            let (mut qx_p, mut qx_m, mut q2_p, mut q2_m) =
                ([0f32; 2], [0f32; 2], [0f32; 2], [0f32; 2]);
            for h in 0..2 {
                let sx = px[h][i1] + px[h][i2];
                qx_p[h] = txs[h] * p2 - sx;
                qx_m[h] = txs[h] * m2 - sx;
                q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
            }
            let sumqx = [
                qx_p[0] + qx_p[1],
                qx_p[0] + qx_m[1],
                qx_m[0] + qx_p[1],
                qx_m[0] + qx_m[1],
            ];
            let sumq2 = [
                q2_p[0] + q2_p[1],
                q2_p[0] + q2_m[1],
                q2_m[0] + q2_p[1],
                q2_m[0] + q2_m[1],
            ];
            for k in 0..4 {
                if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                    scale = sumqx[k] / sumq2[k];
                    best_score = scale * sumqx[k];
                    best = Some((i1, i2, k));
                }
            }
        }
    }
    best.map(|(i1, i2, k)| (i1, i2, k, scale))
}

/// A group's weights: `x²`, or with importance weights `qw` (the group's) `qw·sqrt(σ² + x²)`.
fn weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> [f32; 16] {
    std::array::from_fn(|i| match qw {
        Some(qw) => imatrix_weight(qw[i], sigma2, xb[i]),
        None => xb[i] * xb[i],
    })
}

/// `qw`: the row's importance weights, if any.
pub(super) fn quantize(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq1M]) {
    let lat = lattice::iq1s();
    for (ibl, y) in out.iter_mut().enumerate() {
        let xbl = &x[256 * ibl..256 * ibl + 256];
        let sigma2 = block_sigma2(xbl);
        let group_qw = |ib: usize| qw.map(|qw| &qw[256 * ibl + 16 * ib..256 * ibl + 16 * ib + 16]);
        y.qs = [0; 32];
        y.qh = [0; 16];
        y.scales = [U16::new(0); 4];
        let mut scales = [0f32; 16];
        let mut shifts = [0usize; 16];
        let mut max_scale = 0f32;
        for (ib, xb) in xbl.chunks_exact(16).enumerate() {
            let weight = weights(xb, group_qw(ib), sigma2);
            let max = xb[1..].iter().fold(xb[0].abs(), |m, &v| c_max(m, v.abs()));
            if max < GROUP_MAX_EPS_IQ1_M {
                continue;
            }
            let mut order: [(f32, usize); 16] = std::array::from_fn(|j| (xb[j], j));
            sort(&mut order, &mut [(0.0, 0); 16]);
            let Some((i1, i2, mut shift, mut scale)) = best_split(xb, &weight, &order, max) else {
                continue;
            };
            let mut l = split_levels(&order, i1, i2);
            if scale < 0.0 {
                for l in &mut l {
                    *l = 2 - *l;
                }
                scale = -scale;
                shift = 3 - shift;
            }
            let mut all_on_grid = true;
            let mut index = [0usize; 2];
            for (k, index) in index.iter_mut().enumerate() {
                let lk = &mut l[8 * k..8 * k + 8];
                *index = match lat.place(word(lk)) {
                    Place::On(g) => g,
                    Place::Off(candidates) => {
                        all_on_grid = false;
                        let start = 256 * ibl + 16 * ib + 8 * k;
                        let xg = shifted(shift, k);
                        best_neighbour(
                            lat,
                            candidates,
                            &x[start..],
                            &weight[8 * k..],
                            scale,
                            xg,
                            lk,
                        )
                    }
                };
            }
            if !all_on_grid {
                let (mut sumqx, mut sumq2) = (0f32, 0f32);
                for (k, &index) in index.iter().enumerate() {
                    let xx = shifted(shift, k);
                    for (j, &g) in lat.levels(index).iter().enumerate() {
                        let w = weight[8 * k + j];
                        let q = xx[usize::from(g)];
                        sumqx += w * q * xb[8 * k + j];
                        sumq2 += w * q * q;
                    }
                }
                if sumqx > 0.0 && sumq2 > 0.0 {
                    scale = sumqx / sumq2;
                }
            }
            y.qs[2 * ib] = index[0] as u8;
            y.qs[2 * ib + 1] = index[1] as u8;
            y.qh[ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
            scales[ib] = scale;
            shifts[ib] = shift;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale == 0.0 {
            continue;
        }
        let mut sc = [0u16; 4];
        let mut d = max_scale / 15.0;
        let id = 1.0 / d;
        let (mut sumqx, mut sumq2) = (0f32, 0f32);
        for (ib, xb) in xbl.chunks_exact(16).enumerate() {
            let l = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, 7);
            sc[ib / 4] |= (l as u16) << (3 * (ib % 4));
            y.qh[ib] |= MASKS[shifts[ib]];
            let qh = usize::from(y.qh[ib]);
            let weight = weights(xb, group_qw(ib), sigma2);
            for k in 0..2 {
                let xx = shifted(shifts[ib], k);
                let entry = usize::from(y.qs[2 * ib + k]) + ((qh << (8 - 4 * k)) & 0x700);
                for (j, &g) in lat.levels(entry).iter().enumerate() {
                    let v = xb[8 * k + j];
                    let w = weight[8 * k + j];
                    let q = xx[usize::from(g)] * (2 * l + 1) as f32;
                    sumqx += w * q * v;
                    sumq2 += w * q * q;
                }
            }
        }
        if sumq2 > 0.0 {
            d = sumqx / sumq2;
        }
        let s = fp32_to_fp16(d * 1.1125);
        sc[0] |= (s & 0x000f) << 12;
        sc[1] |= (s & 0x00f0) << 8;
        sc[2] |= (s & 0x0f00) << 4;
        sc[3] |= s & 0xf000;
        y.scales = sc.map(U16::new);
    }
}
