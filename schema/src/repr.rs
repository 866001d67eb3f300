//! How decoded strings and arrays are held: copied out of the input ([`Owned`], the model that
//! edits and writes), or as spans of it ([`Spans`], what a zero-copy view is built on). The
//! schema types take one of the two as a parameter, so both come from the same definition and
//! the same checks: a file that one decodes, the other decodes too, and they fail alike.

use crate::ctx::{read_dims_into, Ctx, Width, Word};
use crate::error::{custom, DecodeErrorKind};
use crate::limits::MAX_DIMS;
use crate::string::{StrList, Text};
use binrw::error::ContextExt;
use binrw::io::{Read, Seek, SeekFrom, Write};
use binrw::{BinResult, Endian};
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Deref;

/// Keeps [`Repr`] to this crate's two: the decoder's bounds checks live in their readers.
mod sealed {
    #[allow(unnameable_types)]
    pub trait Sealed {}
    impl Sealed for super::Owned {}
    impl Sealed for super::Spans {}
}

/// How strings and arrays are held: [`Owned`] or [`Spans`] (sealed: no other can be written).
pub trait Repr:
    sealed::Sealed + Copy + Clone + Debug + Default + PartialEq + Eq + Hash + 'static
{
    /// One string.
    type Str: Clone + Debug + Default + PartialEq + Eq + Hash + PartialOrd + Ord;
    /// An array of numbers or bools.
    type Nums<T: Element>: Clone + Debug + PartialEq;
    /// An array of strings.
    type Strs: Clone + Debug + PartialEq;
    /// A tensor's dimensions.
    type Dims: Clone + Debug + Default + PartialEq + Eq + Hash + Deref<Target = [u64]>;

    /// Reads `count` dimensions (at most [`MAX_DIMS`]: the caller checked).
    fn read_dims<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u32,
        ctx: Ctx,
    ) -> BinResult<Self::Dims>;

    /// Reads a string of `len` bytes, UTF-8 or not (present: the caller checked).
    fn read_str<R: Read + Seek>(reader: &mut R, len: u64) -> BinResult<Self::Str>;
    /// Reads `count` elements (present: the caller checked).
    fn read_nums<T: Element, R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u64,
    ) -> BinResult<Self::Nums<T>>;
    /// Reads `count` strings.
    fn read_strs<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u64,
        ctx: Ctx,
    ) -> BinResult<Self::Strs>;

    /// Bytes of a string.
    fn str_len(s: &Self::Str) -> u64;
    /// A string's bytes, when they are held.
    fn held_bytes(s: &Self::Str) -> Option<&[u8]>;
    /// Whether a string is `text`; spans look in the input, and leave the reader where it was.
    fn str_eq<R: Read + Seek>(s: &Self::Str, text: &str, reader: &mut R) -> BinResult<bool>;
    /// Elements of an array of numbers.
    fn nums_len<T: Element>(a: &Self::Nums<T>) -> usize;
    /// Elements of an array of strings.
    fn strs_len(a: &Self::Strs) -> usize;
    /// Encoded bytes of an array of strings, lengths included.
    fn strs_bytes(a: &Self::Strs, width: Width) -> u64;

    /// Writes a string's bytes.
    fn write_str<W: Write + Seek>(s: &Self::Str, w: &mut W) -> BinResult<()>;
    /// Writes an array's elements.
    fn write_nums<T: Element, W: Write + Seek>(
        a: &Self::Nums<T>,
        w: &mut W,
        endian: Endian,
    ) -> BinResult<()>;
    /// Writes an array's strings.
    fn write_strs<W: Write + Seek>(
        a: &Self::Strs,
        w: &mut W,
        endian: Endian,
        ctx: Ctx,
    ) -> BinResult<()>;
}

/// Everything copied out of the input: [`Text`], `Vec<T>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owned;

/// Everything left in the input, as offsets: what [`Spans`] holds for a string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Spans;

/// Where a string's bytes lie in the input (UTF-8 or not: the view says when they are read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Offset of the first byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// Where an array of numbers or bools lies in the input, in the file's byte order.
#[derive(Debug, PartialEq, Eq)]
pub struct NumSpan<T> {
    /// Offset of the first element.
    pub offset: u64,
    /// Elements.
    pub count: u64,
    _type: PhantomData<T>,
}

impl<T> Clone for NumSpan<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for NumSpan<T> {}

/// Where an array of strings lies in the input: `count` length-prefixed strings in `bytes`
/// bytes from `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrsSpan {
    /// Offset of the first string's length.
    pub offset: u64,
    /// Bytes of the whole array, lengths included.
    pub bytes: u64,
    /// Strings.
    pub count: u64,
}

/// A tensor's dimensions held inline (decoding refuses more than [`MAX_DIMS`]), so that a view
/// allocates nothing per tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dims {
    len: u8,
    values: [u64; MAX_DIMS as usize],
}

impl Deref for Dims {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.values[..self.len as usize]
    }
}

/// A number type an array can hold, or bool.
pub trait Element: Copy + Debug + PartialEq + 'static {
    /// Bytes per element.
    const SIZE: usize;
    /// Decodes one element from exactly `SIZE` bytes (`None` for another length).
    fn decode(bytes: &[u8], endian: Endian) -> Option<Self>;
    /// Appends the element's bytes.
    fn encode(self, out: &mut Vec<u8>, endian: Endian);
}

macro_rules! numeric_elements {
    ($($ty:ty),*) => {$(
        impl Element for $ty {
            const SIZE: usize = std::mem::size_of::<$ty>();
            #[inline]
            fn decode(bytes: &[u8], endian: Endian) -> Option<Self> {
                let array = bytes.try_into().ok()?;
                Some(match endian {
                    Endian::Little => <$ty>::from_le_bytes(array),
                    Endian::Big => <$ty>::from_be_bytes(array),
                })
            }
            #[inline]
            fn encode(self, out: &mut Vec<u8>, endian: Endian) {
                out.extend_from_slice(&match endian {
                    Endian::Little => self.to_le_bytes(),
                    Endian::Big => self.to_be_bytes(),
                });
            }
        }
    )*};
}

numeric_elements!(u8, i8, u16, i16, u32, i32, f32, u64, i64, f64);

/// Bytes read at once from the input for arrays.
const CHUNK: usize = 64 << 10;

/// Reads `count` elements in chunks, handing each chunk's bytes to `each`.
fn each_num_chunk<T: Element, R: Read + Seek>(
    reader: &mut R,
    count: u64,
    mut each: impl FnMut(&[u8]),
) -> BinResult<()> {
    let total = count.saturating_mul(T::SIZE as u64);
    let mut buf = vec![0u8; (total.min(CHUNK as u64) as usize / T::SIZE) * T::SIZE];
    let mut left = total;
    while left > 0 {
        let n = (left.min(buf.len() as u64)) as usize;
        reader.read_exact(&mut buf[..n])?;
        each(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}

/// Walks `count` length-prefixed strings from the reader, checking each length against the
/// input, and hands each string's bytes to `each` (UTF-8 or not: that is for the reader of
/// the string to know, and for validation to judge).
///
/// Reads in chunks, but never past the array: it reads ahead only up to the array's least
/// possible end (what it has learnt so far plus a length prefix for each string still to come),
/// so a reader that ends with the header is never read past it. Errors name the string `[i]`
/// and its field (`len`, `string`), as the single-string reader does.
fn walk_strs<R: Read + Seek>(
    reader: &mut R,
    endian: Endian,
    count: u64,
    ctx: Ctx,
    mut each: impl FnMut(&[u8]),
) -> BinResult<()> {
    let width = ctx.width().bytes() as usize;
    // `buf[..filled]` holds the input from `pos`; strings before `at` are walked and handed
    // out.
    let mut pos = reader.stream_position()?;
    let mut least_end = pos
        .saturating_add(count.saturating_mul(width as u64))
        .min(ctx.end);
    let mut buf = vec![0u8; (least_end - pos).min(CHUNK as u64) as usize];
    let (mut filled, mut at) = (0usize, 0usize);

    // Makes `buf[..n]` hold input, reading at most up to `least_end`; false if the input ends.
    let fill = |reader: &mut R,
                buf: &mut Vec<u8>,
                filled: &mut usize,
                pos: u64,
                least_end: u64,
                n: usize|
     -> BinResult<bool> {
        if n <= *filled {
            return Ok(true);
        }
        let can = (least_end - pos) as usize;
        if n > can {
            return Ok(false);
        }
        let want = can.min(n.max(*filled + CHUNK));
        if buf.len() < want {
            buf.resize(want, 0);
        }
        reader.read_exact(&mut buf[*filled..want])?;
        *filled = want;
        Ok(true)
    };

    for i in 0..count {
        if !fill(reader, &mut buf, &mut filled, pos, least_end, at + width)? {
            // The input ends inside this length: read it where it is, to fail as a cut field.
            reader.seek(SeekFrom::Start(pos + at as u64))?;
            let mut rest = [0u8; 8];
            let e = reader.read_exact(&mut rest[..width]).err();
            let e = e.unwrap_or_else(|| std::io::ErrorKind::UnexpectedEof.into());
            return Err(binrw::Error::from(e)
                .with_message("len")
                .with_message(format!("[{i}]")));
        }
        let len_bytes = &buf[at..at + width];
        let len = ctx.width().decode(len_bytes, endian).unwrap_or_default();
        let start = at + width;
        let left = ctx.end.saturating_sub(pos + start as u64);
        if len > left {
            let err = custom(
                pos + at as u64,
                DecodeErrorKind::CountTooLarge {
                    count: len,
                    item_size: 1,
                    left,
                },
            );
            return Err(err.with_message("len").with_message(format!("[{i}]")));
        }
        least_end = least_end.saturating_add(len).min(ctx.end);
        let end = start + len as usize;
        // Inside the input (checked above) and the array, so the read succeeds.
        fill(reader, &mut buf, &mut filled, pos, least_end, end)?;
        each(&buf[start..end]);
        at = end;
        if at >= CHUNK {
            // Keep what was read past the run (at most up to the array's least end).
            buf.copy_within(at..filled, 0);
            filled -= at;
            pos += at as u64;
            at = 0;
        }
    }
    Ok(())
}

impl Repr for Owned {
    type Str = Text;
    type Nums<T: Element> = Vec<T>;
    type Strs = StrList;
    type Dims = Vec<u64>;

    fn read_dims<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u32,
        ctx: Ctx,
    ) -> BinResult<Vec<u64>> {
        let mut dims = [0; MAX_DIMS as usize];
        let n = read_dims_into(reader, endian, count, ctx, &mut dims)?;
        Ok(dims[..n].to_vec())
    }

    fn read_str<R: Read + Seek>(reader: &mut R, len: u64) -> BinResult<Text> {
        let pos = reader.stream_position()?;
        let mut bytes = vec![0u8; checked_len(len, pos)?];
        reader.read_exact(&mut bytes)?;
        Ok(Text::from_bytes(bytes))
    }

    fn read_nums<T: Element, R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u64,
    ) -> BinResult<Vec<T>> {
        let pos = reader.stream_position()?;
        let mut out = Vec::with_capacity(checked_len(count, pos)?);
        each_num_chunk::<T, R>(reader, count, |chunk| {
            // Every element decodes: the chunk holds whole elements.
            out.extend(
                chunk
                    .chunks_exact(T::SIZE)
                    .filter_map(|b| T::decode(b, endian)),
            );
        })?;
        Ok(out)
    }

    fn read_strs<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u64,
        ctx: Ctx,
    ) -> BinResult<StrList> {
        let pos = reader.stream_position()?;
        // The text takes at most what is left of the input past the lengths; it is reserved up
        // to 1 MiB at once, and grows from there as strings come.
        let room =
            (ctx.end.saturating_sub(pos)).saturating_sub(count.saturating_mul(ctx.width().bytes()));
        let mut out = StrList::with_capacity(checked_len(count, pos)?, room.min(1 << 20) as usize);
        walk_strs(reader, endian, count, ctx, |bytes| out.push_bytes(bytes))?;
        Ok(out)
    }

    fn str_len(s: &Text) -> u64 {
        s.len() as u64
    }

    fn held_bytes(s: &Text) -> Option<&[u8]> {
        Some(s.as_bytes())
    }

    fn str_eq<R: Read + Seek>(s: &Text, text: &str, _: &mut R) -> BinResult<bool> {
        Ok(s == text)
    }

    fn nums_len<T: Element>(a: &Vec<T>) -> usize {
        a.len()
    }

    fn strs_len(a: &StrList) -> usize {
        a.len()
    }

    fn strs_bytes(a: &StrList, width: Width) -> u64 {
        a.len() as u64 * crate::ValueType::String.min_size(width) + a.text_len() as u64
    }

    fn write_str<W: Write + Seek>(s: &Text, w: &mut W) -> BinResult<()> {
        Ok(w.write_all(s.as_bytes())?)
    }

    fn write_nums<T: Element, W: Write + Seek>(
        a: &Vec<T>,
        w: &mut W,
        endian: Endian,
    ) -> BinResult<()> {
        let mut buf = Vec::with_capacity(CHUNK);
        for piece in a.chunks(CHUNK / T::SIZE) {
            buf.clear();
            piece.iter().for_each(|v| v.encode(&mut buf, endian));
            w.write_all(&buf)?;
        }
        Ok(())
    }

    fn write_strs<W: Write + Seek>(
        a: &StrList,
        w: &mut W,
        endian: Endian,
        ctx: Ctx,
    ) -> BinResult<()> {
        // Gathered into pieces of about a chunk: one write per piece, not two per string.
        let mut buf = Vec::with_capacity(CHUNK);
        for s in a.iter_bytes() {
            let len = Word::narrow(s.len(), ctx).map_err(|e| e.into_binrw(w))?;
            match len {
                Word::W32(n) => n.encode(&mut buf, endian),
                Word::W64(n) => n.encode(&mut buf, endian),
            }
            buf.extend_from_slice(s);
            if buf.len() >= CHUNK {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        Ok(w.write_all(&buf)?)
    }
}

impl Repr for Spans {
    type Str = Span;
    type Nums<T: Element> = NumSpan<T>;
    type Strs = StrsSpan;
    type Dims = Dims;

    fn read_dims<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u32,
        ctx: Ctx,
    ) -> BinResult<Dims> {
        let mut dims = Dims::default();
        dims.len = read_dims_into(reader, endian, count, ctx, &mut dims.values)? as u8;
        Ok(dims)
    }

    fn read_str<R: Read + Seek>(reader: &mut R, len: u64) -> BinResult<Span> {
        let offset = reader.stream_position()?;
        reader.seek(SeekFrom::Start(offset + len))?;
        Ok(Span { offset, len })
    }

    fn read_nums<T: Element, R: Read + Seek>(
        reader: &mut R,
        _: Endian,
        count: u64,
    ) -> BinResult<NumSpan<T>> {
        let offset = reader.stream_position()?;
        reader.seek(SeekFrom::Start(offset + count * T::SIZE as u64))?;
        Ok(NumSpan {
            offset,
            count,
            _type: PhantomData,
        })
    }

    fn read_strs<R: Read + Seek>(
        reader: &mut R,
        endian: Endian,
        count: u64,
        ctx: Ctx,
    ) -> BinResult<StrsSpan> {
        let offset = reader.stream_position()?;
        walk_strs(reader, endian, count, ctx, |_| ())?;
        let end = reader.stream_position()?;
        Ok(StrsSpan {
            offset,
            bytes: end - offset,
            count,
        })
    }

    fn str_len(s: &Span) -> u64 {
        s.len
    }

    fn held_bytes(_: &Span) -> Option<&[u8]> {
        None
    }

    fn str_eq<R: Read + Seek>(s: &Span, text: &str, reader: &mut R) -> BinResult<bool> {
        if s.len != text.len() as u64 {
            return Ok(false);
        }
        let back = reader.stream_position()?;
        reader.seek(SeekFrom::Start(s.offset))?;
        let mut bytes = vec![0u8; text.len()];
        let read = reader.read_exact(&mut bytes);
        reader.seek(SeekFrom::Start(back))?;
        read?;
        Ok(bytes == text.as_bytes())
    }

    fn nums_len<T: Element>(a: &NumSpan<T>) -> usize {
        a.count as usize
    }

    fn strs_len(a: &StrsSpan) -> usize {
        a.count as usize
    }

    fn strs_bytes(a: &StrsSpan, _: Width) -> u64 {
        a.bytes
    }

    // Spans mean nothing without their input: a view is written by copying its bytes, or
    // converted to the owned model. Writing one does not build: these bodies are evaluated
    // only where a program writes a `HeaderOf<Spans>` (or a part of one), and fail there.
    fn write_str<W: Write + Seek>(_: &Span, _: &mut W) -> BinResult<()> {
        const { Unwritable::<W>::VIEW }
    }

    fn write_nums<T: Element, W: Write + Seek>(
        _: &NumSpan<T>,
        _: &mut W,
        _: Endian,
    ) -> BinResult<()> {
        const { Unwritable::<W>::VIEW }
    }

    fn write_strs<W: Write + Seek>(_: &StrsSpan, _: &mut W, _: Endian, _: Ctx) -> BinResult<()> {
        const { Unwritable::<W>::VIEW }
    }
}

/// A constant that cannot be evaluated, for the writer type `W` of a monomorphized write: a
/// program that writes a view does not build.
///
/// The owned model writes:
/// ```
/// use binrw::{io::Cursor, BinWrite};
/// use ggufrw_schema::{decode_header_as, Header, Owned};
/// let mut bytes = Vec::new();
/// Header::new_v3().write_to(&mut bytes, false).unwrap();
/// let header = decode_header_as::<Owned, _>(&mut Cursor::new(&bytes)).unwrap();
/// let mut out = Cursor::new(Vec::new());
/// header.write_options(&mut out, header.byte_order.endian(), (header.ctx(), false)).unwrap();
/// assert_eq!(out.into_inner(), bytes);
/// ```
/// A view, the same call, does not compile:
/// ```compile_fail,E0080
/// use binrw::{io::Cursor, BinWrite};
/// use ggufrw_schema::{decode_header_as, Header, Spans};
/// let mut bytes = Vec::new();
/// Header::new_v3().write_to(&mut bytes, false).unwrap();
/// let header = decode_header_as::<Spans, _>(&mut Cursor::new(&bytes)).unwrap();
/// let mut out = Cursor::new(Vec::new());
/// header.write_options(&mut out, header.byte_order.endian(), (header.ctx(), false)).unwrap();
/// ```
struct Unwritable<W>(PhantomData<W>);

impl<W> Unwritable<W> {
    // Depends on `W`'s layout, so that it is evaluated only for a concrete writer.
    const VIEW: BinResult<()> = {
        assert!(
            std::mem::size_of::<W>() == usize::MAX,
            "a view (HeaderOf<Spans>) holds spans of its input and cannot be written: write its \
             bytes, or convert it to the owned model"
        );
        Ok(())
    };
}

/// `len` as a `usize`, or the error a count too large for memory gets.
fn checked_len(len: u64, pos: u64) -> BinResult<usize> {
    usize::try_from(len).map_err(|_| {
        custom(
            pos,
            DecodeErrorKind::CountTooLarge {
                count: len,
                item_size: 1,
                left: 0,
            },
        )
    })
}
