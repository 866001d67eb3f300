//! `gguf_string_t`: a length, then that many bytes of UTF-8, no NUL.

use crate::ctx::{read_count, Ctx, Word};
use crate::error::{custom, DecodeErrorKind};
use binrw::io::{Read, Seek, Write};
use binrw::{binrw, BinResult, Endian};
use std::fmt;

/// A GGUF string: `len` (u32 in version 1, u64 after) and UTF-8 bytes.
#[binrw]
#[brw(import_raw(ctx: Ctx))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgufString {
    #[br(temp, parse_with = read_count, args(ctx, 1))]
    #[bw(try_calc = Word::narrow(string.len(), ctx))]
    len: Word,

    /// The text.
    #[br(parse_with = read_utf8, args(len.get()))]
    #[bw(write_with = write_utf8)]
    pub string: String,
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

/// Reads `len` bytes of strict UTF-8; the caller has checked that they are present.
fn read_utf8<R: Read + Seek>(reader: &mut R, _: Endian, (len,): (u64,)) -> BinResult<String> {
    let pos = reader.stream_position()?;
    let len = usize::try_from(len).map_err(|_| {
        custom(
            pos,
            DecodeErrorKind::CountTooLarge {
                count: len,
                item_size: 1,
                left: 0,
            },
        )
    })?;
    let mut bytes = vec![0u8; len];
    reader.read_exact(&mut bytes)?;
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to() as u64;
        custom(pos + bad, DecodeErrorKind::InvalidUtf8)
    })
}

fn write_utf8<W: Write + Seek>(s: &String, writer: &mut W, _: Endian, _: ()) -> BinResult<()> {
    writer.write_all(s.as_bytes())?;
    Ok(())
}
