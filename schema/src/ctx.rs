//! What every field needs to know about the file it is in: count width, byte order, where the
//! input ends, and how deep in nested arrays it sits.

use crate::error::{custom, DecodeErrorKind, EncodeError};
use crate::limits::MAX_ARRAY_DEPTH;
use crate::repr::Element;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};

/// Byte order of every number in a file, decided by its version field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian: what almost every file uses.
    Little,
    /// Big-endian: allowed since version 3 (version 2 files exist too).
    Big,
}

impl ByteOrder {
    /// The binrw endianness for this byte order.
    pub fn endian(self) -> Endian {
        match self {
            ByteOrder::Little => Endian::Little,
            ByteOrder::Big => Endian::Big,
        }
    }

    /// Lower-case name, as `dump --json` prints it.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        }
    }
}

/// Width of counts, string lengths, array lengths and dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// Version 1: `u32`.
    W32,
    /// Versions 2 and 3: `u64`.
    W64,
}

impl Width {
    /// The width a version uses ([`crate::VERSIONS`]; the newest's for a version not in it).
    pub fn of_version(version: u32) -> Width {
        match crate::version::version_spec(version) {
            Some(spec) => spec.width,
            None => crate::version::VERSIONS[crate::version::VERSIONS.len() - 1].width,
        }
    }

    /// Bytes one word takes.
    pub fn bytes(self) -> u64 {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    /// The word in exactly [`Width::bytes`] bytes, widened; `None` for another length.
    pub fn decode(self, bytes: &[u8], endian: Endian) -> Option<u64> {
        match self {
            Width::W32 => u32::decode(bytes, endian).map(u64::from),
            Width::W64 => u64::decode(bytes, endian),
        }
    }
}

/// Arguments threaded through every schema type.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// Format version (one of [`crate::VERSIONS`]).
    pub version: u32,
    /// Byte order of the file.
    pub byte_order: ByteOrder,
    /// Length of the input, for the "is there room for this count" checks (u64::MAX on write).
    pub end: u64,
    /// Array nesting depth of the value being read or written.
    pub depth: u8,
}

impl Ctx {
    /// Context for reading an input of `end` bytes.
    pub fn new(version: u32, byte_order: ByteOrder, end: u64) -> Ctx {
        Ctx {
            version,
            byte_order,
            end,
            depth: 0,
        }
    }

    /// Width of counts in this version.
    pub fn width(&self) -> Width {
        Width::of_version(self.version)
    }

    /// The context one array level deeper, or `None` past [`MAX_ARRAY_DEPTH`].
    pub fn deeper(self) -> Option<Ctx> {
        (self.depth < MAX_ARRAY_DEPTH).then(|| Ctx {
            depth: self.depth + 1,
            ..self
        })
    }

    /// Smallest encoding of a metadata pair (an empty key, which validation, not decoding,
    /// refuses, and the smallest value), measured by encoding it.
    pub fn min_kv_size(&self) -> u64 {
        crate::size::smallest(self.width()).kv
    }

    /// Smallest encoding of a tensor info (empty name, no dimensions), measured by encoding it.
    pub fn min_tensor_info_size(&self) -> u64 {
        crate::size::smallest(self.width()).tensor_info
    }
}

/// A count, length or dimension as stored: `u32` in version 1, `u64` after.
///
/// Writers build it with [`Word::narrow`], which refuses a value version 1 cannot hold, so a
/// count can never be written wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// Version 1.
    W32(u32),
    /// Versions 2 and 3.
    W64(u64),
}

impl Word {
    /// The value, widened.
    pub fn get(self) -> u64 {
        match self {
            Word::W32(v) => u64::from(v),
            Word::W64(v) => v,
        }
    }

    /// The word for `value` in this context's width; an error when version 1 cannot hold it.
    pub fn narrow<N: TryInto<u64>>(value: N, ctx: Ctx) -> Result<Word, EncodeError> {
        let value: u64 = value
            .try_into()
            .map_err(|_| EncodeError::TooLargeForVersion {
                value: u64::MAX,
                version: ctx.version,
            })?;
        match ctx.width() {
            Width::W64 => Ok(Word::W64(value)),
            Width::W32 => {
                u32::try_from(value)
                    .map(Word::W32)
                    .map_err(|_| EncodeError::TooLargeForVersion {
                        value,
                        version: ctx.version,
                    })
            }
        }
    }
}

impl BinRead for Word {
    type Args<'a> = Ctx;

    fn read_options<R: Read + Seek>(reader: &mut R, endian: Endian, ctx: Ctx) -> BinResult<Self> {
        Ok(match ctx.width() {
            Width::W32 => Word::W32(u32::read_options(reader, endian, ())?),
            Width::W64 => Word::W64(u64::read_options(reader, endian, ())?),
        })
    }
}

impl BinWrite for Word {
    type Args<'a> = ();

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, _: ()) -> BinResult<()> {
        match *self {
            Word::W32(v) => v.write_options(w, endian, ()),
            Word::W64(v) => v.write_options(w, endian, ()),
        }
    }
}

/// Reads a count of items that each take at least `item_size` bytes, and refuses it unless the
/// input has room for them: nothing is allocated for a count the input cannot back.
pub fn read_count<R: Read + Seek>(
    reader: &mut R,
    endian: Endian,
    (ctx, item_size): (Ctx, u64),
) -> BinResult<Word> {
    let pos = reader.stream_position()?;
    let word = Word::read_options(reader, endian, ctx)?;
    let left = ctx.end.saturating_sub(pos + ctx.width().bytes());
    let count = word.get();
    match count.checked_mul(item_size) {
        Some(needed) if needed <= left => Ok(word),
        _ => Err(custom(
            pos,
            DecodeErrorKind::CountTooLarge {
                count,
                item_size,
                left,
            },
        )),
    }
}

/// Reads `count` words (dimensions; at most [`crate::limits::MAX_DIMS`], checked by the caller)
/// in one read, into `out`; returns how many.
pub(crate) fn read_dims_into<R: Read + Seek>(
    reader: &mut R,
    endian: Endian,
    count: u32,
    ctx: Ctx,
    out: &mut [u64; crate::limits::MAX_DIMS as usize],
) -> BinResult<usize> {
    let n = (count as usize).min(out.len());
    let w = ctx.width().bytes() as usize;
    let mut bytes = [0u8; 8 * crate::limits::MAX_DIMS as usize];
    reader.read_exact(&mut bytes[..n * w])?;
    for (slot, b) in out.iter_mut().zip(bytes[..n * w].chunks_exact(w)) {
        *slot = ctx.width().decode(b, endian).unwrap_or_default();
    }
    Ok(n)
}

/// Writes words (dimensions) in the context's width, refusing values version 1 cannot hold.
pub fn write_words<D: std::ops::Deref<Target = [u64]>, W: Write + Seek>(
    words: &D,
    writer: &mut W,
    endian: Endian,
    ctx: Ctx,
) -> BinResult<()> {
    for &w in words.iter() {
        Word::narrow(w, ctx)
            .map_err(|e| e.into_binrw(writer))?
            .write_options(writer, endian, ())?;
    }
    Ok(())
}
