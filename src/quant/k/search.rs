//! The searches for a sub-block's scale (and minimum) that ggml's K-quant reference quantizers
//! run, as `ggml-quants.c` computes them: the same float operations in the same order, the
//! same comparisons (a NaN never wins one), the same early exits. Only the variants on the
//! path of `ggml_quantize_chunk` without an importance matrix are here.

use crate::quant::c::nearest_int;

/// ggml's `GROUP_MAX_EPS`: a group whose largest |x| is below it is all zero.
pub(super) const GROUP_MAX_EPS: f32 = 1e-15;

/// The largest |x| of a group, and the value that has it (the first such; a NaN never).
fn signed_max(x: &[f32]) -> (f32, f32) {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    (amax, max)
}

/// `MAX(-nmax, MIN(nmax - 1, nearest_int(iscale * v)))`.
#[inline]
fn symmetric(iscale: f32, v: f32, nmax: i32) -> i32 {
    nearest_int(iscale * v).clamp(-nmax, nmax - 1)
}

/// `make_qx_quants(n, nmax, x, L, 1, NULL)` (Q6_K): quants `L` in `0..2 nmax` and the scale,
/// weighted by x², trying 18 scales around `-nmax / max` and keeping the best by
/// `sumlx² / suml2`. Returns 0 (and all quants 0) for a group below [`GROUP_MAX_EPS`].
pub(super) fn make_qx_quants<const N: usize>(nmax: i32, x: &[f32; N], ls: &mut [i8; N]) -> f32 {
    let (amax, max) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        ls.fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    // `-nmax / max`: the int negated, then converted.
    let iscale = -nmaxf / max;
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (out, &v) in ls.iter_mut().zip(x) {
        let l = symmetric(iscale, v, nmax);
        *out = (l + nmax) as i8;
        let w = v * v;
        let l = l as f32;
        sumlx += w * v * l;
        suml2 += w * l * l;
    }
    // `suml2 ? … : 0`: a NaN sum is true.
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        let iscale = -(nmaxf + 0.1 * is as f32) / max;
        let (mut sumlx, mut suml2) = (0f32, 0f32);
        for &v in x {
            let l = symmetric(iscale, v, nmax) as f32;
            let w = v * v;
            sumlx += w * v * l;
            suml2 += w * l * l;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (out, &v) in ls.iter_mut().zip(x) {
                *out = (symmetric(iscale, v, nmax) + nmax) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// `make_q3_quants(n, nmax, x, L, true)` (Q3_K): quants `L` in `0..2 nmax` from `-nmax / max`,
/// then up to five passes moving one quant at a time while that raises `sumlx² / suml2`
/// (weights x²). Returns the least-squares scale, 0 for a group below [`GROUP_MAX_EPS`] (its
/// quants then 0, not `nmax`).
pub(super) fn make_q3_quants<const N: usize>(nmax: i32, x: &[f32; N], ls: &mut [i8; N]) -> f32 {
    let (amax, max) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        ls.fill(0);
        return 0.0;
    }
    let iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (out, &v) in ls.iter_mut().zip(x) {
        let l = symmetric(iscale, v, nmax);
        *out = l as i8;
        let w = v * v;
        let l = l as f32;
        sumlx += w * v * l;
        suml2 += w * l * l;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (out, &v) in ls.iter_mut().zip(x) {
            let w = v * v;
            let li = f32::from(*out);
            let mut slx = sumlx - w * v * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != i32::from(*out) {
                    let nl = new_l as f32;
                    slx += w * v * nl;
                    sl2 += w * nl * nl;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *out = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for l in ls.iter_mut() {
        *l = l.wrapping_add(nmax as i8);
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// The parameters of one `make_qkx2_quants` call.
pub(super) struct Qkx2 {
    /// The largest quant.
    pub nmax: i32,
    /// The first scale tried, in quants beyond `nmax`…
    pub rmin: f32,
    /// …the step…
    pub rdelta: f32,
    /// …and the number of steps (`nstep + 1` scales are tried).
    pub nstep: i32,
    /// The error is Σ w |diff| (mean absolute deviation), else Σ w diff².
    pub use_mad: bool,
}

/// `make_qkx2_quants` (Q2_K, Q4_K, Q5_K): quants `L` in `0..=nmax` of `x - min` with
/// `min ≤ 0`, the scale and minimum from weighted least squares over `nstep + 1` trial
/// scales, the one with the least weighted error kept (the first of equals). Returns the
/// scale and the minimum negated (`the_min`, ≥ 0 or -0.0).
pub(super) fn make_qkx2_quants<const N: usize>(
    p: &Qkx2,
    x: &[f32; N],
    weights: &[f32; N],
    ls: &mut [u8; N],
) -> (f32, f32) {
    let Some((&x0, rest)) = x.split_first() else {
        return (0.0, 0.0);
    };
    let (mut min, mut max) = (x0, x0);
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x0;
    for (&v, &w) in rest.iter().zip(&weights[1..]) {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
        sum_w += w;
        sum_x += w * v;
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        ls.fill(0);
        return (0.0, -min);
    }
    let nmax = p.nmax;
    let nmaxf = nmax as f32;
    let iscale = nmaxf / (max - min);
    let mut scale = 1.0 / iscale;
    let error = |diff: f32| if p.use_mad { diff.abs() } else { diff * diff };
    let mut best_error = 0f32;
    for ((out, &v), &w) in ls.iter_mut().zip(x).zip(weights) {
        *out = nearest_int(iscale * (v - min)).clamp(0, nmax) as u8;
        let diff = scale * f32::from(*out) + min - v;
        best_error += w * error(diff);
    }
    if p.nstep < 1 {
        return (scale, -min);
    }
    let mut laux = [0u8; N];
    for is in 0..=p.nstep {
        let iscale = (p.rmin + p.rdelta * is as f32 + nmaxf) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for ((out, &v), &w) in laux.iter_mut().zip(x).zip(weights) {
            let l = nearest_int(iscale * (v - min)).clamp(0, nmax);
            *out = l as u8;
            let l = l as f32;
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * v;
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0f32;
            for ((&l, &v), &w) in laux.iter().zip(x).zip(weights) {
                let diff = this_scale * f32::from(l) + this_min - v;
                cur_error += w * error(diff);
            }
            if cur_error < best_error {
                *ls = laux;
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}
