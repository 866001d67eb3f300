//! The multi-byte numbers inside blocks, held little-endian whatever the file's byte order:
//! binrw reads them in the file's order and writes them in the order asked, so a block read
//! from a big-endian file and written little-endian is byte-swapped field by field, as its
//! declaration says. Held as bytes, they have alignment 1 and no padding: a slice of blocks can
//! be viewed in place (`bytemuck`).

use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};
use bytemuck::{Pod, Zeroable};

macro_rules! scalar {
    ($($(#[$doc:meta])* $name:ident($n:literal, $prim:ty);)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
        #[repr(transparent)]
        pub struct $name(pub [u8; $n]);

        impl $name {
            /// The number.
            #[inline]
            pub fn get(self) -> $prim {
                <$prim>::from_le_bytes(self.0)
            }

            /// From a number.
            #[inline]
            pub fn new(value: $prim) -> Self {
                $name(value.to_le_bytes())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:#x}", self.get())
            }
        }

        impl BinRead for $name {
            type Args<'a> = ();
            fn read_options<R: Read + Seek>(r: &mut R, endian: Endian, _: ()) -> BinResult<Self> {
                <$prim>::read_options(r, endian, ()).map($name::new)
            }
        }

        impl BinWrite for $name {
            type Args<'a> = ();
            fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, _: ()) -> BinResult<()> {
                self.get().write_options(w, endian, ())
            }
        }
    )*};
}

scalar! {
    /// A 16-bit unsigned integer (or word of packed bits).
    U16(2, u16);
    /// A 32-bit unsigned integer (or word of packed bits).
    U32(4, u32);
    /// A 64-bit unsigned integer (the bits of an f64 or i64).
    U64(8, u64);
    /// A 16-bit signed integer.
    I16(2, i16);
    /// A 32-bit signed integer.
    I32(4, i32);
    /// A 64-bit signed integer.
    I64(8, i64);
    /// An IEEE binary16 (`ggml_half`), as its bits.
    Half(2, u16);
}
