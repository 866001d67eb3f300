//! The blocks of ggml's tensor types: one `#[binrw]` declaration per type (`types.rs`), its
//! multi-byte numbers held little-endian ([`scalar`]) and its sub-byte packing named by
//! `modular-bitfield` views ([`bits`]).
//!
//! The declaration is what reads and writes a block in either byte order, so the byte swap of
//! a big-endian file is "read in one order, write in the other" ([`swap_declared`]); the fast
//! swap ([`SwapPlan`]) is derived from that same declaration, once, by watching where it moves
//! each byte. In memory a block is its little-endian bytes (alignment 1, no padding), so the
//! blocks of a little-endian file are viewed in place ([`view`]).

pub mod bits;
pub mod scalar;
mod types;

pub use types::*;

use binrw::io::Cursor;
use binrw::{BinRead, BinWrite, Endian};
use bytemuck::Pod;
use std::fmt::Debug;

/// A ggml block type: its declaration reads and writes it; its bytes are its little-endian
/// encoding.
pub trait Block:
    Pod + Debug + PartialEq + for<'a> BinRead<Args<'a> = ()> + for<'a> BinWrite<Args<'a> = ()>
{
    /// The ggml type id.
    const ID: u32;
    /// Elements per block.
    const ELEMENTS: usize;
    /// Bytes per block.
    const BYTES: usize = std::mem::size_of::<Self>();
}

/// The blocks of little-endian bytes, in place; `None` unless `bytes` is whole blocks.
pub fn view<B: Block>(bytes: &[u8]) -> Option<&[B]> {
    bytemuck::try_cast_slice(bytes).ok()
}

/// Blocks read one by one through the declaration from bytes in `endian` (whole blocks).
pub fn read_declared<B: Block>(bytes: &[u8], endian: Endian) -> Option<Vec<B>> {
    if bytes.len() % B::BYTES != 0 {
        return None;
    }
    let mut cursor = Cursor::new(bytes);
    (0..bytes.len() / B::BYTES)
        .map(|_| B::read_options(&mut cursor, endian, ()).ok())
        .collect()
}

/// Blocks written one by one through the declaration in `endian`.
pub fn write_declared<B: Block>(blocks: &[B], endian: Endian) -> Vec<u8> {
    let mut cursor = Cursor::new(Vec::with_capacity(blocks.len() * B::BYTES));
    for b in blocks {
        // Writing fixed-size fields to memory cannot fail.
        let _ = b.write_options(&mut cursor, endian, ());
    }
    cursor.into_inner()
}

/// Bytes of whole blocks in the other byte order, through the declaration: each block read in
/// `from`, written in the other order.
pub fn swap_declared<B: Block>(bytes: &[u8], from: Endian) -> Option<Vec<u8>> {
    let to = match from {
        Endian::Little => Endian::Big,
        Endian::Big => Endian::Little,
    };
    read_declared::<B>(bytes, from).map(|blocks| write_declared(&blocks, to))
}

/// A block type's byte swap as the byte ranges it reverses, derived from the declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwapPlan {
    /// Bytes per block.
    pub block_bytes: usize,
    /// `(offset, width)` of each multi-byte number in a block, in order.
    pub units: Vec<(usize, usize)>,
}

impl SwapPlan {
    /// The plan of `B`: for each byte of a block, where the declared swap moves it, grouped
    /// into the ranges it reverses.
    pub fn of<B: Block>() -> SwapPlan {
        let n = B::BYTES;
        let moved_to = |i: usize| {
            let mut bytes = vec![0u8; n];
            bytes[i] = 1;
            let swapped = swap_declared::<B>(&bytes, Endian::Little).unwrap_or_default();
            swapped.iter().position(|&b| b == 1).unwrap_or(i)
        };
        let mut units = Vec::new();
        let mut i = 0;
        while i < n {
            let to = moved_to(i);
            // The first byte of a reversed unit goes to its last place.
            let width = if to > i { to - i + 1 } else { 1 };
            if width > 1 {
                units.push((i, width));
            }
            i += width;
        }
        SwapPlan {
            block_bytes: n,
            units,
        }
    }

    /// Whether the swap changes nothing (blocks of bytes only).
    pub fn is_identity(&self) -> bool {
        self.units.is_empty()
    }

    /// Swaps whole blocks in place.
    pub fn apply(&self, bytes: &mut [u8]) {
        for block in bytes.chunks_exact_mut(self.block_bytes) {
            for &(offset, width) in &self.units {
                block[offset..offset + width].reverse();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_what_the_reference_lists() {
        // "BE units" of the reference table, for a few types.
        assert_eq!(SwapPlan::of::<Q4_0>().units, [(0, 2)]);
        assert_eq!(SwapPlan::of::<Q5_1>().units, [(0, 2), (2, 2), (4, 4)]);
        assert_eq!(SwapPlan::of::<Q2K>().units, [(80, 2), (82, 2)]);
        assert!(SwapPlan::of::<Q3K>().units == [(108, 2)]);
        let iq2xxs = SwapPlan::of::<Iq2Xxs>().units;
        assert_eq!(iq2xxs[0], (0, 2));
        assert_eq!(&iq2xxs[1..3], [(6, 4), (14, 4)]);
        assert!(SwapPlan::of::<Mxfp4>().is_identity());
        assert_eq!(SwapPlan::of::<Q8K>().units.len(), 1 + 16);
    }

    #[test]
    fn blocks_are_their_declared_size() {
        assert_eq!(Q8_1::BYTES, 36);
        assert_eq!(Q8K::BYTES, 292);
        assert_eq!(Iq2Xxs::BYTES, 66);
        assert_eq!(Iq1M::BYTES, 56);
    }
}
