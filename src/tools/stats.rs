//! Per-tensor statistics of the values (dequantized where needed), computed streaming: memory
//! stays bounded whatever the tensor's size (one chunk of values a thread).
//!
//! The values are summarised a chunk at a time, each chunk in one pass while it is in the
//! cache (the sums of its values' deviations from a shift taken from the chunk, and of their
//! squares), in lanes that the compiler vectorises; the chunks' summaries are then merged in order (Chan, Golub and LeVeque's
//! pairwise update). The result depends on the chunking alone, which is fixed, so it is the
//! same for every thread count.

use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::quant::GgmlType;

/// Values summarised at once (a multiple of every block size, so that chunks are whole
/// blocks).
const CHUNK_ELEMENTS: usize = 1 << 16;

/// Accumulators run side by side: independent sums the compiler keeps in vector registers.
const LANES: usize = 8;

/// What a tensor's values are like.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Values.
    pub count: u64,
    /// Smallest finite value (NaN when there is none).
    pub min: f64,
    /// Largest finite value (NaN when there is none).
    pub max: f64,
    /// Mean of the finite values.
    pub mean: f64,
    /// Standard deviation of the finite values (population).
    pub std: f64,
    /// NaN values.
    pub nan: u64,
    /// Infinite values.
    pub inf: u64,
    /// Values equal to zero (either sign).
    pub zero: u64,
}

/// A run of values summarised: counts, extremes, and the mean and sum of squared deviations
/// of the finite ones.
#[derive(Clone, Copy, Debug)]
struct Part {
    count: u64,
    finite: u64,
    mean: f64,
    m2: f64,
    min: f32,
    max: f32,
    nan: u64,
    inf: u64,
    zero: u64,
}

/// The exponent bits of an f32: all ones for the infinities and NaNs.
const EXPONENT: u32 = 0x7f80_0000;

#[inline(always)]
fn is_finite(v: f32) -> bool {
    v.to_bits() & 0x7fff_ffff < EXPONENT
}

/// The lanes of a run's summary: counts and extremes, and the sums of the deviations of the
/// finite values from the run's shift and of their squares. Lane `i` takes the values at
/// positions `i`, `i + LANES`, …: independent chains that a vector holds side by side.
struct Lanes {
    finite: [u32; LANES],
    min: [f32; LANES],
    max: [f32; LANES],
    nan: [u32; LANES],
    zero: [u32; LANES],
    sum: [f64; LANES],
    squares: [f64; LANES],
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes {
            finite: [0; LANES],
            min: [f32::INFINITY; LANES],
            max: [f32::NEG_INFINITY; LANES],
            nan: [0; LANES],
            zero: [0; LANES],
            sum: [0.0; LANES],
            squares: [0.0; LANES],
        }
    }
}

impl Lanes {
    /// Adds `values` (a whole number of runs of [`LANES`]): the declared path, which every
    /// other is equal to bit for bit. Each value is classified from its bits (exponent all
    /// ones: not finite; and a mantissa: NaN), so every step is a lane-wise select.
    // One index across the run and every lane array: the shape the vectoriser takes.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn add(&mut self, values: &[f32], shift: f64) {
        // Two loops, not one: LLVM does not vectorise a loop that mixes these 4-byte lanes
        // with the 8-byte lanes of the sums.
        for run in values.chunks_exact(LANES) {
            for i in 0..LANES {
                let v = run[i];
                let magnitude = v.to_bits() & 0x7fff_ffff;
                let ok = magnitude < EXPONENT;
                self.finite[i] += u32::from(ok);
                let low = if ok { v } else { f32::INFINITY };
                let high = if ok { v } else { f32::NEG_INFINITY };
                self.min[i] = if low < self.min[i] { low } else { self.min[i] };
                self.max[i] = if high > self.max[i] {
                    high
                } else {
                    self.max[i]
                };
                self.nan[i] += u32::from(magnitude > EXPONENT);
                self.zero[i] += u32::from(magnitude == 0);
            }
        }
        for run in values.chunks_exact(LANES) {
            for i in 0..LANES {
                let v = run[i];
                let d = if is_finite(v) {
                    f64::from(v) - shift
                } else {
                    0.0
                };
                self.sum[i] += d;
                self.squares[i] += d * d;
            }
        }
    }

    /// [`Lanes::add`] in AVX2 registers (LLVM leaves the f64 sums scalar, with a branch a
    /// lane): the same operation in each lane in the same order (a multiply then an add, no
    /// fused multiply-add), so the same bits.
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    #[target_feature(enable = "avx2")]
    fn add_avx2(&mut self, values: &[f32], shift: f64) {
        use std::arch::x86_64::*;
        let exponent = _mm256_set1_epi32(EXPONENT as i32);
        let magnitude_bits = _mm256_set1_epi32(0x7fff_ffff);
        let (inf, neg_inf) = (
            _mm256_set1_ps(f32::INFINITY),
            _mm256_set1_ps(f32::NEG_INFINITY),
        );
        let shift = _mm256_set1_pd(shift);
        // SAFETY (every load and store below): each pointer is to an array of LANES (8)
        // elements, or to a run of LANES values from `chunks_exact`, and reads or writes
        // 8 f32/u32 or twice 4 f64 in it; the unaligned forms are used.
        let (mut finite, mut nan, mut zero, mut min, mut max) = unsafe {
            (
                _mm256_loadu_si256(self.finite.as_ptr().cast()),
                _mm256_loadu_si256(self.nan.as_ptr().cast()),
                _mm256_loadu_si256(self.zero.as_ptr().cast()),
                _mm256_loadu_ps(self.min.as_ptr()),
                _mm256_loadu_ps(self.max.as_ptr()),
            )
        };
        let (mut sum, mut squares) = unsafe {
            (
                [
                    _mm256_loadu_pd(self.sum.as_ptr()),
                    _mm256_loadu_pd(self.sum.as_ptr().add(4)),
                ],
                [
                    _mm256_loadu_pd(self.squares.as_ptr()),
                    _mm256_loadu_pd(self.squares.as_ptr().add(4)),
                ],
            )
        };
        for run in values.chunks_exact(LANES) {
            let v = unsafe { _mm256_loadu_ps(run.as_ptr()) };
            let magnitude = _mm256_and_si256(_mm256_castps_si256(v), magnitude_bits);
            // All ones in the lanes that are finite: the integer compare is signed, and
            // both sides are below 2^31.
            let ok = _mm256_cmpgt_epi32(exponent, magnitude);
            finite = _mm256_sub_epi32(finite, ok);
            nan = _mm256_sub_epi32(nan, _mm256_cmpgt_epi32(magnitude, exponent));
            zero = _mm256_sub_epi32(zero, _mm256_cmpeq_epi32(magnitude, _mm256_setzero_si256()));
            let okf = _mm256_castsi256_ps(ok);
            // minps / maxps: the first operand where it compares less (greater), else the
            // second, which is `add`'s select.
            min = _mm256_min_ps(_mm256_blendv_ps(inf, v, okf), min);
            max = _mm256_max_ps(_mm256_blendv_ps(neg_inf, v, okf), max);
            let halves = [
                (
                    _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                    _mm256_cvtepi32_epi64(_mm256_castsi256_si128(ok)),
                ),
                (
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)),
                    _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(ok)),
                ),
            ];
            for (h, (wide, keep)) in halves.into_iter().enumerate() {
                let d = _mm256_and_pd(_mm256_sub_pd(wide, shift), _mm256_castsi256_pd(keep));
                sum[h] = _mm256_add_pd(sum[h], d);
                squares[h] = _mm256_add_pd(squares[h], _mm256_mul_pd(d, d));
            }
        }
        unsafe {
            _mm256_storeu_si256(self.finite.as_mut_ptr().cast(), finite);
            _mm256_storeu_si256(self.nan.as_mut_ptr().cast(), nan);
            _mm256_storeu_si256(self.zero.as_mut_ptr().cast(), zero);
            _mm256_storeu_ps(self.min.as_mut_ptr(), min);
            _mm256_storeu_ps(self.max.as_mut_ptr(), max);
            for h in 0..2 {
                _mm256_storeu_pd(self.sum.as_mut_ptr().add(4 * h), sum[h]);
                _mm256_storeu_pd(self.squares.as_mut_ptr().add(4 * h), squares[h]);
            }
        }
    }
}

/// Finite values whose mean is the shift of a run's one-pass sums.
const SAMPLE: usize = 256;

/// The mean of the first [`SAMPLE`] finite values (0 when there is none). The mean of the
/// run's finite values lies within `sqrt(m2 / k)` of the mean of any k of them, so the sum
/// of squares of the deviations from this shift is at most `1 + n / SAMPLE` times `m2`: for
/// a chunk of [`CHUNK_ELEMENTS`], the subtraction that gives `m2` loses under 9 bits of f64's 53.
fn shift_of(values: &[f32]) -> f64 {
    let (mut sum, mut k) = (0f64, 0usize);
    for &v in values.iter().filter(|v| is_finite(**v)).take(SAMPLE) {
        sum += f64::from(v);
        k += 1;
    }
    if k == 0 {
        0.0
    } else {
        sum / k as f64
    }
}

impl Default for Part {
    fn default() -> Part {
        Part {
            count: 0,
            finite: 0,
            mean: 0.0,
            m2: 0.0,
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            nan: 0,
            inf: 0,
            zero: 0,
        }
    }
}

impl Part {
    /// The summary of `values`: one pass in [`LANES`] lanes (counts, extremes, and the sums
    /// of the deviations from a shift and of their squares), in AVX2 registers where the
    /// processor has them.
    fn of(values: &[f32]) -> Part {
        #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
        return Part::summarise(values, std::is_x86_feature_detected!("avx2"));
        #[cfg(not(all(target_arch = "x86_64", not(ggufrw_portable))))]
        Part::summarise(values, false)
    }

    /// [`Part::of`] by the declared path alone.
    #[cfg(test)]
    fn of_lanes(values: &[f32]) -> Part {
        Part::summarise(values, false)
    }

    /// `avx2`: the processor has AVX2 (asked by the caller).
    fn summarise(values: &[f32], avx2: bool) -> Part {
        let shift = shift_of(values);
        let mut lanes = Lanes::default();
        let mut add = |values: &[f32]| {
            #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
            if avx2 {
                // SAFETY: `avx2` is true only where the processor has AVX2.
                return unsafe { lanes.add_avx2(values, shift) };
            }
            let _ = avx2;
            lanes.add(values, shift)
        };
        let whole = values.len() / LANES * LANES;
        add(&values[..whole]);
        // The last run padded with NaNs, which count for nothing but `nan` (taken off below).
        let pad = (LANES - values.len() % LANES) % LANES;
        if pad > 0 {
            let mut last = [f32::NAN; LANES];
            last[..values.len() - whole].copy_from_slice(&values[whole..]);
            add(&last);
        }
        let n: u64 = lanes.finite.iter().map(|&c| u64::from(c)).sum();
        let count = values.len() as u64;
        let nan = lanes.nan.iter().map(|&c| u64::from(c)).sum::<u64>() - pad as u64;
        let (mean, m2) = if n > 0 {
            let sum: f64 = lanes.sum.iter().sum();
            let squares: f64 = lanes.squares.iter().sum();
            (
                shift + sum / n as f64,
                (squares - sum * (sum / n as f64)).max(0.0),
            )
        } else {
            (0.0, 0.0)
        };
        Part {
            count,
            finite: n,
            mean,
            m2,
            min: lanes.min.iter().copied().fold(f32::INFINITY, f32::min),
            max: lanes.max.iter().copied().fold(f32::NEG_INFINITY, f32::max),
            nan,
            inf: count - n - nan,
            zero: lanes.zero.iter().map(|&c| u64::from(c)).sum(),
        }
    }

    /// This run followed by `next`.
    fn then(self, next: &Part) -> Part {
        let n = self.finite + next.finite;
        let (mean, m2) = if next.finite == 0 {
            (self.mean, self.m2)
        } else if self.finite == 0 {
            (next.mean, next.m2)
        } else {
            let (a, b) = (self.finite as f64, next.finite as f64);
            let delta = next.mean - self.mean;
            (
                self.mean + delta * (b / n as f64),
                self.m2 + next.m2 + delta * delta * (a * b / n as f64),
            )
        };
        Part {
            count: self.count + next.count,
            finite: n,
            mean,
            m2,
            min: self.min.min(next.min),
            max: self.max.max(next.max),
            nan: self.nan + next.nan,
            inf: self.inf + next.inf,
            zero: self.zero + next.zero,
        }
    }

    fn finish(self) -> Stats {
        let none = self.finite == 0;
        let or_nan = |v: f64| if none { f64::NAN } else { v };
        Stats {
            count: self.count,
            min: or_nan(f64::from(self.min)),
            max: or_nan(f64::from(self.max)),
            mean: or_nan(self.mean),
            std: or_nan((self.m2 / self.finite as f64).sqrt()),
            nan: self.nan,
            inf: self.inf,
            zero: self.zero,
        }
    }
}

/// The statistics of tensor `index`'s values.
pub fn tensor_stats<B: AsRef<[u8]>>(file: &Gguf<B>, index: usize) -> Result<Stats> {
    tensor_stats_threads(file, index, 1)
}

/// [`tensor_stats`] on up to `threads` threads (0: every processor); the same result for
/// every count.
pub fn tensor_stats_threads<B: AsRef<[u8]>>(
    file: &Gguf<B>,
    index: usize,
    threads: usize,
) -> Result<Stats> {
    let data = file.tensor_data(index)?;
    let info = &file.header().tensor_infos[index];
    let fail = |source: TensorError| Error::Tensor {
        index,
        name: info.name.to_string(),
        source,
    };
    let ty = GgmlType::from_id(info.ggml_type)
        .ok_or_else(|| fail(TensorError::UnknownType(info.ggml_type)))?;
    let (block_bytes, block_elements) = (ty.type_size() as usize, ty.block_size() as usize);
    let chunk_bytes = (CHUNK_ELEMENTS / block_elements).max(1) * block_bytes;
    let chunks: Vec<&[u8]> = data.chunks(chunk_bytes).collect();
    let order = file.header().byte_order;
    // Each thread summarises a run of whole chunks into its own parts, in chunk order.
    let summarise = |run: &[&[u8]]| -> std::result::Result<Vec<Part>, TensorError> {
        let mut values = vec![0f32; chunk_bytes / block_bytes * block_elements];
        (run.iter())
            .map(|chunk| {
                let n = chunk.len() / block_bytes * block_elements;
                crate::quant::dequantize(ty, chunk, order, &mut values[..n])?;
                Ok(Part::of(&values[..n]))
            })
            .collect()
    };
    let n = crate::quant::thread_count(threads).min(chunks.len()).max(1);
    let runs: Vec<&[&[u8]]> = (0..n)
        .map(|k| &chunks[chunks.len() * k / n..chunks.len() * (k + 1) / n])
        .collect();
    let parts: Vec<_> = std::thread::scope(|scope| {
        let others: Vec<_> = (runs[1..].iter())
            .map(|run| scope.spawn(|| summarise(run)))
            .collect();
        let mut parts = vec![summarise(runs[0])];
        for h in others {
            parts.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        parts
    });
    let mut total = Part::default();
    for run in parts {
        for part in run.map_err(fail)? {
            total = total.then(&part);
        }
    }
    Ok(total.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every field of a summary as bits: two summaries compared bit for bit.
    fn bits(p: Part) -> [u64; 8] {
        [
            p.mean.to_bits(),
            p.m2.to_bits(),
            u64::from(p.min.to_bits()),
            u64::from(p.max.to_bits()),
            p.finite,
            p.nan,
            p.zero,
            p.inf,
        ]
    }

    /// The mean and population variance of `values` by two passes in f64: the reference.
    fn two_passes(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
        let n = values.clone().count() as f64;
        let mean = values.clone().sum::<f64>() / n;
        (mean, values.map(|v| (v - mean).powi(2)).sum::<f64>() / n)
    }

    #[test]
    fn sums_are_those_of_the_finite_values() {
        let s = Part::of(&[1.0, 2.0, 3.0, f32::NAN, f32::INFINITY, 0.0, -0.0]).finish();
        assert_eq!((s.count, s.nan, s.inf, s.zero), (7, 1, 1, 2));
        assert_eq!((s.min, s.max), (0.0, 3.0));
        assert!((s.mean - 1.2).abs() < 1e-12);
        assert!((s.std - (6.8f64 / 5.0).sqrt()).abs() < 1e-12);
        let none = Part::of(&[f32::NAN, f32::NEG_INFINITY]).finish();
        assert_eq!((none.count, none.nan, none.inf, none.zero), (2, 1, 1, 0));
        assert!(none.min.is_nan() && none.max.is_nan() && none.mean.is_nan() && none.std.is_nan());
    }

    /// The one-pass sums lose few digits even where the values sit far from zero with a small
    /// spread, and the shift's sample is the farthest it can be from the mean (the bound in
    /// [`shift_of`]): the deviation is that of two passes in f64, to 1e-9.
    #[test]
    fn a_small_spread_far_from_zero_keeps_its_digits() {
        let values: Vec<f32> = (0..CHUNK_ELEMENTS)
            .map(|i| match i {
                0..SAMPLE => 1e6 + 1000.0,
                _ => 1e6 + (i % 17) as f32 * 0.0625,
            })
            .collect();
        let (mean, var) = two_passes(values.iter().map(|&v| f64::from(v)));
        let s = Part::of(&values).finish();
        assert!((s.mean - mean).abs() <= 1e-9 * mean, "{} {}", s.mean, mean);
        assert!(
            (s.std - var.sqrt()).abs() <= 1e-9 * var.sqrt(),
            "{} {}",
            s.std,
            var.sqrt()
        );
    }

    /// The summary of a run is the declared path's, bit for bit, on a palette where lanes
    /// tie: signed zeros, subnormals, the non-finite values (the finite values all of one sign,
    /// so that a minimum or a maximum is often a zero of either sign).
    #[test]
    fn the_vector_path_is_the_declared_one_where_values_tie() {
        let value = prop::sample::select(vec![
            0.0f32,
            -0.0,
            1e-45,
            1.5,
            f32::MAX,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]);
        let config = ProptestConfig::with_cases(256);
        proptest!(config, |(values in prop::collection::vec(value, 0..80), negate: bool)| {
            let values: Vec<f32> = values.into_iter().map(|v| if negate { -v } else { v }).collect();
            prop_assert_eq!(bits(Part::of(&values)), bits(Part::of_lanes(&values)));
        });
    }

    /// Chunked and merged, the statistics are those of the whole, computed directly in f64:
    /// counts and extremes exactly, mean and deviation to rounding.
    #[test]
    fn chunks_merged_give_the_whole() {
        let value = prop_oneof![
            8 => -1e6f32..1e6,
            1 => Just(0.0f32),
            1 => Just(-0.0f32),
            1 => -1e-40f32..1e-40,
            1 => Just(f32::NAN),
            1 => Just(f32::INFINITY),
            1 => Just(f32::NEG_INFINITY),
        ];
        let config = ProptestConfig::with_cases(64);
        proptest!(config, |(values in prop::collection::vec(value, 0..300), cuts in prop::collection::vec(0usize..300, 0..6))| {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(values.len())).collect();
            cuts.push(0);
            cuts.push(values.len());
            cuts.sort_unstable();
            // The AVX2 build of a chunk's summary (where the processor has it) is the portable
            // one, bit for bit.
            prop_assert_eq!(bits(Part::of(&values)), bits(Part::of_lanes(&values)));
            let merged = (cuts.windows(2))
                .map(|w| Part::of(&values[w[0]..w[1]]))
                .fold(Part::default(), |a, b| a.then(&b))
                .finish();
            let finite: Vec<f64> = values.iter().filter(|v| v.is_finite()).map(|&v| f64::from(v)).collect();
            prop_assert_eq!(merged.count, values.len() as u64);
            prop_assert_eq!(merged.nan, values.iter().filter(|v| v.is_nan()).count() as u64);
            prop_assert_eq!(merged.inf, values.iter().filter(|v| v.is_infinite()).count() as u64);
            prop_assert_eq!(merged.zero, values.iter().filter(|&&v| v == 0.0).count() as u64);
            if finite.is_empty() {
                prop_assert!(merged.mean.is_nan() && merged.min.is_nan());
            } else {
                let (mean, var) = two_passes(finite.iter().copied());
                prop_assert_eq!(merged.min, finite.iter().copied().fold(f64::INFINITY, f64::min));
                prop_assert_eq!(merged.max, finite.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                prop_assert!((merged.mean - mean).abs() <= 1e-9 * (1.0 + mean.abs()), "{} {}", merged.mean, mean);
                prop_assert!((merged.std - var.sqrt()).abs() <= 1e-6 * (1.0 + var.sqrt()), "{} {}", merged.std, var.sqrt());
            }
        });
    }
}
