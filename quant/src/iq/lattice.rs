//! What ggml's grid quantizers search (`iq2xs_init_impl`, `iq3xs_init_impl`): for every
//! pattern of level indices a quantizer can form, either its place in the grid (`kmap`) or the
//! list of grid entries nearest to it (`kneighbors`). Built once per grid, on first use, with
//! ggml's distances and ggml's order, so that the searches try the same candidates in the same
//! order.

use super::tables::{IQ1S_WORDS, IQ2S_WORDS, IQ2XS_WORDS, IQ2XXS_WORDS, IQ3S_WORDS, IQ3XXS_WORDS};
use std::sync::OnceLock;

/// A grid of patterns of `D` elements and its neighbour lists.
pub(super) struct Lattice<const D: usize> {
    /// Each entry's level indices (ggml's quantizers hold each element as `2l + 1`).
    levels: Vec<[u8; D]>,
    /// For each packed word: the entry (≥ 0), or `-(start + 1)` for a word off the grid whose
    /// neighbour list starts at `start` (ggml's encoding), or [`UNREACHABLE`].
    map: Vec<i32>,
    /// Neighbour lists, each its length then the entries, nearest first.
    neighbours: Vec<u16>,
}

/// A packed word with a level index no quantizer forms (the 2-bit words of a 3-level grid
/// holding a 3): ggml lists neighbours for those too, never to be asked for them.
const UNREACHABLE: i32 = i32::MIN;

/// Where a pattern is.
pub(super) enum Place<'a> {
    /// On the grid, at this entry.
    On(usize),
    /// Off the grid: these entries are its nearest (never empty).
    Off(&'a [u16]),
}

impl<const D: usize> Lattice<D> {
    /// The grid of packed `words` (`bits` per level index, `levels` levels per element), each
    /// pattern off it given the entries at its `nwant` smallest distances.
    fn build(words: &[u16], bits: u32, levels: u16, nwant: usize) -> Self {
        assert!((1..=3).contains(&nwant));
        let mask = (1u16 << bits) - 1;
        let digits = |w: u16| -> [u8; D] {
            std::array::from_fn(|i| ((w >> (bits * i as u32)) & mask) as u8)
        };
        let grid: Vec<[u8; D]> = words.iter().map(|&w| digits(w)).collect();
        let mut map = vec![UNREACHABLE; 1 << (bits * D as u32)];
        for (k, &w) in words.iter().enumerate() {
            map[usize::from(w)] = k as i32;
        }
        let mut neighbours = Vec::new();
        let mut dist: Vec<(i32, u16)> = Vec::with_capacity(words.len());
        for (w, slot) in map.iter_mut().enumerate() {
            let pos = digits(w as u16);
            if *slot != UNREACHABLE || pos.iter().any(|&l| u16::from(l) >= levels) {
                continue;
            }
            // ggml: the squared distance between the patterns as 2l + 1, the entries sorted by
            // (distance, index), taken up to the nwant-th distinct distance.
            dist.clear();
            dist.extend(grid.iter().enumerate().map(|(j, g)| {
                let d2 = (g.iter().zip(&pos))
                    .map(|(&a, &b)| {
                        let diff = (2 * i32::from(a) + 1) - (2 * i32::from(b) + 1);
                        diff * diff
                    })
                    .sum::<i32>();
                (d2, j as u16)
            }));
            // Only the entries at the nwant smallest distinct distances survive that walk: keep
            // those before sorting.
            let mut smallest = [i32::MAX; 3];
            let smallest = &mut smallest[..nwant];
            for &(d2, _) in &dist {
                if d2 < smallest[nwant - 1] && !smallest.contains(&d2) {
                    smallest[nwant - 1] = d2;
                    smallest.sort_unstable();
                }
            }
            let threshold = (smallest.iter().copied())
                .filter(|&d| d != i32::MAX)
                .max()
                .unwrap_or(i32::MAX);
            dist.retain(|&(d2, _)| d2 <= threshold);
            dist.sort_unstable();
            let start = neighbours.len();
            neighbours.push(0);
            let (mut d2, mut nhave) = (dist[0].0, 1);
            for &(dj, j) in &dist {
                if dj > d2 {
                    if nhave == nwant {
                        break;
                    }
                    d2 = dj;
                    nhave += 1;
                }
                neighbours.push(j);
            }
            neighbours[start] = (neighbours.len() - start - 1) as u16;
            *slot = -(start as i32 + 1);
        }
        Lattice {
            levels: grid,
            map,
            neighbours,
        }
    }

    /// Where the pattern of packed `word` is.
    pub(super) fn place(&self, word: u16) -> Place<'_> {
        let m = self.map[usize::from(word)];
        if m >= 0 {
            Place::On(m as usize)
        } else {
            // The quantizers clamp each level index to the grid's levels.
            assert!(m != UNREACHABLE, "a level index beyond the grid's levels");
            let start = (-(m + 1)) as usize;
            let n = usize::from(self.neighbours[start]);
            Place::Off(&self.neighbours[start + 1..start + 1 + n])
        }
    }

    /// Entries in the grid.
    pub(super) fn len(&self) -> usize {
        self.levels.len()
    }

    /// Entry `k`'s level indices.
    pub(super) fn levels(&self, k: usize) -> &[u8; D] {
        &self.levels[k]
    }

    /// Entry `k`'s level indices, to `l`.
    pub(super) fn copy_levels(&self, k: usize, l: &mut [i8]) {
        for (l, &g) in l.iter_mut().zip(&self.levels[k]) {
            *l = g as i8;
        }
    }

    /// The entry of a pattern the quantizers have put on the grid (ggml aborts, "Oops: found
    /// point not on grid", where it is not; every path here leads to an entry, but should one
    /// not, its nearest entry stands in).
    pub(super) fn entry(&self, word: u16) -> usize {
        match self.place(word) {
            Place::On(k) => k,
            Place::Off(candidates) => usize::from(candidates[0]),
        }
    }

    /// ggml's `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: of `candidates`, the one
    /// nearest `xval` at `scale` (weighted squared distance, the first of equals); its level
    /// indices go to `l`. Where no distance is below `FLT_MAX` (all NaN or infinite: infinite
    /// weights), ggml aborts (`GGML_ASSERT(grid_index >= 0)`); we take the first candidate.
    pub(super) fn best_neighbour(
        &self,
        candidates: &[u16],
        xval: &[f32],
        weight: &[f32],
        scale: f32,
        l: &mut [i8],
    ) -> usize {
        let mut best_d2 = f32::MAX;
        let mut found = None;
        for &j in candidates {
            let pg = &self.levels[usize::from(j)];
            let mut d2 = 0f32;
            for i in 0..D {
                let q = (2 * i32::from(pg[i]) + 1) as f32;
                let diff = scale * q - xval[i];
                d2 += weight[i] * diff * diff;
            }
            if d2 < best_d2 {
                best_d2 = d2;
                found = Some(usize::from(j));
            }
        }
        let k = found.unwrap_or(usize::from(candidates[0]));
        self.copy_levels(k, l);
        k
    }
}

/// The IQ2_XXS grid's search (two nearest distances).
pub(super) fn iq2xxs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ2XXS_WORDS, 2, 3, 2))
}

/// The IQ2_XS grid's search (two nearest distances).
pub(super) fn iq2xs() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ2XS_WORDS, 2, 3, 2))
}

/// The IQ2_S grid's search (ggml: nearest distance only).
pub(super) fn iq2s() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ2S_WORDS, 2, 3, 1))
}

/// The IQ1_S / IQ1_M grid's search (three nearest distances).
pub(super) fn iq1s() -> &'static Lattice<8> {
    static L: OnceLock<Lattice<8>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ1S_WORDS, 2, 3, 3))
}

/// The IQ3_XXS grid's search (two nearest distances).
pub(super) fn iq3xxs() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ3XXS_WORDS, 3, 8, 2))
}

/// The IQ3_S grid's search (three nearest distances).
pub(super) fn iq3s() -> &'static Lattice<4> {
    static L: OnceLock<Lattice<4>> = OnceLock::new();
    L.get_or_init(|| Lattice::build(&IQ3S_WORDS, 3, 8, 3))
}

/// A group's magnitudes, and one sign byte per 8 values (bit `i` set where value `i` is not
/// `>= 0`, NaN included), as ggml's IQ quantizers split a group before their grid search.
pub(super) fn magnitudes_and_signs<const N: usize, const B: usize>(
    xb: &[f32],
) -> ([f32; N], [u8; B]) {
    let mut xval = [0f32; N];
    let mut signs = [0u8; B];
    for (k, s) in signs.iter_mut().enumerate() {
        for i in 0..8 {
            let v = xb[8 * k + i];
            if v >= 0.0 {
                xval[8 * k + i] = v;
            } else {
                xval[8 * k + i] = -v;
                *s |= 1 << i;
            }
        }
    }
    (xval, signs)
}

/// Where a sign byte of `signs` has an odd count of minus signs, the element of its 8 with the
/// least `weight·x²` is taken as positive instead (its magnitude in `xval` negated, its bit
/// cleared): the 7-bit sign codes of IQ2_XXS, IQ2_XS and IQ3_XXS hold even patterns only.
/// Each byte is then cut to those 7 bits.
pub(super) fn make_signs_even(xb: &[f32], weight: &[f32], xval: &mut [f32], signs: &mut [u8]) {
    for (k, s) in signs.iter_mut().enumerate() {
        if s.count_ones() % 2 != 0 {
            let e = |i: usize| weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
            // The first of equals; a NaN never replaces the minimum (ggml's `ax < min`).
            let (mut imin, mut min) = (0, e(0));
            for i in 1..8 {
                let ax = e(i);
                if ax < min {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            *s ^= 1 << imin;
        }
        *s &= 127;
    }
}

/// The packed word of level indices, `BITS` bits each: the key of a grid pattern.
pub(super) fn word<const BITS: u32>(l: &[i8]) -> u16 {
    (l.iter().enumerate()).fold(0, |u, (i, &l)| u | ((l as u16) << (BITS as usize * i)))
}

/// The level nearest `x` at inverse scale `id`: `nearest_int(0.5f*(id*x-1))` clamped to
/// `0..k_max`.
pub(super) fn level(id: f32, x: f32, k_max: i32) -> i8 {
    super::super::c::nearest_int(0.5 * (id * x - 1.0)).clamp(0, k_max - 1) as i8
}

/// `Σ w·x·q` and `Σ w·q²` of a group at levels `l` (`q = 2l + 1`), in C's order.
pub(super) fn sums<const N: usize>(weight: &[f32; N], xval: &[f32; N], l: &[i8; N]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0f32, 0f32);
    for i in 0..N {
        let w = weight[i];
        let q = (2 * i32::from(l[i]) + 1) as f32;
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml's construction as written: every entry's distance, all of them sorted by
    /// (distance, index), walked to the nwant-th distinct distance.
    fn literal<const D: usize>(words: &[u16], bits: u32, levels: u16, nwant: usize) -> Lattice<D> {
        let mask = (1u16 << bits) - 1;
        let digit = |w: u16, i: usize| ((w >> (bits * i as u32)) & mask) as i32;
        let mut map = vec![UNREACHABLE; 1 << (bits * D as u32)];
        for (k, &w) in words.iter().enumerate() {
            map[usize::from(w)] = k as i32;
        }
        let mut neighbours = Vec::new();
        for w in 0..map.len() {
            let w = w as u16;
            if map[usize::from(w)] >= 0 || (0..D).any(|i| digit(w, i) >= i32::from(levels)) {
                continue;
            }
            let mut dist: Vec<(i32, u16)> = (words.iter().enumerate())
                .map(|(j, &g)| {
                    let d2 = (0..D)
                        .map(|i| (2 * digit(g, i) - 2 * digit(w, i)).pow(2))
                        .sum();
                    (d2, j as u16)
                })
                .collect();
            dist.sort();
            let start = neighbours.len();
            neighbours.push(0);
            let (mut d2, mut nhave) = (dist[0].0, 1);
            for (dj, j) in dist {
                if dj > d2 {
                    if nhave == nwant {
                        break;
                    }
                    d2 = dj;
                    nhave += 1;
                }
                neighbours.push(j);
            }
            neighbours[start] = (neighbours.len() - start - 1) as u16;
            map[usize::from(w)] = -(start as i32 + 1);
        }
        let levels = (words.iter())
            .map(|&w| std::array::from_fn(|i| digit(w, i) as u8))
            .collect();
        Lattice {
            levels,
            map,
            neighbours,
        }
    }

    fn same<const D: usize>(a: &Lattice<D>, b: &Lattice<D>) {
        assert!(a.levels == b.levels, "levels differ");
        for w in 0..a.map.len() {
            assert_eq!(
                a.map[w] == UNREACHABLE,
                b.map[w] == UNREACHABLE,
                "word {w:#x}"
            );
            if a.map[w] == UNREACHABLE {
                continue;
            }
            let list = |l: &Lattice<D>| match l.place(w as u16) {
                Place::On(k) => vec![k as u16],
                Place::Off(c) => c.to_vec(),
            };
            assert_eq!(list(a), list(b), "word {w:#x}");
        }
        assert!(a.neighbours == b.neighbours, "neighbour storage differs");
    }

    #[test]
    fn the_neighbour_lists_are_ggmls() {
        same(iq3xxs(), &literal(&IQ3XXS_WORDS, 3, 8, 2));
        same(iq3s(), &literal(&IQ3S_WORDS, 3, 8, 3));
        same(iq2s(), &literal(&IQ2S_WORDS, 2, 3, 1));
        same(iq1s(), &literal(&IQ1S_WORDS, 2, 3, 3));
        same(iq2xxs(), &literal(&IQ2XXS_WORDS, 2, 3, 2));
        same(iq2xs(), &literal(&IQ2XS_WORDS, 2, 3, 2));
    }

    #[test]
    fn grid_patterns_are_their_own_place() {
        let lat = iq3s();
        for (k, &w) in IQ3S_WORDS.iter().enumerate() {
            assert!(matches!(lat.place(w), Place::On(j) if j == k));
        }
        // Level indices 0, 0, 0, 7 (off the grid): its neighbours, nearest first.
        let Place::Off(candidates) = iq3xxs().place(7 << 9) else {
            panic!("on the grid")
        };
        assert!(!candidates.is_empty());
    }
}
