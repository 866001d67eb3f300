//! The file header: magic, version, counts, metadata, tensor infos, padding.

use crate::ctx::{read_count, ByteOrder, Ctx, Word};
use crate::error::{
    custom, to_decode_error, to_encode_error, DecodeError, DecodeErrorKind, EncodeError,
};
use crate::gated::GatedFields;
use crate::io::{Positioned, Tracked};
use crate::padding::Padding;
use crate::repr::{Owned, Repr};
use crate::string::GgufString;
use crate::string::GgufStringOf;
use crate::tensor::{TensorFields, TensorInfoOf};
use crate::value::{read_each, Value, ValueOf};
use crate::version::is_supported;
use binrw::error::ContextExt;
use binrw::io::{Cursor, Read, Seek, SeekFrom, Write};
use binrw::{binrw, BinRead, BinResult, BinWrite, Endian};
use std::io::{BufWriter, Sink};

/// The key whose UINT32 value sets the data alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// Alignment of tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u32 = 32;

/// The four magic bytes: `GGUF`, or the byte-reversed `FUGG` that some big-endian writers
/// produced. Kept as found so that a file rewrites unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Magic {
    /// `GGUF`
    #[default]
    Gguf,
    /// `FUGG`
    Fugg,
}

impl Magic {
    /// The bytes as they appear in the file.
    pub fn bytes(self) -> [u8; 4] {
        match self {
            Magic::Gguf => *b"GGUF",
            Magic::Fugg => *b"FUGG",
        }
    }

    /// The magic these bytes spell, if any.
    pub fn from_bytes(bytes: [u8; 4]) -> Option<Magic> {
        match &bytes {
            b"GGUF" => Some(Magic::Gguf),
            b"FUGG" => Some(Magic::Fugg),
            _ => None,
        }
    }
}

impl BinRead for Magic {
    type Args<'a> = ();

    fn read_options<R: Read + Seek>(reader: &mut R, _: Endian, _: ()) -> BinResult<Self> {
        let pos = reader.stream_position()?;
        let mut bytes = [0u8; 4];
        reader.read_exact(&mut bytes)?;
        Magic::from_bytes(bytes).ok_or_else(|| custom(pos, DecodeErrorKind::BadMagic(bytes)))
    }
}

impl BinWrite for Magic {
    type Args<'a> = ();

    fn write_options<W: Write + Seek>(&self, w: &mut W, _: Endian, _: ()) -> BinResult<()> {
        w.write_all(&self.bytes())?;
        Ok(())
    }
}

/// A metadata pair: key, then typed value.
#[binrw]
#[brw(import_raw(ctx: Ctx))]
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValueOf<H: Repr> {
    /// The key, such as `general.architecture`.
    #[brw(args_raw = ctx)]
    pub key: GgufStringOf<H>,
    /// The value with its type.
    #[brw(args_raw = ctx)]
    pub value: ValueOf<H>,
}

/// A metadata pair of the owned model.
pub type KeyValue = KeyValueOf<Owned>;

impl KeyValue {
    /// A pair.
    pub fn new(key: impl Into<GgufString>, value: impl Into<Value>) -> Self {
        KeyValue {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// Everything before the tensor data. Written with the context and whether tensor data follows
/// (see [`Padding`]).
#[binrw]
#[br(import_raw(ctx: Ctx))]
#[bw(import(ctx: Ctx, data_follows: bool))]
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderOf<H: Repr> {
    /// `GGUF` (or `FUGG`).
    pub magic: Magic,

    /// Byte order of every number; decided by the version field.
    #[br(calc = ctx.byte_order)]
    #[bw(ignore)]
    pub byte_order: ByteOrder,

    /// Format version (one of [`crate::VERSIONS`]).
    pub version: u32,

    #[br(temp, parse_with = read_count, args(ctx, ctx.min_tensor_info_size()))]
    #[bw(try_calc = Word::narrow(tensor_infos.len(), ctx))]
    tensor_count: Word,

    #[br(temp, parse_with = read_count, args(ctx, ctx.min_kv_size()))]
    #[bw(try_calc = Word::narrow(metadata.len(), ctx))]
    metadata_kv_count: Word,

    /// The fields only some versions have ([`GatedFields`]); the writer refuses them set in a
    /// version without them, and missing in one with them.
    #[brw(args_raw = ctx)]
    pub gated: GatedFields,

    /// Metadata in file order (duplicates kept: validation reports them).
    #[br(parse_with = read_metadata, args(metadata_kv_count.get(), ctx), err_context("kv"))]
    #[bw(args_raw = ctx)]
    pub metadata: Vec<KeyValueOf<H>>,

    /// Tensor infos in file order.
    #[br(parse_with = read_tensor_infos, args(tensor_count.get(), ctx), err_context("tensor"))]
    #[bw(args_raw = ctx)]
    pub tensor_infos: Vec<TensorInfoOf<H>>,

    /// The bytes between the tensor infos and the aligned start of the data section, as found
    /// (fewer when the file ends first).
    #[br(parse_with = read_padding, args(&metadata, ctx), err_context("padding"))]
    #[bw(args(alignment_or_default(metadata), data_follows))]
    pub padding: Padding,
}

/// Where each part of a header lands in the file: every offset a finding or an error can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The data alignment in force.
    pub alignment: u32,
    /// Start of the metadata: the end of the fixed part (magic, version, counts).
    pub metadata_start: u64,
    /// Start of each metadata pair.
    pub kv_offsets: Vec<u64>,
    /// Start of each pair's value (its type id).
    pub kv_value_offsets: Vec<u64>,
    /// Start of each tensor info.
    pub tensor_info_offsets: Vec<u64>,
    /// Where each tensor info's fields lie.
    pub tensor_fields: Vec<TensorFields>,
    /// End of the tensor infos, where padding begins.
    pub tensor_infos_end: u64,
    /// Start of the data section: the tensor infos' end rounded up to the alignment.
    pub data_offset: u64,
}

/// One field of a header's fixed part, as [`HeaderOf::fixed_fields`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedField {
    /// The spec's name for it.
    pub name: &'static str,
    /// Its value: the magic as text, the rest as numbers.
    pub value: FixedValue,
    /// Bytes it takes.
    pub size: u64,
    /// Whether it follows from the rest of the header (the counts), rather than being a
    /// field of its own that an edit or a diff deals with.
    pub derived: bool,
}

/// The value of a [`FixedField`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedValue {
    /// Text (the magic).
    Text(&'static str),
    /// A number.
    Number(u64),
}

/// The header of the owned model: what is edited and written.
pub type Header = HeaderOf<Owned>;

impl<H: Repr> HeaderOf<H> {
    /// The context its fields are written in.
    pub fn ctx(&self) -> Ctx {
        Ctx::new(self.version, self.byte_order, u64::MAX)
    }

    /// The fields of the fixed part (before the metadata), in file order, with their sizes:
    /// what dumps show. A test checks that their sizes add up to the encoded fixed part, so a
    /// field added to the declaration and not here fails it.
    pub fn fixed_fields(&self) -> Vec<FixedField> {
        let width = self.ctx().width().bytes();
        let magic = match self.magic {
            Magic::Gguf => "GGUF",
            Magic::Fugg => "FUGG",
        };
        let number = |name, value: usize, size, derived| FixedField {
            name,
            value: FixedValue::Number(value as u64),
            size,
            derived,
        };
        vec![
            FixedField {
                name: "magic",
                value: FixedValue::Text(magic),
                size: self.magic.bytes().len() as u64,
                derived: false,
            },
            number("version", self.version as usize, 4, false),
            number("tensor_count", self.tensor_infos.len(), width, true),
            number("metadata_kv_count", self.metadata.len(), width, true),
        ]
        .into_iter()
        .chain(self.gated.values().into_iter().map(|(f, v)| FixedField {
            name: f.name,
            value: FixedValue::Number(v),
            size: f.size,
            derived: false,
        }))
        .collect()
    }
}

impl Header {
    /// An empty header of this version and byte order, magic `GGUF`, no padding.
    pub fn empty(version: u32, byte_order: ByteOrder) -> Self {
        Header {
            magic: Magic::Gguf,
            byte_order,
            version,
            gated: GatedFields::for_version(version),
            metadata: Vec::new(),
            tensor_infos: Vec::new(),
            padding: Padding::default(),
        }
    }

    /// An empty version 3 little-endian header, padded.
    pub fn new_v3() -> Self {
        let mut header = Header::empty(3, ByteOrder::Little);
        header.pad().expect("an empty header has a valid layout");
        header
    }

    /// The data alignment: `general.alignment` if present, else 32.
    pub fn alignment(&self) -> u32 {
        alignment_or_default(&self.metadata)
    }

    /// Sets the padding to the zero bytes the alignment calls for; returns the layout (which
    /// the padding does not change), measured on the way.
    pub fn pad(&mut self) -> Result<Layout, EncodeError> {
        let layout = self.layout()?;
        self.padding = Padding::zeros(layout.data_offset - layout.tensor_infos_end);
        Ok(layout)
    }

    /// How many padding bytes the alignment calls for between the tensor infos and the data.
    pub fn padding_len(&self) -> Result<u64, EncodeError> {
        let layout = self.layout()?;
        Ok(layout.data_offset - layout.tensor_infos_end)
    }

    /// Where each part lies, from the sizes of what was decoded: [`Header::layout`] without
    /// encoding, for a header that decoded (so that it is known to encode).
    pub fn decoded_layout(&self) -> Layout {
        let ctx = self.ctx();
        let w = ctx.width();
        let metadata_start = crate::size::fixed_header_size(ctx);
        let mut at = metadata_start;
        let (mut kv_offsets, mut kv_value_offsets) = (Vec::new(), Vec::new());
        kv_offsets.reserve_exact(self.metadata.len());
        kv_value_offsets.reserve_exact(self.metadata.len());
        let empty_string = crate::ValueType::String.min_size(w);
        let type_id = ctx.min_kv_size() - empty_string - smallest_value(w);
        for kv in &self.metadata {
            kv_offsets.push(at);
            at += empty_string + kv.key.byte_len();
            kv_value_offsets.push(at);
            at += type_id + kv.value.encoded_len(w);
        }
        let (mut tensor_info_offsets, mut tensor_fields) = (Vec::new(), Vec::new());
        tensor_info_offsets.reserve_exact(self.tensor_infos.len());
        tensor_fields.reserve_exact(self.tensor_infos.len());
        for t in &self.tensor_infos {
            let fields = t.fields(at, ctx);
            tensor_info_offsets.push(at);
            tensor_fields.push(fields);
            at = fields.end;
        }
        let alignment = self.alignment();
        Layout {
            alignment,
            metadata_start,
            kv_offsets,
            kv_value_offsets,
            tensor_info_offsets,
            tensor_fields,
            tensor_infos_end: at,
            data_offset: at.next_multiple_of(u64::from(alignment)),
        }
    }

    /// Where each part lands when encoded, measured by encoding each part; fails where
    /// [`Header::encode`] would.
    pub fn layout(&self) -> Result<Layout, EncodeError> {
        check_writable(self)?;
        let ctx = self.ctx();
        let endian = self.byte_order.endian();
        let metadata_start = crate::size::fixed_header_size(ctx);
        let mut at = metadata_start;
        // Where the item starts (`at`), then `at` moved past it.
        let measure = |at: &mut u64, item: &dyn Fn(&mut Positioned<Sink>) -> BinResult<()>| {
            let start = *at;
            let mut counter = Positioned::new(std::io::sink());
            item(&mut counter).map_err(to_encode_error)?;
            *at += counter.position();
            Ok::<u64, EncodeError>(start)
        };
        let mut kv_offsets = Vec::with_capacity(self.metadata.len());
        let mut kv_value_offsets = Vec::with_capacity(self.metadata.len());
        for kv in &self.metadata {
            kv_offsets.push(measure(&mut at, &|c| kv.key.write_options(c, endian, ctx))?);
            kv_value_offsets.push(measure(&mut at, &|c| {
                kv.value.write_options(c, endian, ctx)
            })?);
        }
        let mut tensor_info_offsets = Vec::with_capacity(self.tensor_infos.len());
        let mut tensor_fields = Vec::with_capacity(self.tensor_infos.len());
        for ti in &self.tensor_infos {
            let start = measure(&mut at, &|c| ti.write_options(c, endian, ctx))?;
            tensor_info_offsets.push(start);
            // The field offsets within are the schema's arithmetic, checked by properties
            // against the decoder; where the info ends is measured.
            tensor_fields.push(TensorFields {
                end: at,
                ..ti.fields(start, ctx)
            });
        }
        let alignment = self.alignment();
        let data_offset = at
            .checked_next_multiple_of(u64::from(alignment))
            .ok_or_else(|| EncodeError::Other("data offset overflows u64".into()))?;
        Ok(Layout {
            alignment,
            metadata_start,
            kv_offsets,
            kv_value_offsets,
            tensor_info_offsets,
            tensor_fields,
            tensor_infos_end: at,
            data_offset,
        })
    }

    /// The header's bytes, padding included. `data_follows` says whether tensor data will be
    /// written after it: then the padding must reach the data offset exactly; without data it
    /// may stop short (files cut at the end of the tensor infos stay as they are).
    pub fn encode(&self, data_follows: bool) -> Result<Vec<u8>, EncodeError> {
        let mut out = Cursor::new(Vec::new());
        self.write_to(&mut out, data_follows)?;
        Ok(out.into_inner())
    }

    /// Writes the header to `out` as [`Header::encode`] would, holding no padding in memory;
    /// returns the bytes written. On error, some of the header may have been written.
    pub fn write_to<W: Write>(&self, out: W, data_follows: bool) -> Result<u64, EncodeError> {
        check_writable(self)?;
        let ctx = self.ctx();
        // binrw writes field by field: buffered, so that a file gets few large writes.
        let mut w = Positioned::new(BufWriter::with_capacity(1 << 16, out));
        self.write_options(&mut w, self.byte_order.endian(), (ctx, data_follows))
            .map_err(to_encode_error)?;
        w.flush().map_err(|e| EncodeError::Other(e.to_string()))?;
        Ok(w.position())
    }
}

/// Bytes of the smallest value with its type id excluded: what the smallest pair holds after
/// its key and type id.
fn smallest_value(width: crate::Width) -> u64 {
    use strum::IntoEnumIterator;
    (crate::ValueType::iter())
        .map(|t| t.min_size(width))
        .min()
        .unwrap_or(0)
}

/// Refuses the versions, byte orders and alignments that no reader accepts.
fn check_writable(header: &Header) -> Result<(), EncodeError> {
    if !crate::version::is_supported(header.version, header.byte_order) {
        return Err(EncodeError::UnsupportedVersion {
            version: header.version,
            big_endian: header.byte_order == ByteOrder::Big,
        });
    }
    header.gated.check(header.version)?;
    find_alignment(&header.metadata)
        .map(drop)
        .map_err(|(_, why)| EncodeError::BadAlignment(why))
}

/// The alignment the metadata sets: the first `general.alignment`, which must be a non-zero
/// UINT32 (else the index of that pair and why); 32 when absent.
pub fn find_alignment(metadata: &[KeyValue]) -> Result<u32, (usize, String)> {
    let first = metadata.iter().position(|kv| kv.key == *ALIGNMENT_KEY);
    alignment_at(metadata, first)
}

/// The alignment pair `index` (the first `general.alignment`, if any) sets.
pub fn alignment_at<H: Repr>(
    metadata: &[KeyValueOf<H>],
    index: Option<usize>,
) -> Result<u32, (usize, String)> {
    let Some(i) = index else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match metadata[i].value {
        ValueOf::Uint32(0) => Err((i, "is 0".into())),
        ValueOf::Uint32(n) => Ok(n),
        ref other => Err((
            i,
            format!("must be uint32, found {}", other.value_type().name()),
        )),
    }
}

/// The alignment in force, 32 if none or a bad one (for spans, whose keys are not held here:
/// 32; they cannot be written anyway).
fn alignment_or_default<H: Repr>(metadata: &[KeyValueOf<H>]) -> u32 {
    let first = (metadata.iter())
        .position(|kv| H::held_bytes(&kv.key.string) == Some(ALIGNMENT_KEY.as_bytes()));
    alignment_at(metadata, first).unwrap_or(DEFAULT_ALIGNMENT)
}

/// Reads the metadata, refusing a bad first `general.alignment` where its value starts.
fn read_metadata<H: Repr, Rd: Read + Seek>(
    reader: &mut Rd,
    endian: Endian,
    (count, ctx): (u64, Ctx),
) -> BinResult<Vec<KeyValueOf<H>>> {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let mut alignment_seen = false;
    read_each(reader, count, |r| {
        let key =
            GgufStringOf::<H>::read_options(r, endian, ctx).map_err(|e| e.with_message("key"))?;
        let value_start = r.stream_position()?;
        let value =
            ValueOf::<H>::read_options(r, endian, ctx).map_err(|e| e.with_message("value"))?;
        let kv = KeyValueOf { key, value };
        if !alignment_seen && H::str_eq(&kv.key.string, ALIGNMENT_KEY, r)? {
            alignment_seen = true;
            if let Err((_, why)) = alignment_at(std::slice::from_ref(&kv), Some(0)) {
                let at = value_start;
                return Err(custom(at, DecodeErrorKind::BadAlignment(why)).with_message("value"));
            }
        }
        Ok(kv)
    })
}

/// Reads the padding the first `general.alignment` calls for.
fn read_padding<H: Repr, Rd: Read + Seek>(
    reader: &mut Rd,
    endian: Endian,
    (metadata, ctx): (&[KeyValueOf<H>], Ctx),
) -> BinResult<Padding> {
    let mut first = None;
    for (i, kv) in metadata.iter().enumerate() {
        if H::str_eq(&kv.key.string, ALIGNMENT_KEY, reader)? {
            first = Some(i);
            break;
        }
    }
    let alignment = alignment_at(metadata, first).unwrap_or(DEFAULT_ALIGNMENT);
    Padding::read_options(reader, endian, (alignment, ctx))
}

fn read_tensor_infos<H: Repr, Rd: Read + Seek>(
    reader: &mut Rd,
    endian: Endian,
    (count, ctx): (u64, Ctx),
) -> BinResult<Vec<TensorInfoOf<H>>> {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    read_each(reader, count, |r| {
        TensorInfoOf::<H>::read_options(r, endian, ctx)
    })
}

/// Magic, byte order and version from a file's first eight bytes (fewer when it is shorter).
pub fn detect(first: &[u8]) -> Result<(Magic, ByteOrder, u32), DecodeError> {
    let eof = |offset: u64, path: &str| DecodeError {
        kind: DecodeErrorKind::UnexpectedEof {
            needed: 4,
            left: (first.len() as u64).saturating_sub(offset),
        },
        path: path.into(),
        offset,
    };
    let magic_bytes: [u8; 4] = first
        .get(..4)
        .ok_or_else(|| eof(0, "magic"))?
        .try_into()
        .unwrap_or_default();
    let magic = Magic::from_bytes(magic_bytes).ok_or_else(|| DecodeError {
        kind: DecodeErrorKind::BadMagic(magic_bytes),
        path: "magic".into(),
        offset: 0,
    })?;
    let version_bytes: [u8; 4] = first
        .get(4..8)
        .ok_or_else(|| eof(4, "version"))?
        .try_into()
        .unwrap_or_default();
    let little = u32::from_le_bytes(version_bytes);
    let big = u32::from_be_bytes(version_bytes);
    if is_supported(little, ByteOrder::Little) {
        Ok((magic, ByteOrder::Little, little))
    } else if is_supported(big, ByteOrder::Big) {
        Ok((magic, ByteOrder::Big, big))
    } else {
        Err(DecodeError {
            kind: DecodeErrorKind::UnsupportedVersion(little),
            path: "version".into(),
            offset: 4,
        })
    }
}

/// Decodes the header of the input `reader` holds from its start. Reads the header and
/// nothing of the tensor data; allocates only for what the input's bytes back.
pub fn decode_header<R: Read + Seek>(reader: &mut R) -> Result<Header, DecodeError> {
    decode_header_as::<Owned, R>(reader)
}

/// [`decode_header`], holding strings and arrays as `R` holds them: [`Spans`] leaves them
/// in the input (checked all the same), for a zero-copy view.
///
/// [`Spans`]: crate::Spans
pub fn decode_header_as<H: Repr, Rd: Read + Seek>(
    reader: &mut Rd,
) -> Result<HeaderOf<H>, DecodeError> {
    let io_error = |e: std::io::Error| DecodeError {
        kind: DecodeErrorKind::Io(e.to_string()),
        path: String::new(),
        offset: 0,
    };
    let end = reader.seek(SeekFrom::End(0)).map_err(io_error)?;
    reader.seek(SeekFrom::Start(0)).map_err(io_error)?;
    let mut first = Vec::with_capacity(8);
    reader
        .by_ref()
        .take(8)
        .read_to_end(&mut first)
        .map_err(io_error)?;
    let (_, byte_order, version) = detect(&first)?;
    reader.seek(SeekFrom::Start(0)).map_err(io_error)?;
    let mut tracked = Tracked::new(reader).map_err(io_error)?;
    let ctx = Ctx::new(version, byte_order, end);
    HeaderOf::<H>::read_options(&mut tracked, byte_order.endian(), ctx)
        .map_err(|e| to_decode_error(e, tracked.last_read(), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_fields_add_up_to_the_encoded_fixed_part() {
        for (version, byte_order) in crate::version::combinations() {
            let header = Header::empty(version, byte_order);
            let listed: u64 = header.fixed_fields().iter().map(|f| f.size).sum();
            assert_eq!(
                listed,
                crate::size::fixed_header_size(header.ctx()),
                "v{version} {byte_order:?}: a field of the fixed part is missing from fixed_fields"
            );
            let bytes = header.encode(false).unwrap();
            assert_eq!(listed, bytes.len() as u64);
        }
    }
}
