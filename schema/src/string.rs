//! `gguf_string_t`: a length, then that many bytes of UTF-8, no NUL.

use crate::ctx::{read_count, Ctx, Word};
use crate::repr::{Owned, Repr};
use binrw::error::ContextExt;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};
use std::fmt;

/// A GGUF string: `len` (u32 in version 1, u64 after) and UTF-8 bytes, held as `R` holds
/// strings: a `String` ([`Owned`]) or a span of the input ([`crate::Spans`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgufStringOf<H: Repr> {
    /// The text, or where it lies.
    pub string: H::Str,
}

/// A string of the owned model.
pub type GgufString = GgufStringOf<Owned>;

impl<H: Repr> GgufStringOf<H> {
    /// Bytes of text.
    pub fn byte_len(&self) -> u64 {
        H::str_len(&self.string)
    }
}

impl<H: Repr> BinRead for GgufStringOf<H> {
    type Args<'a> = Ctx;

    fn read_options<Rd: Read + Seek>(reader: &mut Rd, endian: Endian, ctx: Ctx) -> BinResult<Self> {
        let len = read_count(reader, endian, (ctx, 1)).map_err(|e| e.with_message("len"))?;
        let string = H::read_str(reader, len.get()).map_err(|e| e.with_message("string"))?;
        Ok(GgufStringOf { string })
    }
}

impl<H: Repr> BinWrite for GgufStringOf<H> {
    type Args<'a> = Ctx;

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, ctx: Ctx) -> BinResult<()> {
        let len = Word::narrow(self.byte_len(), ctx).map_err(|e| e.into_binrw(w))?;
        len.write_options(w, endian, ())?;
        H::write_str(&self.string, w)
    }
}

impl GgufString {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.string
    }
}

impl From<&str> for GgufString {
    fn from(s: &str) -> Self {
        GgufString {
            string: s.to_owned(),
        }
    }
}

impl From<String> for GgufString {
    fn from(string: String) -> Self {
        GgufString { string }
    }
}

impl std::ops::Deref for GgufString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.string
    }
}

impl PartialEq<str> for GgufString {
    fn eq(&self, other: &str) -> bool {
        self.string == other
    }
}

impl fmt::Display for GgufString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.string)
    }
}
