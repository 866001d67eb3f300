//! The K-quants with an importance matrix: ggml's `quantize_row_q2_K_impl`,
//! `quantize_row_q3_K_impl`, `quantize_row_q4_K_impl` and `quantize_row_q5_K_impl` for one
//! super-block (Q6_K's differs from its reference only in the weights of its search: it is in
//! `k.rs`). Each weights element `j` by `qw[j] * sqrt(sigma2 + x[j]²)`, `sigma2` the block's
//! mean square (doubled for Q3_K, Q4_K and Q5_K), then quantizes the sub-block scales (and
//! minimums) themselves with a weighted search, each sub-block weighted by the sum of its
//! weights; the quants are then made again from the scales as stored, as without weights.

use super::search::{
    imatrix_weights as weights, make_qkx2_quants_lanes, make_qp_quants, make_qx_quants_weighted,
    make_qx_quants_weighted_lanes, Qkx2,
};
use super::{
    groups, pack_q3k_scale, pack_scale_min_k4, q2k_requantize, q3k_requantize, requantize_k4,
    to_half, Half, Q2K, Q3K, QK_K,
};

/// `sumx2 += x[j]*x[j]` over the super-block, in order from 0.
fn sum_of_squares(x: &[f32; QK_K]) -> f32 {
    x.iter().fold(0.0, |s, &v| s + v * v)
}

/// Each group's importance weights and their sum, for the `L` groups of `N` a super-block holds.
fn group_weights<const N: usize, const L: usize>(
    x: &[f32; QK_K],
    qw: &[f32; QK_K],
    sigma2: f32,
) -> ([[f32; N]; L], [f32; L]) {
    let mut w = [[0f32; N]; L];
    let mut sums = [0f32; L];
    for ((w, sum), (xs, qw)) in w
        .iter_mut()
        .zip(&mut sums)
        .zip(groups::<N, _>(x).zip(groups::<N, _>(qw)))
    {
        (*w, *sum) = weights(xs, qw, sigma2);
    }
    (w, sums)
}

/// `quantize_row_q2_K_impl` for one super-block.
pub(super) fn q2k(x: &[f32; QK_K], qw: &[f32; QK_K], y: &mut Q2K) {
    let mut ls = [0u8; QK_K];
    // Q2_K's sigma2 is the plain mean square (not doubled as in the others).
    let sigma2 = sum_of_squares(x) / QK_K as f32;
    let (w, sw) = group_weights::<16, { QK_K / 16 }>(x, qw, sigma2);
    let found = make_qkx2_quants_lanes(
        &Qkx2::qkx3(3),
        bytemuck::cast_ref(x),
        &w,
        bytemuck::cast_mut(&mut ls),
    );
    let (scales, mins) = (found.map(|f| f.0), found.map(|f| f.1));
    let (mut lsc, mut lmin) = ([0u8; QK_K / 16], [0u8; QK_K / 16]);
    let dm = make_qp_quants(15, &scales, &mut lsc, &sw);
    let mm = make_qp_quants(15, &mins, &mut lmin, &sw);
    y.d = to_half(dm);
    y.dmin = to_half(mm);
    for ((q, &s), &m) in y.scales.iter_mut().zip(&lsc).zip(&lmin) {
        // `Ls[j] | (Lm[j] << 4)` in int, stored in a byte.
        *q = s | (m << 4);
    }
    q2k_requantize(x, &mut ls, y);
}

/// `quantize_row_q3_K_impl` for one super-block.
pub(super) fn q3k(x: &[f32; QK_K], qw: &[f32; QK_K], y: &mut Q3K) {
    let mut ls = [0i8; QK_K];
    let sigma2 = 2.0 * sum_of_squares(x) / QK_K as f32;
    let (w, sw) = group_weights::<16, { QK_K / 16 }>(x, qw, sigma2);
    let scales =
        make_qx_quants_weighted_lanes(4, bytemuck::cast_ref(x), &w, bytemuck::cast_mut(&mut ls));
    // The 16 scales as quants in 0..64 of one scale, weighted by each sub-block's weight.
    let mut lsc = [0i8; QK_K / 16];
    let d_block = make_qx_quants_weighted(32, &scales, &sw, &mut lsc);
    y.scales = [0; 12];
    for (j, &l) in lsc.iter().enumerate() {
        pack_q3k_scale(&mut y.scales, j, i32::from(l));
    }
    y.d = to_half(d_block);
    q3k_requantize(x, &mut ls, y);
}

/// `quantize_row_q4_K_impl` (`nmax` 15) or `quantize_row_q5_K_impl` (31) for one
/// super-block: the quants `ls`, the scale bytes `q`, `d` and `dmin`.
pub(super) fn k4(
    x: &[f32; QK_K],
    qw: &[f32; QK_K],
    nmax: i32,
    ls: &mut [u8; QK_K],
    q: &mut [u8; 12],
    d: &mut Half,
    dmin: &mut Half,
) {
    let sigma2 = 2.0 * sum_of_squares(x) / QK_K as f32;
    let (w, sw) = group_weights::<32, { QK_K / 32 }>(x, qw, sigma2);
    let found = make_qkx2_quants_lanes(
        &Qkx2::qkx3(nmax),
        bytemuck::cast_ref(x),
        &w,
        bytemuck::cast_mut(ls),
    );
    let (scales, mins) = (found.map(|f| f.0), found.map(|f| f.1));
    let (mut lsc, mut lmin) = ([0u8; QK_K / 32], [0u8; QK_K / 32]);
    let d_block = make_qp_quants(63, &scales, &mut lsc, &sw);
    let m_block = make_qp_quants(63, &mins, &mut lmin, &sw);
    if nmax == 31 {
        // Q5_K caps the 6-bit scales and minimums at 63 before packing (`MIN(63, ls)`); Q4_K
        // packs the bytes as they are (a negative quant's low byte included).
        lsc = lsc.map(|l| l.min(63));
        lmin = lmin.map(|l| l.min(63));
    }
    pack_scale_min_k4(q, &lsc, &lmin);
    *d = to_half(d_block);
    *dmin = to_half(m_block);
    requantize_k4(x, nmax, ls, q, *d, *dmin);
}
