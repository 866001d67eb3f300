//! The bytes between the tensor infos and the aligned start of the data section.

use crate::ctx::Ctx;
use crate::error::EncodeError;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};

/// Bytes read or written at once; padding is never held whole unless it has non-zero bytes.
const CHUNK: usize = 64 << 10;

/// The padding as found: only its length when every byte is zero (an alignment may call for
/// up to 4 GiB of them), the bytes themselves otherwise (so they write back unchanged).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Padding {
    len: u64,
    /// Empty when all `len` bytes are zero, else all of them.
    bytes: Vec<u8>,
}

impl Padding {
    /// `len` zero bytes.
    pub fn zeros(len: u64) -> Padding {
        Padding {
            len,
            bytes: Vec::new(),
        }
    }

    /// These bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Padding {
        let len = bytes.len() as u64;
        if bytes.iter().all(|&b| b == 0) {
            Padding::zeros(len)
        } else {
            Padding { len, bytes }
        }
    }

    /// Number of bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether every byte is zero, as the specification asks.
    pub fn is_zero(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes that are not zero, when there are any: all `len` bytes then.
    pub fn nonzero_bytes(&self) -> Option<&[u8]> {
        (!self.bytes.is_empty()).then_some(&self.bytes[..])
    }

    /// Keeps the first `len` bytes.
    pub fn truncate(&mut self, len: u64) {
        if len < self.len {
            self.bytes.truncate(len as usize);
            *self = Padding::from_bytes(std::mem::take(&mut self.bytes));
            self.len = len;
        }
    }
}

impl BinRead for Padding {
    /// The alignment in force and the reading context.
    type Args<'a> = (u32, Ctx);

    /// Reads up to the alignment, or up to the end of the input if that comes first.
    fn read_options<R: Read + Seek>(
        reader: &mut R,
        _: Endian,
        (alignment, ctx): (u32, Ctx),
    ) -> BinResult<Self> {
        let pos = reader.stream_position()?;
        let target = pos.next_multiple_of(u64::from(alignment.max(1)));
        let len = target.min(ctx.end).saturating_sub(pos);
        let mut chunk = [0u8; 4096];
        let mut padding = Padding::zeros(len);
        let mut done = 0u64;
        while done < len {
            let n = chunk.len().min((len - done) as usize);
            reader.read_exact(&mut chunk[..n])?;
            if !padding.bytes.is_empty() {
                padding.bytes.extend_from_slice(&chunk[..n]);
            } else if chunk[..n].iter().any(|&b| b != 0) {
                // Held only from here on; what was read of it is justified by the input.
                padding.bytes.reserve(len as usize);
                padding.bytes.resize(done as usize, 0);
                padding.bytes.extend_from_slice(&chunk[..n]);
            }
            done += n as u64;
        }
        Ok(padding)
    }
}

impl BinWrite for Padding {
    /// The alignment in force, and whether tensor data follows: then the padding must reach
    /// the aligned offset exactly; without data it may stop short, as files cut at the end of
    /// their tensor infos do.
    type Args<'a> = (u32, bool);

    fn write_options<W: Write + Seek>(
        &self,
        w: &mut W,
        _: Endian,
        (alignment, data_follows): (u32, bool),
    ) -> BinResult<()> {
        let pos = w.stream_position()?;
        let expected = pos.next_multiple_of(u64::from(alignment.max(1))) - pos;
        if self.len > expected || (data_follows && self.len != expected) {
            return Err(binrw::Error::Custom {
                pos,
                err: Box::new(EncodeError::BadPadding {
                    present: self.len,
                    expected,
                }),
            });
        }
        if !self.bytes.is_empty() {
            return Ok(w.write_all(&self.bytes)?);
        }
        static ZEROS: [u8; CHUNK] = [0; CHUNK];
        let mut left = self.len;
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            w.write_all(&ZEROS[..n])?;
            left -= n as u64;
        }
        Ok(())
    }
}
