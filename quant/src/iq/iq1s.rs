//! IQ1_S quantization: ggml's `quantize_row_iq1_s_impl`, which it runs only with an importance
//! matrix (element `i` weighted by `qw[i]·sqrt(σ² + x²)`, σ² twice the block's mean square).
//! As IQ1_M (whose grid, search and sort it shares) but in groups of 32, one shift of the
//! three levels per group, the scale on 3 bits beside the shift's sign in `qh`.

use super::super::c::nearest_int;
use super::iq1m::{best_neighbour, sort, split_levels, word, X_M, X_P};
use super::lattice::{self, Place};
use super::{block_sigma2, c_max, imatrix_weight, to_half};
use ggufrw_schema::blocks::scalar::U16;
use ggufrw_schema::blocks::Iq1S;

/// A group whose largest |x| is below this is all zero.
const GROUP_MAX_EPS_IQ1_S: f32 = 1e-12;

/// The best split of a group of 32 into three levels: `(i1, i2, shift, scale)`, the sorted
/// elements `..i1` at level 0, `i1..i2` at 1, the rest at 2, the levels shifted up (shift
/// of 1) or down (shift of −1). `None` where no split has a positive `Σ w·q²` and a score
/// above `-FLT_MAX`.
fn best_split(
    xb: &[f32],
    weight: &[f32; 32],
    order: &[(f32, usize); 32],
    max: f32,
) -> Option<(usize, usize, i32, f32)> {
    let mut sumx = [0f32; 33];
    let mut sumw = [0f32; 33];
    for (j, &(_, i)) in order.iter().enumerate() {
        sumx[j + 1] = sumx[j] + weight[i] * xb[i];
        sumw[j + 1] = sumw[j] + weight[i];
    }
    let mut best_score = -f32::MAX;
    let mut scale = max;
    let mut best = None;
    for i1 in 0..=32 {
        for i2 in i1..=32 {
            // ggml writes out the three parts' sums for each shift, in this order.
            for (xs, shift) in [(&X_P, 1), (&X_M, -1)] {
                let sumqx = (sumx[i1] - sumx[0]) * xs[0]
                    + (sumx[i2] - sumx[i1]) * xs[1]
                    + (sumx[32] - sumx[i2]) * xs[2];
                let sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0]
                    + (sumw[i2] - sumw[i1]) * xs[1] * xs[1]
                    + (sumw[32] - sumw[i2]) * xs[2] * xs[2];
                if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    best = Some((i1, i2, shift));
                }
            }
        }
    }
    best.map(|(i1, i2, shift)| (i1, i2, shift, scale))
}

/// `qw`: the row's importance weights.
pub(super) fn quantize(x: &[f32], qw: &[f32], out: &mut [Iq1S]) {
    let lat = lattice::iq1s();
    for (ibl, y) in out.iter_mut().enumerate() {
        let xbl = &x[256 * ibl..256 * ibl + 256];
        y.d = to_half(0.0);
        y.qs = [0; 32];
        let mut qh = [0u16; 8];
        let sigma2 = block_sigma2(xbl);
        let mut scales = [0f32; 8];
        let mut shifts = [1i32; 8];
        let mut max_scale = 0f32;
        for (ib, xb) in xbl.chunks_exact(32).enumerate() {
            let at = 256 * ibl + 32 * ib;
            let weight: [f32; 32] =
                std::array::from_fn(|i| imatrix_weight(qw[at + i], sigma2, xb[i]));
            let max = xb[1..].iter().fold(xb[0].abs(), |m, &v| c_max(m, v.abs()));
            if max < GROUP_MAX_EPS_IQ1_S {
                continue;
            }
            let mut order: [(f32, usize); 32] = std::array::from_fn(|j| (xb[j], j));
            sort(&mut order, &mut [(0.0, 0); 32]);
            let Some((i1, i2, mut shift, mut scale)) = best_split(xb, &weight, &order, max) else {
                continue;
            };
            let mut l = split_levels(&order, i1, i2);
            if scale < 0.0 {
                for l in &mut l {
                    *l = 2 - *l;
                }
                scale = -scale;
                shift = -shift;
            }
            let xx = if shift == 1 { &X_P } else { &X_M };
            let mut all_on_grid = true;
            let mut index = [0usize; 4];
            for (k, index) in index.iter_mut().enumerate() {
                let lk = &mut l[8 * k..8 * k + 8];
                *index = match lat.place(word(lk)) {
                    Place::On(g) => g,
                    Place::Off(candidates) => {
                        all_on_grid = false;
                        // ggml hands the search the row from these 8 on (see best_neighbour).
                        let xs = &x[at + 8 * k..];
                        best_neighbour(lat, candidates, xs, &weight[8 * k..], scale, xx, lk)
                    }
                };
            }
            if !all_on_grid {
                let (mut sumqx, mut sumq2) = (0f32, 0f32);
                for (k, &index) in index.iter().enumerate() {
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
            let mut h = 0u16;
            for (k, &index) in index.iter().enumerate() {
                y.qs[4 * ib + k] = index as u8;
                h |= ((index >> 8) as u16) << (3 * k);
            }
            qh[ib] = h;
            scales[ib] = scale;
            shifts[ib] = shift;
            max_scale = c_max(max_scale, scale);
        }
        if max_scale != 0.0 {
            let d = max_scale / 15.0;
            y.d = to_half(d * 1.125);
            let id = 1.0 / d;
            for ib in 0..8 {
                let mut l = nearest_int(0.5 * (id * scales[ib] - 1.0)).clamp(0, 7) as u16;
                if shifts[ib] == -1 {
                    l |= 8;
                }
                qh[ib] |= l << 12;
            }
        }
        y.qh = qh.map(U16::new);
    }
}
