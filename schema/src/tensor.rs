//! `gguf_tensor_info_t`: name, dimensions, ggml type id, offset into the data section.

use crate::ctx::{write_words, Ctx};
use crate::error::{custom, DecodeErrorKind, EncodeError};
use crate::limits::MAX_DIMS;
use crate::repr::{Owned, Repr};
use crate::string::GgufStringOf;
use binrw::io::{Read, Seek};
use binrw::{binrw, BinRead, BinResult, Endian};

/// One tensor's description. The type id stays raw so that an unknown but well-formed id
/// still round-trips; validation names it.
#[binrw]
#[brw(import_raw(ctx: Ctx))]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorInfoOf<H: Repr> {
    /// Tensor name.
    #[brw(args_raw = ctx)]
    pub name: GgufStringOf<H>,

    #[br(temp, parse_with = read_n_dimensions)]
    #[bw(try_calc = u32::try_from(dimensions.len()).ok().filter(|&n| n <= MAX_DIMS)
        .ok_or(EncodeError::TooManyDimensions(dimensions.len())))]
    n_dimensions: u32,

    /// Element counts per dimension, fastest-varying first (`ne[0]`).
    #[br(parse_with = read_dims::<H, _>, args(n_dimensions, ctx))]
    #[bw(write_with = write_words, args_raw = ctx)]
    pub dimensions: H::Dims,

    /// ggml type id (`ggml_type`); the spec calls the field `type`.
    #[br(err_context("type"))]
    pub ggml_type: u32,

    /// Offset of the tensor's data from the start of the data section.
    pub offset: u64,
}

/// A tensor info of the owned model.
pub type TensorInfo = TensorInfoOf<Owned>;

/// Where each field of a tensor info lies in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorFields {
    /// The name (its length first).
    pub name: u64,
    /// `n_dimensions`.
    pub n_dimensions: u64,
    /// The first dimension.
    pub dimensions: u64,
    /// `type`.
    pub ggml_type: u64,
    /// `offset`.
    pub offset: u64,
    /// Where the next item starts.
    pub end: u64,
}

impl<H: Repr> TensorInfoOf<H> {
    /// Where each field lies, for a tensor info that starts at `start` in a file whose counts
    /// are `ctx.width()` wide: from the smallest encoding (empty name, no dimensions), the name's
    /// bytes and one count-wide word per dimension. Checked against the decoder (a file cut at
    /// each of these offsets fails at that field) and against encoding by properties.
    pub fn fields(&self, start: u64, ctx: Ctx) -> TensorFields {
        let width = ctx.width();
        let smallest = ctx.min_tensor_info_size();
        // The smallest encoding is the empty name, then the fixed-size fields.
        let empty_name = crate::ValueType::String.min_size(width);
        let fixed = smallest - empty_name;
        let n_dimensions = start + empty_name + self.name.byte_len();
        let dims_bytes = width.bytes() * self.dimensions.len() as u64;
        let end = n_dimensions + fixed + dims_bytes;
        // After the dimensions: the type id (u32) and the offset (u64).
        let offset = end - std::mem::size_of::<u64>() as u64;
        TensorFields {
            name: start,
            n_dimensions,
            dimensions: n_dimensions + std::mem::size_of::<u32>() as u64,
            ggml_type: offset - std::mem::size_of::<u32>() as u64,
            offset,
            end,
        }
    }
}

/// Reads `n_dimensions`, refusing more than [`MAX_DIMS`] before any dimension is read.
fn read_n_dimensions<R: Read + Seek>(reader: &mut R, endian: Endian, _: ()) -> BinResult<u32> {
    let pos = reader.stream_position()?;
    let n = u32::read_options(reader, endian, ())?;
    if n <= MAX_DIMS {
        Ok(n)
    } else {
        Err(custom(pos, DecodeErrorKind::TooManyDimensions(n)))
    }
}

fn read_dims<H: Repr, R: Read + Seek>(
    reader: &mut R,
    endian: Endian,
    (count, ctx): (u32, Ctx),
) -> BinResult<H::Dims> {
    H::read_dims(reader, endian, count, ctx)
}
