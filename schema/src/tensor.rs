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

impl<H: Repr> TensorInfoOf<H> {
    /// Byte offsets of the `n_dimensions`, `type` and `offset` fields, for a tensor info that
    /// starts at `start` in a file whose counts are `ctx.width()` wide.
    pub fn field_offsets(&self, start: u64, ctx: Ctx) -> [u64; 3] {
        let w = ctx.width().bytes();
        let n_dims = start + w + self.name.byte_len();
        let ty = n_dims + 4 + w * self.dimensions.len() as u64;
        [n_dims, ty, ty + 4]
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
