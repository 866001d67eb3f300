//! Random blocks for property tests: this crate's own and the comparisons with ggml and gguf-py
//! (the `strategy` feature), so that every test draws its blocks the same way.

use crate::{swap_plan, GgmlType};
use proptest::prelude::*;

/// Half-float bit patterns that break arithmetic: NaNs (quiet, signalling, negative), the
/// infinities, zeros, the smallest subnormal, the largest normal.
pub const SPECIAL_HALVES: [u16; 10] = [
    0x7e00, 0x7c01, 0xfe00, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0001, 0x7bff, 0x3c00,
];

/// One to `max_blocks` random blocks of `ty`: random bytes, each 2-byte number of a block (its
/// scales, in the declaration's swap plan) often replaced by one of [`SPECIAL_HALVES`].
pub fn blocks(ty: GgmlType, max_blocks: usize) -> impl Strategy<Value = Vec<u8>> {
    let size = ty.type_size() as usize;
    let halves: Vec<usize> = (swap_plan(ty).units.iter())
        .filter(|(_, width)| *width == 2)
        .map(|(offset, _)| *offset)
        .collect();
    (1..=max_blocks.max(1))
        .prop_flat_map(move |n| {
            (
                proptest::collection::vec(any::<u8>(), n * size),
                proptest::collection::vec(
                    proptest::option::weighted(0.3, 0..SPECIAL_HALVES.len()),
                    n * 16,
                ),
            )
        })
        .prop_map(move |(mut bytes, specials)| {
            let mut specials = specials.into_iter();
            for block in bytes.chunks_exact_mut(size) {
                for &at in &halves {
                    if let Some(Some(k)) = specials.next() {
                        block[at..at + 2].copy_from_slice(&SPECIAL_HALVES[k].to_le_bytes());
                    }
                }
            }
            bytes
        })
}
