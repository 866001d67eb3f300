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
    for (ib, (xb, y)) in x.chunks_exact(32).zip(out).enumerate() {
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

/// IQ4_XS: eight groups of 32 per block, their scales on 6 bits against the block's. `qw`:
/// the row's importance weights, if any.
pub(super) fn quantize_xs(x: &[f32], qw: Option<&[f32]>, out: &mut [Iq4Xs]) {
    let mut l = [0u8; 256];
    let mut scales = [0f32; 8];
    for (ibl, (xbl, y)) in x.chunks_exact(256).zip(out).enumerate() {
        let qwl = qw.map(|qw| &qw[256 * ibl..256 * ibl + 256]);
        let sigma2 = if qwl.is_some() { sigma2(xbl) } else { 0.0 };
        let (mut max_scale, mut amax_scale) = (0f32, 0f32);
        for (ib, ((xb, lb), scale)) in (xbl.chunks_exact(32))
            .zip(l.chunks_exact_mut(32))
            .zip(&mut scales)
            .enumerate()
        {
            let lb: &mut [u8; 32] = lb.try_into().unwrap_or_else(|_| unreachable!());
            let qw = qwl.map(|qw| &qw[32 * ib..32 * ib + 32]);
            *scale = group_scale(xb, &weights(xb, qw, sigma2), lb, 7);
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
