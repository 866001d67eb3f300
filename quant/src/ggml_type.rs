//! The ggml tensor types: id, canonical name, block size, bytes per block.

use crate::BlockVisitor;
use ggufrw_schema::blocks::{self, Block};
use std::fmt;

/// Declares [`GgmlType`] from one table: variant, id, ggml's name, and the block declaration
/// (in `ggufrw_schema::blocks`) that gives its size and carries its arithmetic.
macro_rules! ggml_types {
    ($($variant:ident = $id:literal, $name:literal, $block:ident;)*) => {
        /// A ggml tensor type. Canonical names are mixed case (`q4_K`, `iq2_xxs`, `bf16`) and
        /// parse case-insensitively. Ids 4, 5, 31–33 and 36–38 are retired and have no variant.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[derive(strum::FromRepr, strum::EnumString, strum::IntoStaticStr, strum::EnumIter)]
        #[strum(ascii_case_insensitive)]
        #[repr(u32)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum GgmlType {
            $(#[strum(serialize = $name)] $variant = $id,)*
        }

        impl GgmlType {
            fn block_and_bytes(self) -> (u64, u64) {
                match self {
                    $(GgmlType::$variant => (blocks::$block::ELEMENTS as u64, blocks::$block::BYTES as u64),)*
                }
            }

            /// Calls the visitor with this type's block declaration.
            pub fn visit<V: BlockVisitor>(self, visitor: V) -> V::Out {
                match self {
                    $(GgmlType::$variant => visitor.visit::<blocks::$block>(),)*
                }
            }
        }

        // The table's ids are the declarations' ids.
        const _: () = { $(assert!(blocks::$block::ID == $id);)* };
    };
}

ggml_types! {
    F32 = 0, "f32", F32;
    F16 = 1, "f16", F16;
    Q4_0 = 2, "q4_0", Q4_0;
    Q4_1 = 3, "q4_1", Q4_1;
    Q5_0 = 6, "q5_0", Q5_0;
    Q5_1 = 7, "q5_1", Q5_1;
    Q8_0 = 8, "q8_0", Q8_0;
    Q8_1 = 9, "q8_1", Q8_1;
    Q2_K = 10, "q2_K", Q2K;
    Q3_K = 11, "q3_K", Q3K;
    Q4_K = 12, "q4_K", Q4K;
    Q5_K = 13, "q5_K", Q5K;
    Q6_K = 14, "q6_K", Q6K;
    Q8_K = 15, "q8_K", Q8K;
    IQ2_XXS = 16, "iq2_xxs", Iq2Xxs;
    IQ2_XS = 17, "iq2_xs", Iq2Xs;
    IQ3_XXS = 18, "iq3_xxs", Iq3Xxs;
    IQ1_S = 19, "iq1_s", Iq1S;
    IQ4_NL = 20, "iq4_nl", Iq4Nl;
    IQ3_S = 21, "iq3_s", Iq3S;
    IQ2_S = 22, "iq2_s", Iq2S;
    IQ4_XS = 23, "iq4_xs", Iq4Xs;
    I8 = 24, "i8", I8;
    I16 = 25, "i16", I16Block;
    I32 = 26, "i32", I32Block;
    I64 = 27, "i64", I64Block;
    F64 = 28, "f64", F64;
    IQ1_M = 29, "iq1_m", Iq1M;
    BF16 = 30, "bf16", Bf16;
    TQ1_0 = 34, "tq1_0", Tq1_0;
    TQ2_0 = 35, "tq2_0", Tq2_0;
    MXFP4 = 39, "mxfp4", Mxfp4;
    NVFP4 = 40, "nvfp4", Nvfp4;
    Q1_0 = 41, "q1_0", Q1_0;
    Q2_0 = 42, "q2_0", Q2_0;
}

/// Ids ggml once used and retired, with their old names.
pub const RETIRED_TYPES: [(u32, &str); 8] = [
    (4, "q4_2"),
    (5, "q4_3"),
    (31, "q4_0_4_4"),
    (32, "q4_0_4_8"),
    (33, "q4_0_8_8"),
    (36, "iq4_nl_4_4"),
    (37, "iq4_nl_4_8"),
    (38, "iq4_nl_8_8"),
];

/// Why a shape has no byte size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// `ne[0]` is not a multiple of the block size.
    NotWholeBlocks {
        /// `ne[0]`.
        ne0: u64,
        /// The type's block size.
        block: u64,
    },
    /// The element count or byte size exceeds `i64::MAX`.
    Overflow,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::NotWholeBlocks { ne0, block } => write!(
                f,
                "ne[0] = {ne0} is not a multiple of the block size {block}"
            ),
            SizeError::Overflow => f.write_str("element count or byte size exceeds i64::MAX"),
        }
    }
}

impl std::error::Error for SizeError {}

impl GgmlType {
    /// The type with this id; `None` for unknown and retired ids.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GgmlType::from_repr(id)
    }

    /// The numeric id.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Canonical name (`q4_K`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Elements per block (1 for plain types).
    pub fn block_size(self) -> u64 {
        self.block_and_bytes().0
    }

    /// Bytes per block.
    pub fn type_size(self) -> u64 {
        self.block_and_bytes().1
    }

    /// Whether the type is a block quantization rather than plain numbers (as ggml's
    /// `ggml_is_quantized`: blocks of more than one element).
    pub fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// Bytes a tensor of this type and shape takes: whole blocks along `ne[0]`, the element
    /// count at most `i64::MAX`, every step checked (the division comes before the products).
    pub fn byte_size(self, dims: &[u64]) -> Result<u64, SizeError> {
        let limit = i64::MAX as u64;
        let mut elements: u64 = 1;
        for &ne in dims {
            elements = elements
                .checked_mul(ne)
                .filter(|&n| n <= limit)
                .ok_or(SizeError::Overflow)?;
        }
        let (block, bytes) = self.block_and_bytes();
        let ne0 = dims.first().copied().unwrap_or(1);
        if ne0 % block != 0 {
            return Err(SizeError::NotWholeBlocks { ne0, block });
        }
        let mut size = (ne0 / block)
            .checked_mul(bytes)
            .ok_or(SizeError::Overflow)?;
        for &ne in dims.iter().skip(1) {
            size = size.checked_mul(ne).ok_or(SizeError::Overflow)?;
        }
        (size <= limit).then_some(size).ok_or(SizeError::Overflow)
    }
}

impl GgmlType {
    /// The byte size ggml computes (`ggml_nbytes`, as `gguf.cpp` lays tensors out): strides
    /// multiplied up from the type size, `ne[0] × type size` before the division by the block
    /// size, all in wrapping 64-bit arithmetic. Equal to [`GgmlType::byte_size`] whenever that
    /// is `Ok` and nothing wraps; where it differs, ggml judges the tensor by a wrong size.
    pub fn ggml_nbytes(self, dims: &[u64]) -> u64 {
        let (block, bytes) = self.block_and_bytes();
        let ne = |i: usize| dims.get(i).copied().unwrap_or(1);
        // nb[0] = type size, nb[1] = nb[0] × (ne[0] / block), nb[j] = nb[j-1] × ne[j-1].
        let mut nb = [bytes, bytes.wrapping_mul(ne(0) / block), 0, 0];
        for j in 2..4 {
            nb[j] = nb[j - 1].wrapping_mul(ne(j - 1));
        }
        if (0..4).any(|i| ne(i) == 0) {
            return 0;
        }
        let mut size = if block == 1 {
            bytes
        } else {
            ne(0).wrapping_mul(nb[0]) / block
        };
        let first = if block == 1 { 0 } else { 1 };
        for (i, &stride) in nb.iter().enumerate().skip(first) {
            size = size.wrapping_add((ne(i) - 1).wrapping_mul(stride));
        }
        size
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name of a raw type id: canonical, `retired:q4_2`, or `unknown:99`.
pub fn type_name(id: u32) -> String {
    if let Some(t) = GgmlType::from_id(id) {
        return t.name().to_owned();
    }
    match RETIRED_TYPES.iter().find(|(r, _)| *r == id) {
        Some((_, name)) => format!("retired:{name}"),
        None => format!("unknown:{id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    #[test]
    fn retired_and_unknown_ids_have_no_type() {
        for (id, _) in RETIRED_TYPES {
            assert_eq!(GgmlType::from_id(id), None);
        }
        assert_eq!(type_name(4), "retired:q4_2");
        let past = GgmlType::iter().map(GgmlType::id).max().unwrap_or(0) + 1;
        assert_eq!(GgmlType::from_id(past), None);
        assert_eq!(type_name(past), format!("unknown:{past}"));
        for t in GgmlType::iter() {
            assert_eq!(t.name().to_uppercase().parse::<GgmlType>(), Ok(t));
        }
    }

    #[test]
    fn ggmls_arithmetic_agrees_where_nothing_wraps_and_wraps_where_it_does() {
        for t in GgmlType::iter() {
            for dims in [
                vec![],
                vec![t.block_size()],
                vec![t.block_size() * 3, 2, 5],
                vec![0, 7],
            ] {
                if let Ok(size) = t.byte_size(&dims) {
                    assert_eq!(t.ggml_nbytes(&dims), size, "{t} {dims:?}");
                }
            }
        }
        // ne[0] × 18 wraps before the division by 32: ggml sees a size that fits, the real one
        // is past 2^64.
        let dims = [(1u64 << 62) - 32, 4];
        assert_eq!(GgmlType::Q4_0.byte_size(&dims), Err(SizeError::Overflow));
        assert!(GgmlType::Q4_0.ggml_nbytes(&dims) < 1 << 63);
    }

    #[test]
    fn byte_size_divides_before_multiplying_and_checks_overflow() {
        assert_eq!(GgmlType::Q4_K.byte_size(&[512, 3]), Ok(2 * 144 * 3));
        assert_eq!(GgmlType::F32.byte_size(&[]), Ok(4));
        assert_eq!(GgmlType::F32.byte_size(&[0, 7]), Ok(0));
        assert!(matches!(
            GgmlType::Q4_0.byte_size(&[33]),
            Err(SizeError::NotWholeBlocks { .. })
        ));
        // ne * type_size wraps before the division; the right order sees the overflow.
        assert_eq!(
            GgmlType::Q4_0.byte_size(&[1 << 62, 4]),
            Err(SizeError::Overflow)
        );
        assert_eq!(
            GgmlType::F32.byte_size(&[1 << 62]),
            Err(SizeError::Overflow)
        );
    }
}
