//! The arithmetic on ggml's blocks: dequantize to f32 and quantize from f32, bit-exact with
//! ggml's reference C code (`ggml-quants.c`, as `to_float` and `ggml_quantize_chunk` run it,
//! with an importance matrix or without), and the byte swap of big-endian files. The blocks themselves are
//! declared in `ggufrw_schema::blocks`; each family's arithmetic is a module here.
//!
//! ```
//! use ggufrw_quant as quant;
//! use ggufrw_quant::GgmlType;
//! use ggufrw_schema::ByteOrder;
//! let row: Vec<f32> = (0..64).map(|i| i as f32 / 8.0 - 4.0).collect();
//! let blocks = quant::quantize(GgmlType::Q8_0, &row, 64)?;
//! assert_eq!(blocks.len(), 2 * 34);
//! let mut back = vec![0f32; 64];
//! quant::dequantize(GgmlType::Q8_0, &blocks, ByteOrder::Little, &mut back)?;
//! assert!(back.iter().zip(&row).all(|(a, b)| (a - b).abs() < 0.02));
//! # Ok::<(), quant::QuantError>(())
//! ```

mod c;
mod iq;
mod k;
mod legacy;
mod plain;
mod simd;
mod threads;
mod validate;

mod ggml_type;
#[cfg(any(test, feature = "strategy"))]
pub mod strategy;
pub use ggml_type::{type_name, GgmlType, SizeError, RETIRED_TYPES};
use ggufrw_schema::blocks::{self, Block, SwapPlan};
use ggufrw_schema::ByteOrder;
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;
pub use threads::{
    dequantize_threads, quantize_into_threads, quantize_into_weighted_threads, thread_count,
};
pub use validate::{validate_row_data, InvalidData};

/// Dequantization of one block, as ggml's `to_float` (or `dequantize_row_*`) computes it.
pub trait Dequantize: Block {
    /// Whether the arithmetic is there (a type without it is refused, never guessed).
    const DEQUANTIZES: bool = true;
    /// Writes the block's `ELEMENTS` values to `out` (exactly that long). (The implementations
    /// are `#[inline(always)]`: inlined into the AVX2 build of the block loop, they run that
    /// wide.)
    fn dequantize(&self, out: &mut [f32]);
}

/// Quantization of rows of f32, as ggml's reference code computes it.
pub trait Quantize: Block + Copy {
    /// Why the type cannot be quantized from f32 alone, if it cannot (ggml needs an
    /// importance matrix for some types; others have no quantizer here).
    const REFUSAL: Option<&'static str> = None;
    /// One row, as `ggml_quantize_chunk` quantizes it without an importance matrix; `x` is
    /// `out.len()` blocks of elements.
    fn quantize_row(x: &[f32], out: &mut [Self]);
    /// One row as the type's `quantize_row_*_ref` (`from_float_ref`) does; the same as
    /// [`Quantize::quantize_row`] unless the type has a separate reference.
    fn quantize_row_ref(x: &[f32], out: &mut [Self]) {
        Self::quantize_row(x, out)
    }
    /// Why the type cannot be quantized with an importance matrix yet, if it cannot.
    const WEIGHTED_REFUSAL: Option<&'static str> = None;
    /// One row with an importance matrix: `qw` holds one weight per element of the row, as
    /// `ggml_quantize_chunk(…, imatrix)` takes them. The default ignores them, as ggml's
    /// quantizer does for the types that do not read them.
    fn quantize_row_weighted(x: &[f32], qw: &[f32], out: &mut [Self]) {
        let _ = qw;
        Self::quantize_row(x, out)
    }
}

/// What every block type of [`GgmlType`] implements.
pub trait Codec: Dequantize + Quantize {}
impl<B: Dequantize + Quantize> Codec for B {}

/// Code generic over the block types: [`GgmlType::visit`] calls it with the type's block.
pub trait BlockVisitor {
    /// What the visit returns.
    type Out;
    /// The block type `B`.
    fn visit<B: Codec>(self) -> Self::Out;
}

/// Why a dequantization or quantization was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuantError {
    /// The input is not whole blocks (or rows of whole blocks).
    NotWholeBlocks {
        /// The type.
        ty: GgmlType,
        /// Elements or bytes given.
        len: usize,
        /// Elements (or bytes) per block.
        block: usize,
    },
    /// The output's length is not the input's number of elements.
    OutputLength {
        /// Needed.
        needed: usize,
        /// Given.
        given: usize,
    },
    /// The type cannot be dequantized or quantized here, and why.
    Unsupported {
        /// The type.
        ty: GgmlType,
        /// Why.
        why: &'static str,
    },
    /// An importance matrix whose length is not the row's.
    ImatrixLength {
        /// The row's length.
        needed: usize,
        /// The weights given.
        given: usize,
    },
}

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuantError::NotWholeBlocks { ty, len, block } => {
                write!(f, "{ty}: {len} is not a multiple of the block's {block}")
            }
            QuantError::OutputLength { needed, given } => {
                write!(f, "the output has room for {given}, {needed} are needed")
            }
            QuantError::Unsupported { ty, why } => write!(f, "{ty}: {why}"),
            QuantError::ImatrixLength { needed, given } => {
                write!(f, "{given} importance weights for rows of {needed}")
            }
        }
    }
}

impl std::error::Error for QuantError {}

/// The byte swap of `ty`'s blocks, derived once from its declaration.
pub fn swap_plan(ty: GgmlType) -> &'static SwapPlan {
    struct Plan;
    impl BlockVisitor for Plan {
        type Out = SwapPlan;
        fn visit<B: Codec>(self) -> SwapPlan {
            SwapPlan::of::<B>()
        }
    }
    static PLANS: OnceLock<Vec<(GgmlType, SwapPlan)>> = OnceLock::new();
    let plans = PLANS.get_or_init(|| {
        use strum::IntoEnumIterator;
        GgmlType::iter().map(|t| (t, t.visit(Plan))).collect()
    });
    // Every type has its plan: the table is built from GgmlType::iter().
    let found = plans.iter().find(|(t, _)| *t == ty).map(|(_, p)| p);
    found.unwrap_or(&plans[0].1)
}

/// Swaps whole blocks of `ty` between byte orders, in place.
pub fn swap_in_place(ty: GgmlType, bytes: &mut [u8]) -> Result<(), QuantError> {
    let plan = swap_plan(ty);
    if bytes.len() % plan.block_bytes != 0 {
        return Err(QuantError::NotWholeBlocks {
            ty,
            len: bytes.len(),
            block: plan.block_bytes,
        });
    }
    plan.apply(bytes);
    Ok(())
}

/// The blocks as little-endian bytes: `bytes` itself for a little-endian file, a swapped copy
/// for a big-endian one.
pub fn to_little_endian(
    ty: GgmlType,
    bytes: &[u8],
    byte_order: ByteOrder,
) -> Result<Cow<'_, [u8]>, QuantError> {
    match byte_order {
        ByteOrder::Little => Ok(Cow::Borrowed(bytes)),
        ByteOrder::Big => {
            let mut copy = bytes.to_vec();
            swap_in_place(ty, &mut copy)?;
            Ok(Cow::Owned(copy))
        }
    }
}

/// Blocks dequantized at once from a big-endian file (each chunk swapped into a buffer).
const CHUNK_BLOCKS: usize = 1024;

/// Dequantizes whole blocks of `ty` stored in `byte_order` into `out` (one f32 per element).
pub fn dequantize(
    ty: GgmlType,
    bytes: &[u8],
    byte_order: ByteOrder,
    out: &mut [f32],
) -> Result<(), QuantError> {
    struct Dequantizing<'a> {
        ty: GgmlType,
        bytes: &'a [u8],
        byte_order: ByteOrder,
        out: &'a mut [f32],
    }
    impl BlockVisitor for Dequantizing<'_> {
        type Out = Result<(), QuantError>;
        fn visit<B: Codec>(self) -> Self::Out {
            let Dequantizing {
                ty,
                bytes,
                byte_order,
                out,
            } = self;
            if !B::DEQUANTIZES {
                return Err(QuantError::Unsupported {
                    ty,
                    why: "no dequantization for this type yet",
                });
            }
            if bytes.len() % B::BYTES != 0 {
                return Err(QuantError::NotWholeBlocks {
                    ty,
                    len: bytes.len(),
                    block: B::BYTES,
                });
            }
            let needed = bytes.len() / B::BYTES * B::ELEMENTS;
            if out.len() != needed {
                return Err(QuantError::OutputLength {
                    needed,
                    given: out.len(),
                });
            }
            let mut scratch = Vec::new();
            for (chunk, out) in (bytes.chunks(CHUNK_BLOCKS * B::BYTES))
                .zip(out.chunks_mut(CHUNK_BLOCKS * B::ELEMENTS))
            {
                let le = match byte_order {
                    ByteOrder::Little => chunk,
                    ByteOrder::Big => {
                        scratch.clear();
                        scratch.extend_from_slice(chunk);
                        swap_plan(ty).apply(&mut scratch);
                        &scratch[..]
                    }
                };
                let blocks: &[B] = blocks::view(le).unwrap_or(&[]);
                simd::dequantize_blocks(blocks, out);
            }
            Ok(())
        }
    }
    ty.visit(Dequantizing {
        ty,
        bytes,
        byte_order,
        out,
    })
}

/// Quantizes rows of `n_per_row` f32 to little-endian blocks of `ty`, as `ggml_quantize_chunk`
/// does without an importance matrix.
pub fn quantize(ty: GgmlType, x: &[f32], n_per_row: usize) -> Result<Vec<u8>, QuantError> {
    quantize_with(ty, x, n_per_row, false)
}

/// Quantizes as the type's `quantize_row_*_ref` does (ggml's `from_float_ref`; for Q8_1 and
/// Q8_K, which `ggml_quantize_chunk` does not take).
pub fn quantize_ref(ty: GgmlType, x: &[f32], n_per_row: usize) -> Result<Vec<u8>, QuantError> {
    quantize_with(ty, x, n_per_row, true)
}

/// [`quantize`] into a caller's buffer of exactly `x.len() / block_size * type_size` bytes
/// (every byte is written), so that a loop over tensors or rows allocates nothing.
pub fn quantize_into(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    out: &mut [u8],
) -> Result<(), QuantError> {
    quantize_into_with(ty, x, n_per_row, false, out)
}

fn quantize_with(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    reference: bool,
) -> Result<Vec<u8>, QuantError> {
    let blocks = x.len() / (ty.block_size() as usize).max(1);
    let mut bytes = vec![0u8; blocks * ty.type_size() as usize];
    quantize_into_with(ty, x, n_per_row, reference, &mut bytes)?;
    Ok(bytes)
}

/// [`quantize_into`] with an importance matrix: `imatrix` holds `n_per_row` weights, the same
/// for every row, as `ggml_quantize_chunk` takes them (`None`: as [`quantize_into`]). For a
/// mixture of experts, quantize each expert's rows with its own slice.
pub fn quantize_into_weighted(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    out: &mut [u8],
) -> Result<(), QuantError> {
    match imatrix {
        None => quantize_into(ty, x, n_per_row, out),
        Some(w) if w.len() != n_per_row => Err(QuantError::ImatrixLength {
            needed: n_per_row,
            given: w.len(),
        }),
        Some(w) => quantize_rows(ty, x, n_per_row, Mode::Weighted(w), out),
    }
}

/// [`quantize_into_weighted`] into a new buffer.
pub fn quantize_weighted(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
) -> Result<Vec<u8>, QuantError> {
    let blocks = x.len() / (ty.block_size() as usize).max(1);
    let mut bytes = vec![0u8; blocks * ty.type_size() as usize];
    quantize_into_weighted(ty, x, n_per_row, imatrix, &mut bytes)?;
    Ok(bytes)
}

use simd::Mode;

fn quantize_into_with(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    reference: bool,
    out: &mut [u8],
) -> Result<(), QuantError> {
    let mode = if reference {
        Mode::Reference
    } else {
        Mode::Chunk
    };
    quantize_rows(ty, x, n_per_row, mode, out)
}

fn quantize_rows(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    mode: Mode<'_>,
    out: &mut [u8],
) -> Result<(), QuantError> {
    struct Quantizing<'a> {
        ty: GgmlType,
        x: &'a [f32],
        n_per_row: usize,
        mode: Mode<'a>,
        out: &'a mut [u8],
    }
    impl BlockVisitor for Quantizing<'_> {
        type Out = Result<(), QuantError>;
        fn visit<B: Codec>(self) -> Self::Out {
            let Quantizing {
                ty,
                x,
                n_per_row,
                mode,
                out,
            } = self;
            let refusal = match mode {
                Mode::Weighted(_) => B::WEIGHTED_REFUSAL,
                _ => B::REFUSAL,
            };
            if let Some(why) = refusal {
                return Err(QuantError::Unsupported { ty, why });
            }
            let whole = n_per_row > 0 && n_per_row % B::ELEMENTS == 0 && x.len() % n_per_row == 0;
            if !whole {
                return Err(QuantError::NotWholeBlocks {
                    ty,
                    len: n_per_row,
                    block: B::ELEMENTS,
                });
            }
            let needed = x.len() / B::ELEMENTS * B::BYTES;
            if out.len() != needed {
                return Err(QuantError::OutputLength {
                    needed,
                    given: out.len(),
                });
            }
            // Blocks have alignment 1: the bytes are the blocks, written in place.
            let out: &mut [B] = bytemuck::cast_slice_mut(out);
            simd::quantize_rows(x, n_per_row, mode, out);
            Ok(())
        }
    }
    ty.visit(Quantizing {
        ty,
        x,
        n_per_row,
        mode,
        out,
    })
}

/// A xorshift64 stream from `seed`: the tests' cheap source of arbitrary bytes and floats,
/// seeded by proptest so that a failure shrinks and replays.
#[cfg(test)]
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// Little-endian blocks of `ty` swapped to big-endian through the declaration only (each block
/// read by binrw in one order, written in the other): what [`swap_plan`] is derived from.
#[cfg(test)]
fn swap_declared(ty: GgmlType, bytes: &[u8]) -> Option<Vec<u8>> {
    struct SwapDeclared<'a>(&'a [u8]);
    impl BlockVisitor for SwapDeclared<'_> {
        type Out = Option<Vec<u8>>;
        fn visit<B: Codec>(self) -> Self::Out {
            blocks::swap_declared::<B>(self.0, binrw::Endian::Little)
        }
    }
    ty.visit(SwapDeclared(bytes))
}

/// Dequantization through the declaration only: each block read by binrw from `byte_order`,
/// no view, no swap plan. The slow path the fast one is proven equal to.
#[cfg(test)]
fn dequantize_declared(
    ty: GgmlType,
    bytes: &[u8],
    byte_order: ByteOrder,
) -> Result<Vec<f32>, QuantError> {
    struct DequantizeDeclared<'a>(GgmlType, &'a [u8], ByteOrder);
    impl BlockVisitor for DequantizeDeclared<'_> {
        type Out = Result<Vec<f32>, QuantError>;
        fn visit<B: Codec>(self) -> Self::Out {
            let DequantizeDeclared(ty, bytes, order) = self;
            let blocks = blocks::read_declared::<B>(bytes, order.endian()).ok_or(
                QuantError::NotWholeBlocks {
                    ty,
                    len: bytes.len(),
                    block: B::BYTES,
                },
            )?;
            let mut out = vec![0f32; blocks.len() * B::ELEMENTS];
            for (b, o) in blocks.iter().zip(out.chunks_exact_mut(B::ELEMENTS)) {
                b.dequantize(o);
            }
            Ok(out)
        }
    }
    ty.visit(DequantizeDeclared(ty, bytes, byte_order))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};
    use strum::IntoEnumIterator;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|f| f.to_bits()).collect()
    }

    /// The fast paths (views in place, the derived swap plan) against the declaration read
    /// and written by binrw, for every type, in both byte orders.
    #[test]
    fn fast_paths_are_the_declared_ones() {
        for ty in GgmlType::iter() {
            let mut runner = TestRunner::new_with_rng(
                Config::with_cases(64),
                proptest::test_runner::TestRng::deterministic_rng(Default::default()),
            );
            let checked = runner.run(&strategy::blocks(ty, 4), |bytes| {
                let big = swap_declared(ty, &bytes).expect("whole blocks");
                let mut swapped = bytes.clone();
                swap_in_place(ty, &mut swapped).unwrap();
                prop_assert_eq!(
                    &swapped,
                    &big,
                    "{}: the swap plan is not the declaration's",
                    ty
                );
                let n = bytes.len() / ty.type_size() as usize * ty.block_size() as usize;
                let mut fast = vec![0f32; n];
                match dequantize(ty, &bytes, ByteOrder::Little, &mut fast) {
                    Err(QuantError::Unsupported { .. }) => return Ok(()),
                    other => other.map_err(|e| TestCaseError::fail(e.to_string()))?,
                }
                let declared = dequantize_declared(ty, &bytes, ByteOrder::Little).unwrap();
                prop_assert_eq!(
                    bits(&fast),
                    bits(&declared),
                    "{}: fast and declared differ",
                    ty
                );
                let mut from_big = vec![0f32; n];
                dequantize(ty, &big, ByteOrder::Big, &mut from_big).unwrap();
                prop_assert_eq!(bits(&from_big), bits(&fast), "{}: big-endian differs", ty);
                let declared_big = dequantize_declared(ty, &big, ByteOrder::Big).unwrap();
                prop_assert_eq!(
                    bits(&declared_big),
                    bits(&fast),
                    "{}: declared big-endian",
                    ty
                );
                Ok(())
            });
            if let Err(e) = checked {
                panic!("{ty}: {e}");
            }
        }
    }
}
