//! Parameter counts and size labels, exactly as gguf-py computes them.
//!
//! [`count`] is `GGUFWriter.get_total_parameter_count` (gguf-py 0.19.0, `gguf_writer.py`) and
//! [`size_label`] / [`rounded_notation`] are `size_label` / `model_weight_count_rounded_notation`
//! (`utility.py`): llama.cpp's converter names files and fills `general.size_label` with them.
//!
//! gguf-py sees shapes in numpy order, the reverse of GGUF's `ne` order that
//! [`TensorInfo::dimensions`] holds: its `shape[-1]` is `ne[0]`, `shape[-2]` is `ne[1]` and
//! `shape[-3]` is `ne[2]`.
//!
//! ```
//! use ggufrw::params::{count_shapes, size_label};
//!
//! // A mixture of 8 experts: an expert tensor's ne[2] is its expert count.
//! let tensors: [(&str, &[u64]); 2] = [
//!     ("token_embd.weight", &[4096, 400_000]),
//!     ("blk.0.ffn_up_exps.weight", &[4096, 14336, 8]),
//! ];
//! let p = count_shapes(tensors)?;
//! assert_eq!((p.shared, p.expert, p.expert_count), (1_638_400_000, 58_720_256, 8));
//! assert_eq!(p.size_label(), "8x1.7B");
//! assert_eq!(size_label(46_702_792_704, 1_604_853_760, 5_637_144_576, 8), "8x7.2B");
//! # Ok::<(), ggufrw::params::ParamError>(())
//! ```

use crate::TensorInfo;
use std::fmt;

/// The parameter count of a set of tensors, as `get_total_parameter_count` gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParamCount {
    /// All parameters counted (LoRA `a` tensors are not counted; each `b` tensor counts as the
    /// full matrix it updates). gguf-py returns this negated when `lora` is set.
    pub total: u64,
    /// Parameters outside expert tensors (`_exps.` tensors of fewer than 3 dimensions count
    /// here too).
    pub shared: u64,
    /// Parameters of one expert: each expert tensor's size divided by its expert count, summed.
    pub expert: u64,
    /// Expert tensors' expert counts, averaged (rounded down); 0 without expert tensors.
    pub expert_count: u64,
    /// A tensor named `*.lora_a` was seen: gguf-py negates `total` to say it is likely not
    /// exact, and the converter then names the file `…-LoRA`.
    pub lora: bool,
    /// A `*.lora_b` tensor came when the last `*.lora_a` seen was not its own (or there was
    /// none): gguf-py gives up ("tensor order is unusual") and returns all zeros, as here.
    pub lora_unmeasured: bool,
}

impl ParamCount {
    /// The four numbers `get_total_parameter_count` returns: `(total, shared, expert,
    /// expert_count)`, the total negated for LoRA adapters.
    pub fn gguf_py(&self) -> (i128, u64, u64, u64) {
        let total = i128::from(self.total);
        let total = if self.lora { -total } else { total };
        (total, self.shared, self.expert, self.expert_count)
    }

    /// gguf-py's `size_label(total, shared, expert, expert_count)` of these counts, such as
    /// `7.2B` or `8x7.2B`.
    pub fn size_label(&self) -> String {
        size_label(self.total, self.shared, self.expert, self.expert_count)
    }
}

/// Why a count could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// An expert tensor says it has 0 experts (gguf-py: `ZeroDivisionError`).
    ZeroExperts {
        /// The tensor's name.
        tensor: String,
    },
    /// A `*.lora_b` tensor's matching `*.lora_a` has no dimensions (gguf-py: `IndexError`).
    ScalarLoraA {
        /// The `lora_a` tensor's name.
        tensor: String,
    },
    /// A count does not fit in 64 bits (gguf-py's integers are unbounded).
    Overflow {
        /// The tensor being counted.
        tensor: String,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::ZeroExperts { tensor } => {
                write!(f, "expert tensor {tensor:?} has 0 experts")
            }
            ParamError::ScalarLoraA { tensor } => {
                write!(f, "LoRA tensor {tensor:?} has no dimensions")
            }
            ParamError::Overflow { tensor } => {
                write!(f, "parameter count overflows 64 bits at tensor {tensor:?}")
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// Counts the parameters of `tensors`, in file order, as gguf-py does.
pub fn count(tensors: &[TensorInfo]) -> Result<ParamCount, ParamError> {
    count_shapes(
        tensors
            .iter()
            // A name that is not UTF-8 names no expert tensor: counted as shared.
            .map(|t| (t.name.as_str().unwrap_or(""), t.dimensions.as_slice())),
    )
}

/// Counts the parameters of `(name, dimensions)` pairs (dimensions in GGUF order, `ne[0]`
/// first), in order: `GGUFWriter.get_total_parameter_count` step by step.
pub fn count_shapes<'a, I>(tensors: I) -> Result<ParamCount, ParamError>
where
    I: IntoIterator<Item = (&'a str, &'a [u64])>,
{
    let mut total: u128 = 0;
    let mut shared: u128 = 0;
    let mut expert: u128 = 0;
    let mut expert_sum: u128 = 0;
    let mut expert_tensors: u128 = 0;
    let mut last_lora_a: Option<(&str, &[u64])> = None;
    // The first tensor at which a count passed 64 bits. gguf-py's integers never overflow, so
    // it carries on, and a later tensor can still make it fail or give up: so do we.
    let mut overflowed: Option<&str> = None;

    for (name, dims) in tensors {
        // numpy's shape is `dims` reversed; `shape[-1]` is ne[0].
        let mut shape: Vec<u64> = dims.to_vec();
        if name.ends_with(".lora_a") {
            last_lora_a = Some((name, dims));
            continue;
        } else if let Some(stem) = name.strip_suffix(".lora_b") {
            // `last_lora_a[0] != name[:-1] + "a"`
            match last_lora_a {
                Some((a_name, a_dims)) if a_name.strip_suffix(".lora_a") == Some(stem) => {
                    // `shape = (*shape[:-1], last_lora_a.shape[-1])`: numpy's last axis is
                    // ne[0], so ne[0] becomes lora_a's ne[0]; a scalar lora_b becomes 1-D.
                    let a0 = *a_dims.first().ok_or_else(|| ParamError::ScalarLoraA {
                        tensor: a_name.to_owned(),
                    })?;
                    match shape.first_mut() {
                        Some(ne0) => *ne0 = a0,
                        None => shape.push(a0),
                    }
                }
                _ => {
                    return Ok(ParamCount {
                        lora_unmeasured: true,
                        ..ParamCount::default()
                    })
                }
            }
        }

        // `prod(shape)`: exact, so 0 when a dimension is 0 however large the others; 1 for a
        // scalar.
        let size = if shape.contains(&0) {
            Some(0)
        } else {
            (shape.iter()).try_fold(1u128, |acc, &d| acc.checked_mul(u128::from(d)))
        };

        let is_expert = name.contains("_exps.") && shape.len() >= 3;
        // `shape[-2 if ".bias" in name else -3]`: ne[1] or ne[2].
        let experts =
            is_expert.then(|| u128::from(shape[if name.contains(".bias") { 1 } else { 2 }]));
        if experts == Some(0) {
            return Err(ParamError::ZeroExperts {
                tensor: name.to_owned(),
            });
        }
        if overflowed.is_some() {
            continue;
        }
        // Every sum is at most the total (or, for expert counts, far below u128), so checking
        // the size and the total is enough.
        let fits = |size: u128| {
            total
                .checked_add(size)
                .is_some_and(|t| t <= u128::from(u64::MAX))
        };
        let Some(size) = size.filter(|&size| fits(size)) else {
            overflowed = Some(name);
            continue;
        };
        match experts {
            Some(experts) => {
                expert += size / experts;
                expert_sum += experts;
                expert_tensors += 1;
            }
            None => shared += size,
        }
        total += size;
    }
    if let Some(tensor) = overflowed {
        return Err(ParamError::Overflow {
            tensor: tensor.to_owned(),
        });
    }

    let expert_count = expert_sum.checked_div(expert_tensors).unwrap_or(0);
    // total ≥ shared and ≥ expert, and the average expert count ≤ the largest, so each fits.
    let narrow = |v: u128| u64::try_from(v).expect("bounded by the total");
    Ok(ParamCount {
        total: narrow(total),
        shared: narrow(shared),
        expert: narrow(expert),
        expert_count: narrow(expert_count),
        lora: last_lora_a.is_some(),
        lora_unmeasured: false,
    })
}

/// gguf-py's `size_label(total_params, shared_params, expert_params, expert_count)`: with
/// experts `{expert_count}x` and the rounded notation of `shared + expert`, else the rounded
/// notation of `total`, both with at least 2 digits. (gguf-py takes absolute values; these
/// are magnitudes already.)
pub fn size_label(total: u64, shared: u64, expert: u64, expert_count: u64) -> String {
    if expert_count > 0 {
        let per = u128::from(shared) + u128::from(expert);
        format!("{expert_count}x{}", rounded_notation(per, 2))
    } else {
        rounded_notation(u128::from(total), 2)
    }
}

/// gguf-py's `model_weight_count_rounded_notation(count, min_digits)`: the count scaled to
/// thousands, millions, billions or trillions (`K`, `M`, `B`, `T`; the scale is the largest
/// the count is *strictly* above, so 1,000,000 is `1000K`), with as many decimals as it takes
/// to show `min_digits` digits of the rounded value (`7.2B`, `270M`, `0.50K`).
///
/// Faithful to Python's float arithmetic: the count becomes the nearest `f64`, is multiplied by
/// the `f64` nearest `1e-3`/`1e-6`/`1e-9`/`1e-12`, the number of digits is taken from
/// `round()` (ties to even), and the result is formatted like `f"{x:.{fix}f}"`, which rounds
/// the exact binary value, ties to even (`1.25` → `1.2`).
pub fn rounded_notation(count: u128, min_digits: usize) -> String {
    // Comparisons of an int with 1e12 etc. are exact in Python, and these are integers.
    let (scale, suffix) = if count > 1_000_000_000_000 {
        (1e-12, 'T')
    } else if count > 1_000_000_000 {
        (1e-9, 'B')
    } else if count > 1_000_000 {
        (1e-6, 'M')
    } else {
        (1e-3, 'K')
    };
    // `int * float`: the int is rounded to the nearest double first, as `as` does.
    let scaled = count as f64 * scale;
    // `len(str(round(scaled)).lstrip('0'))`: 0 rounds to "0", which strips to "".
    let rounded = scaled.round_ties_even();
    let digits = if rounded < 1.0 {
        0
    } else {
        format!("{rounded:.0}").len()
    };
    let fix = min_digits.saturating_sub(digits);
    format!(
        "{}{suffix}",
        crate::naming::python::format_fixed(scaled, fix)
    )
}
