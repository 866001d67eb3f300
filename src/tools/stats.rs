//! Per-tensor statistics of the values (dequantized where needed), computed streaming: memory
//! stays bounded whatever the tensor's size.

use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::quant::GgmlType;

/// Values dequantized at once.
const CHUNK_ELEMENTS: usize = 1 << 16;

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

/// Running sums, in f64, by Welford's method (stable for large counts).
#[derive(Default)]
struct Running {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    nan: u64,
    inf: u64,
    zero: u64,
    count: u64,
}

impl Running {
    fn add(&mut self, values: &[f32]) {
        for &v in values {
            self.count += 1;
            if v.is_nan() {
                self.nan += 1;
                continue;
            }
            if v.is_infinite() {
                self.inf += 1;
                continue;
            }
            if v == 0.0 {
                self.zero += 1;
            }
            let v = f64::from(v);
            if self.n == 0 || v < self.min {
                self.min = v;
            }
            if self.n == 0 || v > self.max {
                self.max = v;
            }
            self.n += 1;
            let delta = v - self.mean;
            self.mean += delta / self.n as f64;
            self.m2 += delta * (v - self.mean);
        }
    }

    fn finish(self) -> Stats {
        let none = self.n == 0;
        Stats {
            count: self.count,
            min: if none { f64::NAN } else { self.min },
            max: if none { f64::NAN } else { self.max },
            mean: if none { f64::NAN } else { self.mean },
            std: if none {
                f64::NAN
            } else {
                (self.m2 / self.n as f64).sqrt()
            },
            nan: self.nan,
            inf: self.inf,
            zero: self.zero,
        }
    }
}

/// The statistics of tensor `index`'s values.
pub fn tensor_stats<B: AsRef<[u8]>>(file: &Gguf<B>, index: usize) -> Result<Stats> {
    let data = file.tensor_data(index)?;
    let info = &file.header().tensor_infos[index];
    let ty = GgmlType::from_id(info.ggml_type).ok_or_else(|| Error::Tensor {
        index,
        name: info.name.to_string(),
        source: TensorError::UnknownType(info.ggml_type),
    })?;
    let (block_bytes, block_elements) = (ty.type_size() as usize, ty.block_size() as usize);
    let blocks_per_chunk = (CHUNK_ELEMENTS / block_elements).max(1);
    let mut values = vec![0f32; blocks_per_chunk * block_elements];
    let mut running = Running::default();
    for chunk in data.chunks(blocks_per_chunk * block_bytes) {
        let n = chunk.len() / block_bytes * block_elements;
        crate::quant::dequantize(ty, chunk, file.header().byte_order, &mut values[..n]).map_err(
            |e| Error::Tensor {
                index,
                name: info.name.to_string(),
                source: e.into(),
            },
        )?;
        running.add(&values[..n]);
    }
    Ok(running.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_those_of_the_finite_values() {
        let mut r = Running::default();
        r.add(&[1.0, 2.0, 3.0, f32::NAN, f32::INFINITY, 0.0, -0.0]);
        let s = r.finish();
        assert_eq!((s.count, s.nan, s.inf, s.zero), (7, 1, 1, 2));
        assert_eq!((s.min, s.max), (0.0, 3.0));
        assert!((s.mean - 1.2).abs() < 1e-12);
        assert!((s.std - (6.8f64 / 5.0).sqrt()).abs() < 1e-12);
    }
}
