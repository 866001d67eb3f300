//! IQ4_NL and IQ4_XS quantization: ggml's `quantize_row_iq4_nl_impl`, as `quantize_iq4_nl`
//! (`ntry = 7`), `quantize_row_iq4_nl_ref` (`ntry = -1`) and `quantize_iq4_xs` call it. Without
//! an importance matrix each element is weighted by its square; with one, element `j` by
//! `qw[j]·sqrt(σ² + x²)`, σ² twice the mean square of the block (32 for IQ4_NL, 256 for
//! IQ4_XS).

use super::super::c::nearest_int;
use super::tables::IQ4NL_VALUES;
use super::to_half;
use ggufrw_schema::blocks::scalar::U16;
use ggufrw_schema::blocks::{Iq4Nl, Iq4Xs};

/// `GROUP_MAX_EPS`: a group whose largest |x| is below it is all zero.
const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `best_index_int8`: the index of the level nearest `x` (binary search; a tie, and a
/// NaN, go up).
fn best_index(x: f32) -> u8 {
    let val = |i: usize| f32::from(IQ4NL_VALUES[i]);
    if x <= val(0) {
        return 0;
    }
    if x >= val(15) {
        return 15;
    }
    let (mut ml, mut mu) = (0, 15);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < val(mav) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - val(mu - 1) < val(mu) - x {
        (mu - 1) as u8
    } else {
        mu as u8
    }
}

/// The weighted sums `Σ w·q·x` and `Σ w·q²` of the group at inverse scale `id`, each element
/// at its nearest level (written to `l` if given).
fn sums(xb: &[f32], weight: &[f32; 32], id: f32, mut l: Option<&mut [u8; 32]>) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for (j, &x) in xb.iter().enumerate() {
        let index = best_index(id * x);
        if let Some(l) = l.as_deref_mut() {
            l[j] = index;
        }
        let q = f32::from(IQ4NL_VALUES[usize::from(index)]);
        let w = weight[j];
        sumqx += w * q * x;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// `σ²` of a block: twice its mean square (`sigma2 *= 2.f/super_block_size` after the sum).
fn sigma2(x: &[f32]) -> f32 {
    let mut s = 0f32;
    for &v in x {
        s += v * v;
    }
    s * (2.0 / x.len() as f32)
}

/// A group's weights: `x²`, or with importance weights `qw` (the group's), `qw·sqrt(σ² + x²)`.
fn weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> [f32; 32] {
    let mut weight = [0f32; 32];
    match qw {
        Some(qw) => {
            for ((w, &x), &q) in weight.iter_mut().zip(xb).zip(qw) {
                *w = q * (sigma2 + x * x).sqrt();
            }
        }
        None => {
            for (w, &x) in weight.iter_mut().zip(xb) {
                *w = x * x;
            }
        }
    }
    weight
}

/// One group of 32 with its `weight`s: its scale (0 for a group below [`GROUP_MAX_EPS`],
/// whose `l` is left as it was), its levels at the first guess in `l`.
fn group_scale(xb: &[f32], weight: &[f32; 32], l: &mut [u8; 32], ntry: i32) -> f32 {
    let (mut amax, mut max) = (0f32, 0f32);
    for &x in xb {
        let ax = x.abs();
        if ax > amax {
            amax = ax;
            max = x;
        }
    }
    if amax < GROUP_MAX_EPS {
        return 0.0;
    }
    let v0 = f32::from(IQ4NL_VALUES[0]);
    let d = if ntry > 0 { -max / v0 } else { max / v0 };
    let (sumqx, sumq2) = sums(xb, weight, 1.0 / d, Some(l));
    let mut d = if sumq2 > 0.0 { sumqx / sumq2 } else { 0.0 };
    let mut best = d * sumqx;
    for itry in -ntry..=ntry {
        let id = (itry + i32::from(IQ4NL_VALUES[0])) as f32 / max;
        let (sumqx, sumq2) = sums(xb, weight, id, None);
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    d
}

/// [`best_index`] and the level it picks, without a branch or a table read, for lanes: the
/// search ends between levels `ml` and `ml + 1`, `ml` counting the levels 1..=14 at or below
/// `x` (the levels rise strictly); those two levels are made as sums of the steps up to them
/// (small integers: exact), and the two ends and NaN are selected apart. The same index as the
/// binary search for every float (a property).
#[inline(always)]
fn nearest_level(x: f32) -> (u8, f32) {
    let val = |i: usize| f32::from(IQ4NL_VALUES[i]);
    let (mut ml, mut lo, mut hi) = (0u8, val(0), val(1));
    for i in 1..15 {
        let above = val(i) <= x;
        ml += u8::from(above);
        lo += if above { val(i) - val(i - 1) } else { 0.0 };
        hi += if above { val(i + 1) - val(i) } else { 0.0 };
    }
    let (index, level) = if x - lo < hi - x {
        (ml, lo)
    } else {
        (ml + 1, hi)
    };
    if x <= val(0) {
        (0, val(0))
    } else if x >= val(15) || x.is_nan() {
        (15, val(15))
    } else {
        (index, level)
    }
}

/// [`group_scale`] with `ntry > 0` for `L` groups side by side, each lane the scalar search bit
/// for bit (its sums in element order, its choices its own); the levels at the first guess
/// are not kept (the callers with `ntry > 0` make them again from the scale).
#[inline(always)]
fn group_scales_lanes<const L: usize>(
    xb: &[[f32; 32]; L],
    weight: &[[f32; 32]; L],
    ntry: i32,
) -> [f32; L] {
    let mut xt = [[0f32; L]; 32];
    let mut wt = [[0f32; L]; 32];
    for k in 0..L {
        for j in 0..32 {
            xt[j][k] = xb[k][j];
            wt[j][k] = weight[k][j];
        }
    }
    let (mut amax, mut max) = ([0f32; L], [0f32; L]);
    for row in &xt {
        for k in 0..L {
            let ax = row[k].abs();
            if ax > amax[k] {
                amax[k] = ax;
                max[k] = row[k];
            }
        }
    }
    let sums = |id: &[f32; L]| {
        let (mut sumqx, mut sumq2) = ([0f32; L], [0f32; L]);
        for j in 0..32 {
            for k in 0..L {
                let x = xt[j][k];
                let (_, q) = nearest_level(id[k] * x);
                let w = wt[j][k];
                sumqx[k] += w * q * x;
                sumq2[k] += w * q * q;
            }
        }
        (sumqx, sumq2)
    };
    let v0 = f32::from(IQ4NL_VALUES[0]);
    let mut id = [0f32; L];
    for k in 0..L {
        // `d = -max / values[0]` (ntry > 0), then its inverse.
        id[k] = 1.0 / (-max[k] / v0);
    }
    let (sumqx, sumq2) = sums(&id);
    let (mut d, mut best) = ([0f32; L], [0f32; L]);
    for k in 0..L {
        d[k] = if sumq2[k] > 0.0 {
            sumqx[k] / sumq2[k]
        } else {
            0.0
        };
        best[k] = d[k] * sumqx[k];
    }
    for itry in -ntry..=ntry {
        let step = (itry + i32::from(IQ4NL_VALUES[0])) as f32;
        for k in 0..L {
            id[k] = step / max[k];
        }
        let (sumqx, sumq2) = sums(&id);
        for k in 0..L {
            let take = sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best[k] * sumq2[k];
            let s = sumqx[k] / sumq2[k];
            d[k] = if take { s } else { d[k] };
            best[k] = if take { s * sumqx[k] } else { best[k] };
        }
    }
    let mut out = [0f32; L];
    for k in 0..L {
        out[k] = if amax[k] < GROUP_MAX_EPS { 0.0 } else { d[k] };
    }
    out
}

/// Two 16-element halves of levels into 16 bytes.
fn pack(l: &[u8], q4: &mut [u8]) {
    for (j, q) in q4.iter_mut().enumerate() {
        *q = l[j] | (l[16 + j] << 4);
    }
}

/// IQ4_NL: one group of 32 per block. `l` carries over between blocks as ggml's does (it
/// matters only to `ntry <= 0` after a group of zeros, where ggml reuses the previous block's
/// levels; before any block ggml's are uninitialised, ours zero). `qw`: the row's importance
/// weights, if any.
pub(super) fn quantize_nl(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq4Nl], ntry: i32) {
    let mut l = [0u8; 32];
    // With `ntry > 0` each block's levels are made from its scale alone: eight blocks' searches
    // run side by side, the rest of the row one by one below.
    let mut done = 0;
    if ntry > 0 {
        for (ob, (xs, ys)) in x.chunks_exact(256).zip(out.chunks_exact_mut(8)).enumerate() {
            let groups: &[[f32; 32]; 8] =
                bytemuck::cast_ref(<&[f32; 256]>::try_from(xs).unwrap_or_else(|_| unreachable!()));
            let mut w = [[0f32; 32]; 8];
            for (j, (w, xb)) in w.iter_mut().zip(groups).enumerate() {
                let ib = 8 * ob + j;
                let qw = qw.map(|qw| &qw[32 * ib..32 * ib + 32]);
                let sigma2 = if qw.is_some() { sigma2(xb) } else { 0.0 };
                *w = weights(xb, qw, sigma2);
            }
            let scales = iq4_nl_scales(groups, &w, ntry);
            for ((xb, y), &scale) in groups.iter().zip(ys).zip(&scales) {
                y.d = to_half(scale);
                let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
                for (l, &x) in l.iter_mut().zip(xb) {
                    *l = best_index(id * x);
                }
                pack(&l, &mut y.qs);
            }
            done += 8;
        }
    }
    let x = &x[32 * done..];
    let qw = qw.map(|qw| &qw[32 * done..]);
    for (ib, (xb, y)) in x.chunks_exact(32).zip(&mut out[done..]).enumerate() {
        let qw = qw.map(|qw| &qw[32 * ib..32 * ib + 32]);
        // σ² is only read with importance weights.
        let sigma2 = if qw.is_some() { sigma2(xb) } else { 0.0 };
        let scale = group_scale(xb, &weights(xb, qw, sigma2), &mut l, ntry);
        y.d = to_half(scale);
        if ntry > 0 {
            let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
            for (l, &x) in l.iter_mut().zip(xb) {
                *l = best_index(id * x);
            }
        }
        pack(&l, &mut y.qs);
    }
}

crate::simd::avx2_or_baseline! {
    /// The eight groups' scales of an IQ4_XS block ([`group_scale`] with `ntry` 7), side by side.
    fn iq4_xs_scales<>(xb: &[[f32; 32]; 8], weight: &[[f32; 32]; 8]) -> [f32; 8] = iq4_xs_scales_lanes;
}

crate::simd::avx2_or_baseline! {
    /// Eight IQ4_NL blocks' scales ([`group_scale`] with `ntry` > 0), side by side.
    fn iq4_nl_scales<>(xb: &[[f32; 32]; 8], weight: &[[f32; 32]; 8], ntry: i32) -> [f32; 8] = iq4_nl_scales_lanes;
}

#[inline(always)]
fn iq4_nl_scales_lanes(xb: &[[f32; 32]; 8], weight: &[[f32; 32]; 8], ntry: i32) -> [f32; 8] {
    group_scales_lanes(xb, weight, ntry)
}

#[inline(always)]
fn iq4_xs_scales_lanes(xb: &[[f32; 32]; 8], weight: &[[f32; 32]; 8]) -> [f32; 8] {
    group_scales_lanes(xb, weight, 7)
}

/// IQ4_XS: eight groups of 32 per block, their scales on 6 bits against the block's. `qw`:
/// the row's importance weights, if any.
pub(super) fn quantize_xs(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq4Xs]) {
    let mut l = [0u8; 256];
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let qwl = qw.map(|qw| &qw[256 * ibl..256 * ibl + 256]);
        let sigma2 = if qwl.is_some() { sigma2(xbl) } else { 0.0 };
        let (mut max_scale, mut amax_scale) = (0f32, 0f32);
        // The eight groups' searches side by side (their levels are made again below).
        let groups: &[[f32; 32]; 8] =
            bytemuck::cast_ref(<&[f32; 256]>::try_from(xbl).unwrap_or_else(|_| unreachable!()));
        let mut w = [[0f32; 32]; 8];
        for (ib, (w, xb)) in w.iter_mut().zip(groups).enumerate() {
            *w = weights(xb, qwl.map(|qw| &qw[32 * ib..32 * ib + 32]), sigma2);
        }
        let scales = iq4_xs_scales(groups, &w);
        for scale in &scales {
            let abs_d = scale.abs();
            if abs_d > amax_scale {
                amax_scale = abs_d;
                max_scale = *scale;
            }
        }
        let d = -max_scale / 32.0;
        y.d = to_half(d);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut scales_h = 0u16;
        y.scales_l = [0; 4];
        for (ib, (xb, lb)) in xbl.chunks_exact(32).zip(l.chunks_exact_mut(32)).enumerate() {
            let ls = nearest_int(id * scales[ib]).clamp(-32, 31);
            let dl = d * ls as f32;
            let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
            for (l, &x) in lb.iter_mut().zip(xb) {
                *l = best_index(idl * x);
            }
            let ls = (ls + 32) as u8;
            y.scales_l[ib / 2] |= (ls & 0xf) << (4 * (ib % 2));
            scales_h |= u16::from(ls >> 4) << (2 * ib);
        }
        y.scales_h = U16::new(scales_h);
        for (l, q4) in l.chunks_exact(32).zip(y.qs.chunks_exact_mut(16)) {
            pack(l, q4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytemuck::Zeroable;
    use proptest::prelude::*;

    fn group() -> impl Strategy<Value = [f32; 32]> {
        let value = prop_oneof![
            6 => -1.0f32..1.0,
            1 => Just(0.0f32),
            1 => 0.0f32..1e-20,
            1 => prop::num::f32::ANY,
        ];
        prop::collection::vec(value, 32).prop_map(|v| v.try_into().unwrap())
    }

    proptest! {
        /// The branch-free level is the binary search's, for every float.
        #[test]
        fn nearest_level_is_the_binary_search(bits in any::<u32>(), level in 0usize..15) {
            let half = (f32::from(IQ4NL_VALUES[level]) + f32::from(IQ4NL_VALUES[level + 1])) / 2.0;
            for x in [f32::from_bits(bits), half, f32::from(IQ4NL_VALUES[level]), (bits % 300) as f32 - 150.0] {
                let (index, q) = nearest_level(x);
                prop_assert_eq!(index, best_index(x), "{}", x);
                prop_assert_eq!(q, f32::from(IQ4NL_VALUES[usize::from(index)]));
            }
        }

        /// A row of IQ4_NL blocks (eight at a time side by side, the rest one by one) is the
        /// blocks quantized one at a time, with and without weights.
        #[test]
        fn rows_are_their_blocks_one_by_one(groups in prop::collection::vec(group(), 8..26), weighted in any::<bool>()) {
            let x: Vec<f32> = groups.concat();
            let qw: Vec<f32> = (0..x.len()).map(|i| (i % 7) as f32 * 0.25).collect();
            let qw = weighted.then_some(&qw[..]);
            let n = groups.len();
            let mut row = vec![Iq4Nl::zeroed(); n];
            quantize_nl(&x, qw, &mut row, 7);
            for ib in 0..n {
                let mut one = [Iq4Nl::zeroed()];
                quantize_nl(&x[32 * ib..32 * ib + 32], qw.map(|q| &q[32 * ib..32 * ib + 32]), &mut one, 7);
                let finite = x[32 * ib..32 * ib + 32].iter().all(|v| v.is_finite());
                if finite {
                    prop_assert!(bytemuck::bytes_of(&one[0]) == bytemuck::bytes_of(&row[ib]), "block {}", ib);
                }
            }
        }

        /// The eight groups searched side by side give each group the scalar search's scale,
        /// bit for bit where the group is finite (a NaN's payload is the compiler's choice).
        #[test]
        fn lanes_are_the_scalar_search(groups in prop::collection::vec(group(), 8), weighted in any::<bool>()) {
            let xb: [[f32; 32]; 8] = std::array::from_fn(|k| groups[k]);
            let sigma2 = 0.3;
            let qw = [0.5f32; 32];
            let w: [[f32; 32]; 8] = std::array::from_fn(|k| weights(&xb[k], weighted.then_some(&qw[..]), sigma2));
            let got = group_scales_lanes(&xb, &w, 7);
            for k in 0..8 {
                let mut l = [0u8; 32];
                let want = group_scale(&xb[k], &w[k], &mut l, 7);
                let finite = xb[k].iter().chain(&w[k]).all(|v| v.is_finite());
                prop_assert!(
                    got[k].to_bits() == want.to_bits() || (!finite && got[k].is_nan() && want.is_nan()),
                    "group {}: {} {}", k, got[k], want
                );
            }
        }
    }
}
