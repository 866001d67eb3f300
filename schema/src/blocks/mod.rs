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
        // A block that is one number (F16, F32, the integer types…) is swapped word by word,
        // a loop LLVM vectorises; the general walk reverses each unit of each block.
        match (self.block_bytes, self.units.as_slice()) {
            (2, [(0, 2)]) => swap_words::<2>(bytes),
            (4, [(0, 4)]) => swap_words::<4>(bytes),
            (8, [(0, 8)]) => swap_words::<8>(bytes),
            _ => self.apply_units(bytes),
        }
    }

    /// [`SwapPlan::apply`] unit by unit, for any plan.
    pub fn apply_units(&self, bytes: &mut [u8]) {
        for block in bytes.chunks_exact_mut(self.block_bytes) {
            for &(offset, width) in &self.units {
                block[offset..offset + width].reverse();
            }
        }
    }
}

/// Reverses every `N`-byte word of `bytes` (whole words; a remainder is left as it is, as the
/// unit walk leaves a partial block).
#[inline]
fn swap_words<const N: usize>(bytes: &mut [u8]) {
    for word in bytes.chunks_exact_mut(N) {
        let mut w = [0u8; N];
        w.copy_from_slice(word);
        match N {
            2 => word.copy_from_slice(&u16::from_ne_bytes([w[0], w[1]]).swap_bytes().to_ne_bytes()),
            4 => {
                let v = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
                word.copy_from_slice(&v.swap_bytes().to_ne_bytes());
            }
            _ => {
                w.reverse();
                word.copy_from_slice(&w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-by-word swaps are the unit walk, on any bytes, a partial word included.
    #[test]
    fn word_swaps_are_the_unit_walk() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for (block, width) in [(2usize, 2usize), (4, 4), (8, 8)] {
            let plan = SwapPlan {
                block_bytes: block,
                units: vec![(0, width)],
            };
            for len in [0usize, 1, 7, 8, 9, 64, 1001] {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                let (mut fast, mut slow) = (bytes.clone(), bytes);
                plan.apply(&mut fast);
                plan.apply_units(&mut slow);
                assert_eq!(fast, slow, "{block} {len}");
            }
        }
    }

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
