//! The searches for a sub-block's scale (and minimum) that ggml's K-quant reference quantizers
//! run, as `ggml-quants.c` computes them: the same float operations in the same order, the
//! same comparisons (a NaN never wins one), the same early exits: the variants on the path of
//! `ggml_quantize_chunk` without an importance matrix, and those its `quantize_row_*_impl`
//! take with one (the weighted `make_qx_quants`, `make_qkx3_quants`, `make_qp_quants`).

use crate::c::nearest_int;
use crate::simd::avx2_or_baseline;

/// ggml's `GROUP_MAX_EPS`: a group whose largest |x| is below it is all zero.
pub(crate) const GROUP_MAX_EPS: f32 = 1e-15;

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
#[inline(always)]
fn symmetric(iscale: f32, v: f32, nmax: i32) -> i32 {
    nearest_int(iscale * v).min(nmax - 1).max(-nmax)
}

/// `MAX(0, MIN(nmax, nearest_int(iscale * (v - min))))`.
#[inline(always)]
fn asymmetric(iscale: f32, v: f32, min: f32, nmax: i32) -> i32 {
    nearest_int(iscale * (v - min)).min(nmax).max(0)
}

/// Σ terms, added in order from 0 (as C's loops add them). The terms themselves are computed
/// first, in a loop of their own that vectorises; only the additions stay in sequence.
#[inline(always)]
fn sum<const N: usize>(terms: &[f32; N]) -> f32 {
    terms.iter().fold(0.0, |sum, &t| sum + t)
}

/// `make_qx_quants(n, nmax, x, L, 1, NULL)` (Q6_K): quants `L` in `0..2 nmax` and the scale,
/// weighted by x², trying 18 scales around `-nmax / max` and keeping the best by
/// `sumlx² / suml2`. Returns 0 (and all quants 0) for a group below [`GROUP_MAX_EPS`].
/// The scalar form the lanes ([`make_qx_quants_lanes`]) are held to.
#[cfg(test)]
pub(crate) fn make_qx_quants<const N: usize>(nmax: i32, x: &[f32; N], ls: &mut [i8; N]) -> f32 {
    // rmse_type 1 without weights is `w = x[i] * x[i]`.
    let w: [f32; N] = std::array::from_fn(|i| x[i] * x[i]);
    qx_search(nmax, x, &w, ls)
}

/// `make_qx_quants(n, nmax, x, L, 1, qw)` with importance weights (Q4_0, Q5_0, Q3_K, Q6_K
/// with an imatrix): the same search, `w = qw[i]` in place of x².
pub(crate) fn make_qx_quants_weighted<const N: usize>(
    nmax: i32,
    x: &[f32; N],
    qw: &[f32; N],
    ls: &mut [i8; N],
) -> f32 {
    qx_search(nmax, x, qw, ls)
}

/// `make_qx_quants`'s search with rmse_type 1 and the weights `w` (whatever they are made
/// of: C's `w` is only ever read, per element, in `w*x[i]*l` and `w*l*l`).
#[inline(always)]
fn qx_search<const N: usize>(nmax: i32, x: &[f32; N], w: &[f32; N], ls: &mut [i8; N]) -> f32 {
    let (amax, max) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        ls.fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    // w x, as C's `w*x[i]*l` computes it before multiplying by l.
    let mut wx = [0f32; N];
    for i in 0..N {
        wx[i] = w[i] * x[i];
    }
    // Σ w x l and Σ w l² for the quants at `iscale`.
    let sums = |iscale: f32| {
        let (mut lx, mut l2) = ([0f32; N], [0f32; N]);
        for i in 0..N {
            let l = symmetric(iscale, x[i], nmax) as f32;
            lx[i] = wx[i] * l;
            l2[i] = w[i] * l * l;
        }
        (sum(&lx), sum(&l2))
    };
    // `-nmax / max`: the int negated, then converted.
    let iscale = -nmaxf / max;
    for (out, &v) in ls.iter_mut().zip(x) {
        *out = (symmetric(iscale, v, nmax) + nmax) as i8;
    }
    let (sumlx, suml2) = sums(iscale);
    // `suml2 ? … : 0`: a NaN sum is true.
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        let iscale = -(nmaxf + 0.1 * is as f32) / max;
        let (sumlx, suml2) = sums(iscale);
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

/// The largest |x| of each lane's group and the value that has it (the first such; a NaN
/// never), as [`signed_max`] finds it for one.
#[inline(always)]
fn signed_max_lanes<const N: usize, const L: usize>(xt: &[[f32; L]; N]) -> ([f32; L], [f32; L]) {
    let (mut amax, mut max) = ([0f32; L], [0f32; L]);
    for row in xt {
        for k in 0..L {
            let ax = row[k].abs();
            if ax > amax[k] {
                amax[k] = ax;
                max[k] = row[k];
            }
        }
    }
    (amax, max)
}

/// `x` element-major: `t[i][k]` is element `i` of group `k`. (Loops over arrays filled in
/// place: `array::from_fn` of arrays this size is kept out of line and copied.)
#[inline(always)]
fn transpose<const N: usize, const L: usize>(x: &[[f32; N]; L]) -> [[f32; L]; N] {
    let mut t = [[0f32; L]; N];
    for (k, group) in x.iter().enumerate() {
        for (i, &v) in group.iter().enumerate() {
            t[i][k] = v;
        }
    }
    t
}

/// Σ w x l and Σ w l² in each lane, added in element order.
#[inline(always)]
fn weighted_sums<const N: usize, const L: usize>(
    wx: &[[f32; L]; N],
    wt: &[[f32; L]; N],
    l: &[[i32; L]; N],
) -> ([f32; L], [f32; L]) {
    let (mut lx, mut l2) = ([0f32; L], [0f32; L]);
    for i in 0..N {
        for k in 0..L {
            let q = l[i][k] as f32;
            lx[k] += wx[i][k] * q;
            l2[k] += wt[i][k] * q * q;
        }
    }
    (lx, l2)
}

/// `symmetric(iscale, x, nmax)` of every element of every lane, into `l`.
#[inline(always)]
fn symmetric_lanes<const N: usize, const L: usize>(
    iscale: &[f32; L],
    xt: &[[f32; L]; N],
    nmax: i32,
    l: &mut [[i32; L]; N],
) {
    for (l, x) in l.iter_mut().zip(xt) {
        for k in 0..L {
            l[k] = symmetric(iscale[k], x[k], nmax);
        }
    }
}

avx2_or_baseline! {
    /// [`make_qx_quants`] for `L` groups at once, in lanes (see [`make_qkx2_quants_lanes`]).
    pub(crate) fn make_qx_quants_lanes<const N: usize, const L: usize>(
        nmax: i32,
        x: &[[f32; N]; L],
        ls: &mut [[i8; N]; L],
    ) -> [f32; L] = qx_quants_lanes;
}

#[inline(always)]
fn qx_quants_lanes<const N: usize, const L: usize>(
    nmax: i32,
    x: &[[f32; N]; L],
    ls: &mut [[i8; N]; L],
) -> [f32; L] {
    let w = x.map(|g| g.map(|v| v * v));
    qx_search_lanes(nmax, x, &w, ls)
}

avx2_or_baseline! {
    /// [`make_qx_quants_weighted`] for `L` groups at once, in lanes.
    pub(crate) fn make_qx_quants_weighted_lanes<const N: usize, const L: usize>(
        nmax: i32,
        x: &[[f32; N]; L],
        qw: &[[f32; N]; L],
        ls: &mut [[i8; N]; L],
    ) -> [f32; L] = qx_search_lanes;
}

/// `qx_search` for `L` groups side by side: each lane the scalar search, bit for bit.
#[inline(always)]
fn qx_search_lanes<const N: usize, const L: usize>(
    nmax: i32,
    x: &[[f32; N]; L],
    w: &[[f32; N]; L],
    ls: &mut [[i8; N]; L],
) -> [f32; L] {
    let xt = transpose(x);
    let wt = transpose(w);
    let (amax, max) = signed_max_lanes(&xt);
    let nmaxf = nmax as f32;
    let mut wx = [[0f32; L]; N];
    for i in 0..N {
        for k in 0..L {
            wx[i][k] = wt[i][k] * xt[i][k];
        }
    }
    let sums = |l: &[[i32; L]; N]| weighted_sums(&wx, &wt, l);
    let mut iscale = [0f32; L];
    for k in 0..L {
        iscale[k] = -nmaxf / max[k];
    }
    let mut best_l = [[0i32; L]; N];
    symmetric_lanes(&iscale, &xt, nmax, &mut best_l);
    let (sumlx, suml2) = sums(&best_l);
    // `suml2 ? … : 0`: a NaN sum is true.
    let (mut scale, mut best) = ([0f32; L], [0f32; L]);
    for k in 0..L {
        scale[k] = if suml2[k] != 0.0 {
            sumlx[k] / suml2[k]
        } else {
            0.0
        };
        best[k] = scale[k] * sumlx[k];
    }
    let mut l = [[0i32; L]; N];
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        let step = nmaxf + 0.1 * is as f32;
        for k in 0..L {
            iscale[k] = -step / max[k];
        }
        symmetric_lanes(&iscale, &xt, nmax, &mut l);
        let (sumlx, suml2) = sums(&l);
        let mut take = [false; L];
        for k in 0..L {
            take[k] = suml2[k] > 0.0 && sumlx[k] * sumlx[k] > best[k] * suml2[k];
        }
        for i in 0..N {
            for k in 0..L {
                best_l[i][k] = if take[k] { l[i][k] } else { best_l[i][k] };
            }
        }
        for k in 0..L {
            let s = sumlx[k] / suml2[k];
            scale[k] = if take[k] { s } else { scale[k] };
            best[k] = if take[k] { s * sumlx[k] } else { best[k] };
        }
    }
    let small: [bool; L] = std::array::from_fn(|k| amax[k] < GROUP_MAX_EPS);
    for (k, group) in ls.iter_mut().enumerate() {
        for (i, l) in group.iter_mut().enumerate() {
            *l = if small[k] {
                0
            } else {
                (best_l[i][k] + nmax) as i8
            };
        }
    }
    std::array::from_fn(|k| if small[k] { 0.0 } else { scale[k] })
}

avx2_or_baseline! {
    /// [`make_q3_quants`] for `L` groups at once, in lanes: the passes that move one quant at a
    /// time run in every lane still changing, each lane's own sums, choices and early stop kept.
    pub(super) fn make_q3_quants_lanes<const N: usize, const L: usize>(
        nmax: i32,
        x: &[[f32; N]; L],
        ls: &mut [[i8; N]; L],
    ) -> [f32; L] = q3_quants_lanes;
}

#[inline(always)]
fn q3_quants_lanes<const N: usize, const L: usize>(
    nmax: i32,
    x: &[[f32; N]; L],
    ls: &mut [[i8; N]; L],
) -> [f32; L] {
    let xt = transpose(x);
    let (amax, max) = signed_max_lanes(&xt);
    let mut lt = [[0i32; L]; N];
    let (mut sumlx, mut suml2) = ([0f32; L], [0f32; L]);
    for i in 0..N {
        for k in 0..L {
            let v = xt[i][k];
            let l = symmetric(-(nmax as f32) / max[k], v, nmax);
            lt[i][k] = l;
            let w = v * v;
            let l = l as f32;
            sumlx[k] += w * v * l;
            suml2[k] += w * l * l;
        }
    }
    // Lanes still in their passes (a lane stops after a pass that changed nothing).
    let mut active = [true; L];
    for _ in 0..5 {
        let mut changed = [false; L];
        for i in 0..N {
            for k in 0..L {
                let v = xt[i][k];
                let w = v * v;
                let li = lt[i][k] as i8 as f32;
                let mut slx = sumlx[k] - w * v * li;
                let mut sl2 = suml2[k] - w * li * li;
                let new_l = nearest_int(v * sl2 / slx).min(nmax - 1).max(-nmax);
                let nl = new_l as f32;
                slx += w * v * nl;
                sl2 += w * nl * nl;
                let take = active[k]
                    && sumlx[k] - w * v * li > 0.0
                    && new_l != lt[i][k] as i8 as i32
                    && sl2 > 0.0
                    && slx * slx * suml2[k] > sumlx[k] * sumlx[k] * sl2;
                lt[i][k] = if take { new_l } else { lt[i][k] };
                sumlx[k] = if take { slx } else { sumlx[k] };
                suml2[k] = if take { sl2 } else { suml2[k] };
                changed[k] |= take;
            }
        }
        active = changed;
        if !active.contains(&true) {
            break;
        }
    }
    let small: [bool; L] = std::array::from_fn(|k| amax[k] < GROUP_MAX_EPS);
    for (k, group) in ls.iter_mut().enumerate() {
        for (i, l) in group.iter_mut().enumerate() {
            *l = if small[k] {
                0
            } else {
                (lt[i][k] as i8).wrapping_add(nmax as i8)
            };
        }
    }
    std::array::from_fn(|k| {
        if !small[k] && suml2[k] > 0.0 {
            sumlx[k] / suml2[k]
        } else {
            0.0
        }
    })
}

/// `make_q3_quants(n, nmax, x, L, true)` (Q3_K): quants `L` in `0..2 nmax` from `-nmax / max`,
/// then up to five passes moving one quant at a time while that raises `sumlx² / suml2`
/// (weights x²). Returns the least-squares scale, 0 for a group below [`GROUP_MAX_EPS`] (its
/// quants then 0, not `nmax`).
/// The scalar form the lanes ([`make_q3_quants_lanes`]) are held to.
#[cfg(test)]
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
                let new_l = nearest_int(v * sl2 / slx).min(nmax - 1).max(-nmax);
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

/// Σ w |diff| (`use_mad`) or Σ w diff², diff = scale l + min - x, for the quants `l`.
#[inline(always)]
fn weighted_error<const N: usize>(
    use_mad: bool,
    x: &[f32; N],
    weights: &[f32; N],
    scale: f32,
    min: f32,
    l: &[u8; N],
) -> f32 {
    let mut terms = [0f32; N];
    for i in 0..N {
        let diff = scale * f32::from(l[i]) + min - x[i];
        terms[i] = weights[i] * if use_mad { diff.abs() } else { diff * diff };
    }
    sum(&terms)
}

/// The parameters of one `make_qkx2_quants` call.
pub(crate) struct Qkx2 {
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

impl Qkx2 {
    /// The search every `quantize_row_*_impl` with an importance matrix runs through
    /// `make_qkx3_quants(n, nmax, x, weights, L, &min, Laux, -0.9f, 0.05f, 36, false)` (Q4_1,
    /// Q5_1, Q2_K, Q4_K, Q5_K). With weights given, `make_qkx3_quants` is `make_qkx2_quants`
    /// operation for operation: the same sums, the same trial scales, the same error and the
    /// same first-of-equals choice; its one different test, `max <= min` for `max == min`,
    /// cannot tell them apart, since `max ≥ x[0] ≥ min` once `min` is at most 0 and a NaN
    /// fails both.
    pub(crate) const fn qkx3(nmax: i32) -> Qkx2 {
        Qkx2 {
            nmax,
            rmin: -0.9,
            rdelta: 0.05,
            nstep: 36,
            use_mad: false,
        }
    }
}

/// `make_qkx2_quants` (Q2_K, Q4_K, Q5_K): quants `L` in `0..=nmax` of `x - min` with
/// `min ≤ 0`, the scale and minimum from weighted least squares over `nstep + 1` trial
/// scales, the one with the least weighted error kept (the first of equals). Returns the
/// scale and the minimum negated (`the_min`, ≥ 0 or -0.0).
pub(crate) fn make_qkx2_quants<const N: usize>(
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
    for (out, &v) in ls.iter_mut().zip(x) {
        *out = asymmetric(iscale, v, min, nmax) as u8;
    }
    let mut best_error = weighted_error(p.use_mad, x, weights, scale, min, ls);
    if p.nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=p.nstep {
        let iscale = (p.rmin + p.rdelta * is as f32 + nmaxf) / (max - min);
        let mut laux = [0u8; N];
        // w l, as C's `w*l*l` and `w*l*x[i]` compute it first.
        let (mut wl, mut wl2, mut wlx) = ([0f32; N], [0f32; N], [0f32; N]);
        for i in 0..N {
            let l = asymmetric(iscale, x[i], min, nmax);
            laux[i] = l as u8;
            wl[i] = weights[i] * l as f32;
            wl2[i] = wl[i] * l as f32;
            wlx[i] = wl[i] * x[i];
        }
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..N {
            sum_l += wl[i];
            sum_l2 += wl2[i];
            sum_xl += wlx[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let cur_error = weighted_error(p.use_mad, x, weights, this_scale, this_min, &laux);
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

avx2_or_baseline! {
    /// [`make_qkx2_quants`] for `L` groups at once, each in a lane of its own: every step the scalar
    /// search takes for one group is taken for all of them side by side (the sums still added in
    /// element order within each lane, the comparisons made per lane, the early exit and every
    /// `if` a per-lane choice), so that each lane's results are the scalar search's bit for bit
    /// while the arithmetic runs `L` wide. The K-quants search 8 or 16 groups a super-block.
    pub(crate) fn make_qkx2_quants_lanes<const N: usize, const L: usize>(
        p: &Qkx2,
        x: &[[f32; N]; L],
        weights: &[[f32; N]; L],
        ls: &mut [[u8; N]; L],
    ) -> [(f32, f32); L] = qkx2_quants_lanes;
}

#[inline(always)]
fn qkx2_quants_lanes<const N: usize, const L: usize>(
    p: &Qkx2,
    x: &[[f32; N]; L],
    weights: &[[f32; N]; L],
    ls: &mut [[u8; N]; L],
) -> [(f32, f32); L] {
    let xt = transpose(x);
    let wt = transpose(weights);
    let (mut min, mut max) = (xt[0], xt[0]);
    let mut sum_w = wt[0];
    let mut sum_x = [0f32; L];
    for k in 0..L {
        sum_x[k] = sum_w[k] * xt[0][k];
    }
    for i in 1..N {
        for k in 0..L {
            let (v, w) = (xt[i][k], wt[i][k]);
            min[k] = if v < min[k] { v } else { min[k] };
            max[k] = if v > max[k] { v } else { max[k] };
            sum_w[k] += w;
            sum_x[k] += w * v;
        }
    }
    for m in &mut min {
        *m = if *m > 0.0 { 0.0 } else { *m };
    }
    // A flat group returns at once, with these.
    let mut flat = [false; L];
    for k in 0..L {
        flat[k] = max[k] == min[k];
    }
    let flat_min = min;
    let nmax = p.nmax;
    let nmaxf = nmax as f32;
    let mut iscale = [0f32; L];
    let mut scale = [0f32; L];
    for k in 0..L {
        iscale[k] = nmaxf / (max[k] - min[k]);
        scale[k] = 1.0 / iscale[k];
    }
    let mut best = [[0i32; L]; N];
    asymmetric_lanes(&iscale, &xt, &min, nmax, &mut best);
    let mut best_error = weighted_error_lanes(p.use_mad, &xt, &wt, &scale, &min, &best);
    let mut laux = [[0i32; L]; N];
    if p.nstep >= 1 {
        for is in 0..=p.nstep {
            let step = p.rmin + p.rdelta * is as f32 + nmaxf;
            for k in 0..L {
                iscale[k] = step / (max[k] - min[k]);
            }
            asymmetric_lanes(&iscale, &xt, &min, nmax, &mut laux);
            let (mut sum_l, mut sum_l2, mut sum_xl) = ([0f32; L], [0f32; L], [0f32; L]);
            for i in 0..N {
                for k in 0..L {
                    let l = laux[i][k] as f32;
                    let wl = wt[i][k] * l;
                    sum_l[k] += wl;
                    sum_l2[k] += wl * l;
                    sum_xl[k] += wl * xt[i][k];
                }
            }
            let mut this_scale = [0f32; L];
            let mut this_min = [0f32; L];
            let mut positive = [false; L];
            for k in 0..L {
                let d = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
                positive[k] = d > 0.0;
                let s = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / d;
                let m = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / d;
                (this_scale[k], this_min[k]) = if m > 0.0 {
                    (sum_xl[k] / sum_l2[k], 0.0)
                } else {
                    (s, m)
                };
            }
            let cur_error =
                weighted_error_lanes(p.use_mad, &xt, &wt, &this_scale, &this_min, &laux);
            let mut take = [false; L];
            for k in 0..L {
                take[k] = positive[k] && cur_error[k] < best_error[k];
            }
            for i in 0..N {
                for k in 0..L {
                    best[i][k] = if take[k] { laux[i][k] } else { best[i][k] };
                }
            }
            for k in 0..L {
                best_error[k] = if take[k] { cur_error[k] } else { best_error[k] };
                scale[k] = if take[k] { this_scale[k] } else { scale[k] };
                min[k] = if take[k] { this_min[k] } else { min[k] };
            }
        }
    }
    for (k, group) in ls.iter_mut().enumerate() {
        for (i, l) in group.iter_mut().enumerate() {
            *l = if flat[k] { 0 } else { best[i][k] as u8 };
        }
    }
    let mut out = [(0f32, 0f32); L];
    for k in 0..L {
        out[k] = if flat[k] {
            (0.0, -flat_min[k])
        } else {
            (scale[k], -min[k])
        };
    }
    out
}

/// `asymmetric(iscale, x, min, nmax)` of every element of every lane, into `l`.
#[inline(always)]
fn asymmetric_lanes<const N: usize, const L: usize>(
    iscale: &[f32; L],
    xt: &[[f32; L]; N],
    min: &[f32; L],
    nmax: i32,
    l: &mut [[i32; L]; N],
) {
    for (l, x) in l.iter_mut().zip(xt) {
        for k in 0..L {
            l[k] = asymmetric(iscale[k], x[k], min[k], nmax);
        }
    }
}

/// Σ w diff² (or Σ w |diff|), diff = scale l + min - x, in element order in each lane.
#[inline(always)]
fn weighted_error_lanes<const N: usize, const L: usize>(
    use_mad: bool,
    xt: &[[f32; L]; N],
    wt: &[[f32; L]; N],
    scale: &[f32; L],
    min: &[f32; L],
    l: &[[i32; L]; N],
) -> [f32; L] {
    let mut total = [0f32; L];
    for i in 0..N {
        for k in 0..L {
            let diff = scale[k] * l[i][k] as f32 + min[k] - xt[i][k];
            total[k] += wt[i][k] * if use_mad { diff.abs() } else { diff * diff };
        }
    }
    total
}

/// `make_qp_quants(n, nmax, x, L, quant_weights)` (the sub-block scales and minimums of Q2_K,
/// Q4_K and Q5_K with an importance matrix): quants of `x ≥ 0` in `0..=nmax` on a scale
/// chosen among 9 by the weighted squared error, then up to five passes moving one quant at a
/// time while that raises `sumlx² / suml2`. Returns the least-squares scale, 0 (all quants
/// 0) when the largest `x` is below [`GROUP_MAX_EPS`].
///
/// The quants are C's: `L` is `uint8_t` and the `int` quants are only capped above (`MIN(nmax,
/// l)`), so a negative `x` (a scale ggml's search can give) leaves its low byte in `L`, which
/// the later passes read back as that byte (`w*x[i]*L[i]`), while the sums themselves are of
/// the `int`.
pub(crate) fn make_qp_quants<const N: usize>(
    nmax: i32,
    x: &[f32; N],
    ls: &mut [u8; N],
    qw: &[f32; N],
) -> f32 {
    // `max = MAX(max, x[i])`, the macro `max > x[i] ? max : x[i]`: a NaN x is taken, and the
    // next element replaces it.
    let mut max = 0f32;
    for &v in x {
        max = if max > v { max } else { v };
    }
    // A NaN max passes on.
    if max < GROUP_MAX_EPS {
        ls.fill(0);
        return 0.0;
    }
    let nmaxf = nmax as f32;
    // Error Σ w diff² of the quants `l` at `scale`: `w*diff*diff`, in that order.
    let mse = |scale: f32, l: &[i32; N]| {
        let mut terms = [0f32; N];
        for i in 0..N {
            let diff = x[i] - scale * l[i] as f32;
            terms[i] = qw[i] * diff * diff;
        }
        sum(&terms)
    };
    let mut iscale = nmaxf / max;
    // The first quants are uncapped, but stored in bytes, and read back as bytes.
    let first: [i32; N] = std::array::from_fn(|i| i32::from(nearest_int(iscale * x[i]) as u8));
    let mut best_mse = mse(1.0 / iscale, &first);
    for is in -4..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1 * is as f32 + nmaxf) / max;
        let l: [i32; N] = std::array::from_fn(|i| nearest_int(iscale_is * x[i]).min(nmax));
        let this = mse(1.0 / iscale_is, &l);
        if this < best_mse {
            best_mse = this;
            iscale = iscale_is;
        }
    }
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for i in 0..N {
        let l = nearest_int(iscale * x[i]).min(nmax);
        ls[i] = l as u8;
        let (w, l) = (qw[i], l as f32);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for _ in 0..5 {
        let mut changed = false;
        for i in 0..N {
            let w = qw[i];
            let li = f32::from(ls[i]);
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != i32::from(ls[i]) {
                    let nl = new_l as f32;
                    slx += w * x[i] * nl;
                    sl2 += w * nl * nl;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        ls[i] = new_l as u8;
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
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// The weights every `quantize_row_*_impl` but Q6_K's gives its search with an importance
/// matrix: `qw[l] * sqrtf(sigma2 + x[l]*x[l])` for each element of a (sub-)block, and their
/// sum (`sumw += weight[l]` from 0, in order), which the K-quants weigh the sub-block by.
#[inline(always)]
pub(crate) fn imatrix_weights<const N: usize>(
    x: &[f32; N],
    qw: &[f32; N],
    sigma2: f32,
) -> ([f32; N], f32) {
    let w: [f32; N] = std::array::from_fn(|l| qw[l] * (sigma2 + x[l] * x[l]).sqrt());
    (w, sum(&w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Groups of ordinary values, and of the ones where the choices matter: all equal (the
    /// early exit), all positive (the minimum held at 0), tiny, huge, infinite and NaN, with
    /// weights of any sign, zero included.
    fn group<const N: usize>() -> impl Strategy<Value = ([f32; N], [f32; N])> {
        let value = prop_oneof![
            6 => -1.0f32..1.0,
            1 => Just(0.25f32),
            1 => 0.0f32..1e-20,
            1 => prop::num::f32::ANY,
        ];
        let weight = prop_oneof![4 => 0.0f32..2.0, 1 => Just(0.0f32), 1 => prop::num::f32::ANY];
        (
            prop::collection::vec(value, N),
            prop::collection::vec(weight, N),
            any::<u8>(),
        )
            .prop_map(|(x, w, shape)| {
                let mut x: [f32; N] = x.try_into().unwrap();
                match shape % 8 {
                    0 => x = [x[0]; N],
                    1 => x.iter_mut().for_each(|v| *v = v.abs() + 0.5),
                    _ => {}
                }
                (x, w.try_into().unwrap())
            })
    }

    /// The same floats: bit for bit where the group and its weights are finite; where they
    /// are not, a NaN may come out with another payload (x86 keeps the payload of the first
    /// operand of a sum or product, and which one is first is the compiler's choice for
    /// commutative operations, in the lanes, in the scalar code and in ggml's C alike), so
    /// NaN matches NaN there.
    fn same(a: &[f32], b: &[f32], x: &[f32], w: &[f32]) -> bool {
        let finite = x.iter().chain(w).all(|v| v.is_finite());
        (a.iter().zip(b))
            .all(|(a, b)| a.to_bits() == b.to_bits() || (!finite && a.is_nan() && b.is_nan()))
    }

    fn lanes_are_scalar<const N: usize, const L: usize>(
        p: &Qkx2,
        groups: &[([f32; N], [f32; N])],
    ) -> Result<(), TestCaseError> {
        let x: [[f32; N]; L] = std::array::from_fn(|k| groups[k].0);
        let w: [[f32; N]; L] = std::array::from_fn(|k| groups[k].1);
        let mut ls = [[0u8; N]; L];
        let got = make_qkx2_quants_lanes(p, &x, &w, &mut ls);
        for k in 0..L {
            let mut l = [0u8; N];
            let want = make_qkx2_quants(p, &x[k], &w[k], &mut l);
            prop_assert_eq!(ls[k], l, "group {} quants", k);
            prop_assert!(
                same(&[got[k].0, got[k].1], &[want.0, want.1], &x[k], &w[k]),
                "group {} scale and minimum {:?} {:?}",
                k,
                got[k],
                want
            );
        }
        Ok(())
    }

    /// Each lane of the symmetric searches against the scalar search of its group.
    fn symmetric_lanes_are_scalar<const N: usize, const L: usize>(
        groups: &[([f32; N], [f32; N])],
        lanes: impl Fn(&[[f32; N]; L], &[[f32; N]; L], &mut [[i8; N]; L]) -> [f32; L],
        scalar: impl Fn(&[f32; N], &[f32; N], &mut [i8; N]) -> f32,
    ) -> Result<(), TestCaseError> {
        let x: [[f32; N]; L] = std::array::from_fn(|k| groups[k].0);
        let w: [[f32; N]; L] = std::array::from_fn(|k| groups[k].1);
        let mut ls = [[0i8; N]; L];
        let got = lanes(&x, &w, &mut ls);
        for k in 0..L {
            let mut l = [0i8; N];
            let want = scalar(&x[k], &w[k], &mut l);
            prop_assert_eq!(ls[k], l, "group {} quants", k);
            prop_assert!(
                same(&[got[k]], &[want], &x[k], &w[k]),
                "group {} scale {} {}",
                k,
                got[k],
                want
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// `make_qx_quants` (Q6_K), its weighted form (Q6_K, Q3_K with an importance matrix)
        /// and `make_q3_quants` (Q3_K), in lanes: each group's quants and scale bit for bit.
        #[test]
        fn symmetric_lanes_are_the_scalar_searches(g16 in prop::collection::vec(group::<16>(), 16)) {
            for nmax in [32, 4] {
                symmetric_lanes_are_scalar::<16, 16>(
                    &g16,
                    |x, _, l| make_qx_quants_lanes(nmax, x, l),
                    |x, _, l| make_qx_quants(nmax, x, l),
                )?;
                symmetric_lanes_are_scalar::<16, 16>(
                    &g16,
                    |x, w, l| make_qx_quants_weighted_lanes(nmax, x, w, l),
                    |x, w, l| make_qx_quants_weighted(nmax, x, w, l),
                )?;
            }
            symmetric_lanes_are_scalar::<16, 16>(
                &g16,
                |x, _, l| make_q3_quants_lanes(4, x, l),
                |x, _, l| make_q3_quants(4, x, l),
            )?;
        }

        /// The lanes give each group the scalar search's quants, scale and minimum, bit for
        /// bit, with every parameter set the K-quants use.
        #[test]
        fn qkx2_lanes_are_the_scalar_search(
            g32 in prop::collection::vec(group::<32>(), 8),
            g16 in prop::collection::vec(group::<16>(), 16),
        ) {
            let q2 = Qkx2 { nmax: 3, rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: true };
            let q4 = Qkx2 { nmax: 15, rmin: -1.0, rdelta: 0.1, nstep: 20, use_mad: false };
            let q5 = Qkx2 { nmax: 31, rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: false };
            lanes_are_scalar::<16, 16>(&q2, &g16)?;
            lanes_are_scalar::<16, 16>(&Qkx2::qkx3(3), &g16)?;
            lanes_are_scalar::<32, 8>(&q4, &g32)?;
            lanes_are_scalar::<32, 8>(&q5, &g32)?;
            lanes_are_scalar::<32, 8>(&Qkx2::qkx3(15), &g32)?;
            lanes_are_scalar::<32, 8>(&Qkx2::qkx3(31), &g32)?;
        }
    }
}
