//! One declaration per ggml tensor type: its block's fields in order, exactly as ggml's
//! reference code reads them (`ggml-common.h`, `ggml-quants.c`). A field that ggml reads as a
//! multi-byte number (by value or `memcpy` into an integer) is declared as one ([`Half`],
//! [`U16`], [`U32`]…): that is what a big-endian file stores byte-reversed. Bytes and byte
//! arrays are the same in every byte order.

use super::scalar::{Half, I16, I32, I64, U16, U32, U64};
use super::Block;
use binrw::binrw;
use bytemuck::{Pod, Zeroable};

macro_rules! blocks {
    ($(
        $(#[$doc:meta])*
        $name:ident [$id:literal, $elements:literal] {
            $($(#[$fdoc:meta])* $field:ident: $ty:ty,)*
        }
    )*) => {$(
        $(#[$doc])*
        #[binrw]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
        #[repr(C)]
        #[allow(missing_docs)] // Each field is named in the type's description.
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl Block for $name {
            const ID: u32 = $id;
            const ELEMENTS: usize = $elements;
        }
    )*};
}

/// IQ2_XXS: 8 elements' grid indices and the group's signs and scale.
#[binrw]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
#[repr(C)]
pub struct Iq2xxsGroup {
    /// Four indices into `iq2xxs_grid`, one per 8 elements.
    pub grid: [u8; 4],
    /// Read as a 32-bit word ([`super::bits::SignsAndScale`]); ggml declares the block as
    /// 16-bit words but reads these four bytes with `memcpy` into a `uint32_t`.
    pub signs_and_scale: U32,
}

blocks! {
    /// F32: one float.
    F32 [0, 1] { bits: U32, }
    /// F16: one IEEE half.
    F16 [1, 1] { bits: Half, }
    /// Q4_0: scale, 32 4-bit quants (element j low nibble of `qs[j]`, j + 16 high).
    Q4_0 [2, 32] { d: Half, qs: [u8; 16], }
    /// Q4_1: scale, minimum, 32 4-bit quants.
    Q4_1 [3, 32] { d: Half, m: Half, qs: [u8; 16], }
    /// Q5_0: scale, the 5th bits of 32 quants as one word, their low 4 bits.
    Q5_0 [6, 32] { d: Half, qh: U32, qs: [u8; 16], }
    /// Q5_1: scale, minimum, 5th bits, low 4 bits.
    Q5_1 [7, 32] { d: Half, m: Half, qh: U32, qs: [u8; 16], }
    /// Q8_0: scale, 32 8-bit quants.
    Q8_0 [8, 32] { d: Half, qs: [i8; 32], }
    /// Q8_1: scale, scale × the sum of the quants, 32 8-bit quants (36 bytes).
    Q8_1 [9, 32] { d: Half, s: Half, qs: [i8; 32], }
    /// Q2_K: 16 scale/min nibble pairs, 256 2-bit quants, super-block scale and minimum.
    Q2K [10, 256] { scales: [u8; 16], qs: [u8; 64], d: Half, dmin: Half, }
    /// Q3_K: the high bits (inverted), 256 low 2-bit quants, 16 6-bit scales in 12 bytes, scale.
    Q3K [11, 256] { hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: Half, }
    /// Q4_K: scale, minimum, 8 6-bit scales and mins in 12 bytes, 256 4-bit quants.
    Q4K [12, 256] { d: Half, dmin: Half, scales: [u8; 12], qs: [u8; 128], }
    /// Q5_K: as Q4_K with the 5th bits of the quants.
    Q5K [13, 256] { d: Half, dmin: Half, scales: [u8; 12], qh: [u8; 32], qs: [u8; 128], }
    /// Q6_K: low 4 bits, high 2 bits, 16 8-bit scales, scale.
    Q6K [14, 256] { ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: Half, }
    /// Q8_K: an f32 scale, 256 8-bit quants, the sums of each 16.
    Q8K [15, 256] { d: U32, qs: [i8; 256], bsums: [I16; 16], }
    /// IQ2_XXS: scale, 8 groups of 32 elements.
    Iq2Xxs [16, 256] { d: Half, groups: [Iq2xxsGroup; 8], }
    /// IQ2_XS: scale, 32 words of grid and sign indices ([`super::bits::Iq2xsWord`]), 8 bytes of
    /// two 4-bit scales.
    Iq2Xs [17, 256] { d: Half, qs: [U16; 32], scales: [u8; 8], }
    /// IQ3_XXS: scale, 64 grid indices, 8 words of signs and scale.
    Iq3Xxs [18, 256] { d: Half, qs: [u8; 64], signs_and_scales: [U32; 8], }
    /// IQ1_S: scale, low 8 bits of 32 grid indices, 8 words of high bits, scale and delta sign.
    Iq1S [19, 256] { d: Half, qs: [u8; 32], qh: [U16; 8], }
    /// IQ4_NL: scale, 32 4-bit indices into the non-linear table.
    Iq4Nl [20, 32] { d: Half, qs: [u8; 16], }
    /// IQ3_S: scale, low 8 bits of 64 grid indices, their 9th bits, 32 sign bytes, 4 scale bytes.
    Iq3S [21, 256] { d: Half, qs: [u8; 64], qh: [u8; 8], signs: [u8; 32], scales: [u8; 4], }
    /// IQ2_S: scale, low 8 bits of 32 grid indices and 32 sign bytes, their high bits, scales.
    Iq2S [22, 256] { d: Half, qs: [u8; 64], qh: [u8; 8], scales: [u8; 8], }
    /// IQ4_XS: scale, the high 2 bits of 8 6-bit scales, their low 4 bits, 256 4-bit indices.
    Iq4Xs [23, 256] { d: Half, scales_h: U16, scales_l: [u8; 4], qs: [u8; 128], }
    /// I8: one signed byte.
    I8 [24, 1] { value: i8, }
    /// I16: one 16-bit integer.
    I16Block [25, 1] { value: I16, }
    /// I32: one 32-bit integer.
    I32Block [26, 1] { value: I32, }
    /// I64: one 64-bit integer.
    I64Block [27, 1] { value: I64, }
    /// F64: one double, as its bits.
    F64 [28, 1] { bits: U64, }
    /// IQ1_M: low 8 bits of 32 grid indices, their high bits with delta signs, 4 scale words
    /// ([`super::bits::Iq1mScales`], the block's f16 scale spread over their top nibbles).
    Iq1M [29, 256] { qs: [u8; 32], qh: [u8; 16], scales: [U16; 4], }
    /// BF16: one bfloat16, as its bits.
    Bf16 [30, 1] { bits: U16, }
    /// TQ1_0: 5 trits per byte in 48 bytes, 4 per byte in 4, scale.
    Tq1_0 [34, 256] { qs: [u8; 48], qh: [u8; 4], d: Half, }
    /// TQ2_0: 2-bit ternary quants, scale.
    Tq2_0 [35, 256] { qs: [u8; 64], d: Half, }
    /// MXFP4: an E8M0 exponent, 32 E2M1 nibbles.
    Mxfp4 [39, 32] { e: u8, qs: [u8; 16], }
    /// NVFP4: four UE4M3 scales (one per 16 elements), 64 E2M1 nibbles.
    Nvfp4 [40, 64] { d: [u8; 4], qs: [u8; 32], }
    /// Q1_0: scale, 128 sign bits (lowest bit first).
    Q1_0 [41, 128] { d: Half, qs: [u8; 16], }
    /// Q2_0: scale, 64 2-bit quants (lowest bits first).
    Q2_0 [42, 64] { d: Half, qs: [u8; 16], }
}
