//! Sub-byte packing inside blocks, as `modular-bitfield` types: views of the little-endian
//! bytes a block holds (bits counted from the lowest of the first byte), so that each packed
//! field is named once, here, and read by name.

use modular_bitfield::prelude::*;

/// Two 4-bit quants in a byte: element `j` in the low nibble, another in the high one.
#[bitfield(bytes = 1)]
#[derive(Clone, Copy, Debug)]
pub struct Nibbles {
    /// The low nibble.
    pub lo: B4,
    /// The high nibble.
    pub hi: B4,
}

/// Four 2-bit quants in a byte, lowest first.
#[bitfield(bytes = 1)]
#[derive(Clone, Copy, Debug)]
pub struct Crumbs {
    /// Bits 0–1.
    pub q0: B2,
    /// Bits 2–3.
    pub q1: B2,
    /// Bits 4–5.
    pub q2: B2,
    /// Bits 6–7.
    pub q3: B2,
}

/// A byte of the K-quants' 12-byte scales (Q4_K, Q5_K): a 6-bit scale or min and the top two
/// bits of another.
#[bitfield(bytes = 1)]
#[derive(Clone, Copy, Debug)]
pub struct ScaleByte {
    /// A whole 6-bit value.
    pub low6: B6,
    /// The top 2 bits of the value four places on.
    pub high2: B2,
}

/// IQ2_XS: a 16-bit word of a grid index and a sign-pattern index.
#[bitfield(bytes = 2)]
#[derive(Clone, Copy, Debug)]
pub struct Iq2xsWord {
    /// Index into `iq2xs_grid` (512 entries).
    pub grid: B9,
    /// Index into `ksigns_iq2xs` (128 entries).
    pub signs: B7,
}

/// IQ2_XXS and IQ3_XXS: a 32-bit word of four 7-bit sign-pattern indices and a 4-bit scale.
#[bitfield(bytes = 4)]
#[derive(Clone, Copy, Debug)]
pub struct SignsAndScale {
    /// Sign-pattern index of the first 8 elements.
    pub signs0: B7,
    /// … of the second.
    pub signs1: B7,
    /// … of the third.
    pub signs2: B7,
    /// … of the fourth.
    pub signs3: B7,
    /// The scale.
    pub scale: B4,
}

/// IQ1_S: a 16-bit word per 32 elements: the high 3 bits of four grid indices, a 3-bit scale
/// and the sign of the delta.
#[bitfield(bytes = 2)]
#[derive(Clone, Copy, Debug)]
pub struct Iq1sHigh {
    /// High bits of grid index 0.
    pub idx0: B3,
    /// … 1.
    pub idx1: B3,
    /// … 2.
    pub idx2: B3,
    /// … 3.
    pub idx3: B3,
    /// The scale (multiplier `2s + 1`).
    pub scale: B3,
    /// Set: the delta is negative.
    pub negative_delta: bool,
}

/// IQ1_M: a byte of `qh`: the high 3 bits of two grid indices, each with its delta's sign.
#[bitfield(bytes = 1)]
#[derive(Clone, Copy, Debug)]
pub struct Iq1mHigh {
    /// High bits of the first index.
    pub idx0: B3,
    /// Set: the first delta is negative.
    pub negative0: bool,
    /// High bits of the second index.
    pub idx1: B3,
    /// Set: the second delta is negative.
    pub negative1: bool,
}

/// IQ1_M: one of the four 16-bit scale words: four 3-bit scales and 4 bits of the block's f16
/// scale.
#[bitfield(bytes = 2)]
#[derive(Clone, Copy, Debug)]
pub struct Iq1mScales {
    /// Scale of the first 16 elements of the first 32.
    pub s0: B3,
    /// … of their last 16.
    pub s1: B3,
    /// … of the first 16 of the next 32.
    pub s2: B3,
    /// … of their last 16.
    pub s3: B3,
    /// 4 bits of the block's scale (word k holds bits 4k..4k+4).
    pub d_bits: B4,
}
