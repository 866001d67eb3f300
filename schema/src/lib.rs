//! The GGUF wire format, described once as [`binrw`] types that both read and write.
//!
//! A GGUF file is, in order:
//!
//! | part | type here |
//! |---|---|
//! | magic `GGUF`, version, tensor count, metadata count | [`Header`] (`magic`, `version`, counts implied by the lists) |
//! | metadata key/value pairs | [`KeyValue`] = [`GgufString`] key + [`Value`] (type id, then the value) |
//! | tensor infos | [`TensorInfo`]: name, dimensions, ggml type id, offset in the data section |
//! | padding up to `general.alignment` (32 if absent) | [`Header::padding`], as found ([`Padding`]: a length when all zero) |
//! | tensor data | not read here: it starts at [`Layout::data_offset`] |
//!
//! Version 1 stores counts, string lengths, array lengths and dimensions as `u32`; versions 2
//! and 3 as `u64` ([`Width`]). The byte order is the one under which the version field reads as
//! a known version ([`ByteOrder`]).
//!
//! Decoding is strict about structure only (lengths, type ids, nesting depth,
//! `general.alignment`): meaning is checked by a separate validation pass in `ggufrw`. Strings
//! are kept as their bytes ([`Text`], which says whether they are UTF-8) and bools as their byte
//! ([`GgufBool`]), as ggml reads them. Every header that decodes encodes back to the same bytes.
//!
//! ```
//! use ggufrw_schema::{decode_header, Header};
//! let bytes = Header::new_v3().encode(false).unwrap();
//! let header = decode_header(&mut std::io::Cursor::new(&bytes)).unwrap();
//! assert_eq!(header.version, 3);
//! assert_eq!(header.encode(false).unwrap(), bytes);
//! ```
#![deny(missing_docs, unnameable_types)]

pub mod blocks;
mod ctx;
mod error;
mod gated;
mod header;
mod io;
pub mod limits;
mod padding;
mod repr;
mod size;
mod string;
mod tensor;
mod value;
pub mod version;

pub use ctx::{ByteOrder, Ctx, Width};
pub use error::{DecodeError, DecodeErrorKind, EncodeError};
pub use gated::{GatedError, GatedField, GatedFields};
pub use header::{
    alignment_at, decode_header, decode_header_as, detect, find_alignment, FixedField, FixedValue,
    Header, HeaderOf, KeyValue, KeyValueOf, Layout, Magic, ALIGNMENT_KEY, DEFAULT_ALIGNMENT,
};
pub use io::Tracked;
pub use padding::Padding;
pub use repr::{Dims, Element, NumSpan, Owned, Repr, Span, Spans, StrsSpan};
pub use size::fixed_header_size;
pub use string::{GgufString, GgufStringOf, NotUtf8, StrList, StrListIter, Text, TextRef};
pub use tensor::{TensorFields, TensorInfo, TensorInfoOf};
pub use value::{
    Array, ArrayOf, ArrayValues, ArrayValuesOf, GgufBool, Number, NumberKind, Value, ValueOf,
    ValueType, ValueTypeVisitor, Wide,
};
pub use version::{VersionSpec, VERSIONS};
