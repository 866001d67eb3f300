//! Per-tensor statistics of the values (dequantized where needed), computed streaming: memory
//! stays bounded whatever the tensor's size (one chunk of values a thread).
//!
//! The values are summarised a chunk at a time, each chunk in two passes while it is in the
//! cache (its mean, then its squared deviations from it), in lanes that the compiler
//! vectorises; the chunks' summaries are then merged in order (Chan, Golub and LeVeque's
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

/// The first pass's lanes: counts and extremes (4-byte lanes only, so that the loop
/// vectorises: the f64 sums are a pass of their own).
struct First {
    finite: [u32; LANES],
    min: [f32; LANES],
    max: [f32; LANES],
    nan: [u32; LANES],
    zero: [u32; LANES],
}

impl Default for First {
    fn default() -> First {
        First {
            finite: [0; LANES],
            min: [f32::INFINITY; LANES],
            max: [f32::NEG_INFINITY; LANES],
            nan: [0; LANES],
            zero: [0; LANES],
        }
    }
}

impl First {
    // One index across the run and every lane array: the shape the vectoriser takes.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn add(&mut self, run: &[f32; LANES]) {
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
    /// The summary of `values`: three passes (counts and extremes, the sum, the squared
    /// deviations from the mean), each in [`LANES`] lanes. Each value is classified
    /// from its bits (exponent all ones: not finite; and a mantissa: NaN), so that every step
    /// is a lane-wise integer or float operation with no branch.
    fn of(values: &[f32]) -> Part {
        #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { Part::of_avx2(values) };
        }
        Part::of_lanes(values)
    }

    /// [`Part::of`] compiled for AVX2: twice the lanes a vector holds, the same operations in
    /// the same order in each lane, so the same bits.
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    #[target_feature(enable = "avx2")]
    fn of_avx2(values: &[f32]) -> Part {
        Part::of_lanes(values)
    }

    #[inline(always)]
    fn of_lanes(values: &[f32]) -> Part {
        let lanes = values.chunks_exact(LANES);
        // The last run padded with NaNs, which count for nothing but `nan` (taken off below).
        let mut last = [f32::NAN; LANES];
        last[..lanes.remainder().len()].copy_from_slice(lanes.remainder());
        let pad = (LANES - values.len() % LANES) % LANES;
        let runs = || {
            let whole = lanes
                .clone()
                .map(|r| <&[f32; LANES]>::try_from(r).unwrap_or(&last));
            whole.chain(std::iter::once(&last).filter(|_| pad > 0))
        };
        let mut first = First::default();
        for run in runs() {
            first.add(run);
        }
        let mut sum = [0f64; LANES];
        for run in runs() {
            for i in 0..LANES {
                let v = run[i];
                sum[i] += if is_finite(v) { f64::from(v) } else { 0.0 };
            }
        }
        let n: u64 = first.finite.iter().map(|&c| u64::from(c)).sum();
        let count = values.len() as u64;
        let nan = first.nan.iter().map(|&c| u64::from(c)).sum::<u64>() - pad as u64;
        let mean = if n > 0 {
            sum.iter().sum::<f64>() / n as f64
        } else {
            0.0
        };
        let mut m2 = [0f64; LANES];
        for run in runs() {
            for i in 0..LANES {
                let v = run[i];
                let d = f64::from(v) - mean;
                m2[i] += if is_finite(v) { d * d } else { 0.0 };
            }
        }
        Part {
            count,
            finite: n,
            mean,
            m2: m2.iter().sum(),
            min: first.min.iter().copied().fold(f32::INFINITY, f32::min),
            max: first.max.iter().copied().fold(f32::NEG_INFINITY, f32::max),
            nan,
            inf: count - n - nan,
            zero: first.zero.iter().map(|&c| u64::from(c)).sum(),
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

    /// Chunked and merged, the statistics are those of the whole, computed directly in f64:
    /// counts and extremes exactly, mean and deviation to rounding.
    #[test]
    fn chunks_merged_give_the_whole() {
        let value = prop_oneof![
            8 => -1e6f32..1e6,
            1 => Just(0.0f32),
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
            let one = |p: Part| [p.mean.to_bits(), p.m2.to_bits(), u64::from(p.min.to_bits()), u64::from(p.max.to_bits()), p.finite, p.nan, p.zero];
            prop_assert_eq!(one(Part::of(&values)), one(Part::of_lanes(&values)));
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
                let n = finite.len() as f64;
                let mean = finite.iter().sum::<f64>() / n;
                let var = finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
                prop_assert_eq!(merged.min, finite.iter().copied().fold(f64::INFINITY, f64::min));
                prop_assert_eq!(merged.max, finite.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                prop_assert!((merged.mean - mean).abs() <= 1e-9 * (1.0 + mean.abs()), "{} {}", merged.mean, mean);
                prop_assert!((merged.std - var.sqrt()).abs() <= 1e-6 * (1.0 + var.sqrt()), "{} {}", merged.std, var.sqrt());
            }
        });
    }
}
