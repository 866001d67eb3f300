//! A zero-copy view of a GGUF header: strings, string arrays and numeric arrays stay in the
//! file's bytes (typically a memory map) and are handed out as borrowed [`TextRef`]s and
//! slices.
//!
//! Decoded by the same schema as the owned [`Header`], held as
//! [`Spans`]: every check of the structure runs when the view is made (lengths against
//! the input, nesting depth, `general.alignment`), so a file either fails [`GgufView::new`]
//! with the same [`DecodeError`](crate::DecodeError) as
//! [`Gguf::from_bytes`](crate::Gguf::from_bytes) or every accessor below succeeds. Strings
//! and bools are what the file holds, as ggml reads them: a string is checked to be UTF-8
//! when it is handed out ([`TextRef::as_str`]), a bool is its byte ([`GgufBool`]).
//!
//! ```
//! use ggufrw::{Builder, GgmlType, view::{GgufView, ValueRef}};
//! let bytes = Builder::new()
//!     .metadata("tokenizer.ggml.tokens", vec!["<s>", "hello"])
//!     .tensor("w", GgmlType::F32, &[2], vec![0u8; 8])?
//!     .build()?
//!     .to_bytes()?;
//! let view = GgufView::new(&bytes)?;
//! let tokens = view.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()).unwrap();
//! assert_eq!(tokens.strings().unwrap().collect::<Vec<_>>(), ["<s>", "hello"]);
//! assert_eq!(view.tensors().next().unwrap().name, "w");
//! # Ok::<(), ggufrw::Error>(())
//! ```
//!
//! [`Header`]: crate::Header
//! [`Spans`]: ggufrw_schema::Spans

use crate::error::{Error, Result};
use crate::file::{data_section, map_file, tensor_slice};
use ggufrw_schema::{
    alignment_at, decode_header_as, Array, ArrayValues, ArrayValuesOf, ByteOrder, GgufBool, Header,
    HeaderOf, Number, Owned, Span, Spans, StrsSpan, TextRef, Value, ValueOf, ValueType,
    ValueTypeVisitor, Wide, Width, ALIGNMENT_KEY,
};
use memmap2::Mmap;
use std::io::Cursor;
use std::path::Path;

/// A header decoded in place: borrows everything from `bytes`.
#[derive(Debug)]
pub struct GgufView<'a> {
    bytes: &'a [u8],
    header: HeaderOf<Spans>,
    alignment: u32,
    data_offset: u64,
}

/// Memory-maps a file read-only, for [`GgufView::new`].
pub fn map(path: impl AsRef<Path>) -> Result<Mmap> {
    let path = path.as_ref();
    map_file(path).map_err(|e| e.in_file(path))
}

/// Drops the pages wholly under `done`, bytes of `map` already read, from this process's
/// memory (they stay in the page cache, and reading them again faults them back in): a reader
/// that streams a large mapped file once keeps its resident memory to what it has not yet
/// finished with, instead of growing to the file's size.
pub fn release(map: &Mmap, done: &[u8]) {
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let base = map.as_ptr() as usize;
        let at = done.as_ptr() as usize;
        if at < base || at + done.len() > base + map.len() {
            return;
        }
        let start = (at - base).next_multiple_of(PAGE);
        let end = (at - base + done.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the map is a read-only shared mapping of a file; MADV_DONTNEED only drops
            // this process's copy of the pages, and a later read of them faults the same bytes
            // in again from the file, so every slice borrowed from the map stays valid. (On a
            // system whose pages are larger the call fails and nothing happens.)
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, done);
}

/// The bytes behind a file: its read-only memory map, or bytes held in memory (a remote
/// header, a file given as bytes). `Gguf<Content>` is a file from either source;
/// [`remote::open_as`](crate::remote) fills it from a `Vec`.
#[derive(Debug)]
pub enum Content {
    /// A local file, mapped.
    Map(Mmap),
    /// Bytes held in memory.
    Bytes(Vec<u8>),
}

impl AsRef<[u8]> for Content {
    fn as_ref(&self) -> &[u8] {
        match self {
            Content::Map(m) => m,
            Content::Bytes(v) => v,
        }
    }
}

impl From<Vec<u8>> for Content {
    fn from(v: Vec<u8>) -> Self {
        Content::Bytes(v)
    }
}

impl<'a> GgufView<'a> {
    /// Decodes the header at the start of `bytes`, leaving strings and arrays where they are.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let mut cursor = Cursor::new(bytes);
        let header = decode_header_as::<Spans, _>(&mut cursor)?;
        let text = |s: &Span| slice(bytes, s.offset, s.len);
        let first = (header.metadata.iter())
            .position(|kv| text(&kv.key.string) == ALIGNMENT_KEY.as_bytes());
        // The decoder refused a bad alignment already.
        let alignment =
            alignment_at(&header.metadata, first).map_err(|(_, why)| Error::Alignment { why })?;
        // The decoder stops after the padding, which starts where the tensor infos end.
        let infos_end = cursor.position() - header.padding.len();
        let data_offset = infos_end.next_multiple_of(u64::from(alignment));
        Ok(GgufView {
            bytes,
            header,
            alignment,
            data_offset,
        })
    }

    /// The header as decoded: spans into [`GgufView::bytes`].
    pub fn header(&self) -> &HeaderOf<Spans> {
        &self.header
    }

    /// The bytes the view borrows from.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Format version.
    pub fn version(&self) -> u32 {
        self.header.version
    }

    /// Byte order of every number.
    pub fn byte_order(&self) -> ByteOrder {
        self.header.byte_order
    }

    /// The data alignment in force.
    pub fn alignment(&self) -> u32 {
        self.alignment
    }

    /// Where the data section starts.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Metadata pairs in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (TextRef<'a>, ValueRef<'a, '_>)> + '_ {
        (self.header.metadata.iter()).map(|kv| (self.str(&kv.key.string), self.value(&kv.value)))
    }

    /// The value of the first pair with this key.
    pub fn get(&self, key: &str) -> Option<ValueRef<'a, '_>> {
        self.metadata().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Tensor infos in file order.
    pub fn tensors(&self) -> impl ExactSizeIterator<Item = TensorRef<'a, '_>> + '_ {
        (self.header.tensor_infos.iter()).map(|t| TensorRef {
            name: self.str(&t.name.string),
            dimensions: &t.dimensions,
            ggml_type: t.ggml_type,
            offset: t.offset,
        })
    }

    /// Bytes of tensor `index`'s data, or why they cannot be had.
    pub fn tensor_data(&self, index: usize) -> Result<&'a [u8]> {
        let info = (self.header.tensor_infos.get(index)).ok_or(Error::NoTensor {
            index,
            count: self.header.tensor_infos.len(),
        })?;
        let data = data_section(self.bytes, self.data_offset);
        let name = self.str(&info.name.string);
        tensor_slice(
            data,
            index,
            name,
            info.ggml_type,
            &info.dimensions,
            info.offset,
        )
    }

    /// The values of tensor `index` as f32, dequantized as [`crate::Gguf::dequantize`] does.
    pub fn dequantize(&self, index: usize) -> Result<Vec<f32>> {
        self.dequantize_with(index, None, 1)
    }

    /// [`GgufView::dequantize`] on up to `threads` threads (0: every processor): the same
    /// values for every count.
    pub fn dequantize_threads(&self, index: usize, threads: usize) -> Result<Vec<f32>> {
        self.dequantize_with(index, None, threads)
    }

    /// [`GgufView::dequantize`] into `out`, which must hold exactly the tensor's element count.
    pub fn dequantize_into(&self, index: usize, out: &mut [f32]) -> Result<()> {
        self.dequantize_with(index, Some(out), 1).map(drop)
    }

    fn dequantize_with(
        &self,
        index: usize,
        out: Option<&mut [f32]>,
        threads: usize,
    ) -> Result<Vec<f32>> {
        let data = self.tensor_data(index)?;
        let info = &self.header.tensor_infos[index];
        let name = self.str(&info.name.string);
        let order = self.byte_order();
        crate::elements::dequantize_tensor(data, info.ggml_type, order, (index, name), out, threads)
    }

    /// The owned model of the same header, for editing and writing.
    pub fn to_owned_header(&self) -> Result<Header> {
        Ok(ggufrw_schema::decode_header(&mut Cursor::new(self.bytes))?)
    }

    fn str(&self, span: &Span) -> TextRef<'a> {
        TextRef::new(slice(self.bytes, span.offset, span.len))
    }

    fn value<'h>(&self, value: &'h ValueOf<Spans>) -> ValueRef<'a, 'h> {
        match value {
            ValueOf::String(s) => ValueRef::String(self.str(&s.string)),
            ValueOf::Array(a) => ValueRef::Array(ArrayRef {
                values: &a.values,
                bytes: self.bytes,
                byte_order: self.header.byte_order,
                width: self.header.ctx().width(),
            }),
            scalar => ValueRef::Scalar(Scalar(scalar)),
        }
    }
}

fn slice(bytes: &[u8], offset: u64, len: u64) -> &[u8] {
    // Spans come from decoding these very bytes, so they lie inside them.
    bytes
        .get(offset as usize..(offset + len) as usize)
        .unwrap_or_default()
}

/// One tensor info, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a, 'h> {
    /// Name (bytes; ggml reads names that are not UTF-8 too).
    pub name: TextRef<'a>,
    /// Element counts per dimension, fastest-varying first.
    pub dimensions: &'h [u64],
    /// ggml type id.
    pub ggml_type: u32,
    /// Offset of its data from the start of the data section.
    pub offset: u64,
}

/// A metadata value, borrowed: strings from the file's bytes, arrays as [`ArrayRef`].
#[derive(Clone, Copy, Debug)]
pub enum ValueRef<'a, 'h> {
    /// A number or bool.
    Scalar(Scalar<'h>),
    /// A string, UTF-8 or not.
    String(TextRef<'a>),
    /// An array.
    Array(ArrayRef<'a, 'h>),
}

/// A number or bool of any value type, as decoded.
#[derive(Clone, Copy, Debug)]
pub struct Scalar<'h>(&'h ValueOf<Spans>);

impl Scalar<'_> {
    /// Its value type.
    pub fn value_type(&self) -> ValueType {
        self.0.value_type()
    }

    /// The value, if it is of type `T` (`u8` … `f64`, `bool`).
    pub fn get<T: Number>(&self) -> Option<T> {
        T::of_value(self.0)
    }

    /// The value, widened.
    pub fn widen(&self) -> Wide {
        self.0.widen().unwrap_or(Wide::Bool(GgufBool::FALSE))
    }

    /// The same value in the owned model, bit for bit.
    pub fn to_value(&self) -> Value {
        self.0
            .scalar_to::<Owned>()
            .unwrap_or(Value::Bool(GgufBool::FALSE))
    }
}

impl<'a, 'h> ValueRef<'a, 'h> {
    /// Its value type.
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueRef::Scalar(s) => s.value_type(),
            ValueRef::String(_) => ValueType::String,
            ValueRef::Array(_) => ValueType::Array,
        }
    }

    /// The number or bool, if it is one of type `T` (a bool as stored: [`GgufBool`]).
    pub fn get<T: Number>(&self) -> Option<T> {
        match self {
            ValueRef::Scalar(s) => s.get(),
            _ => None,
        }
    }

    /// The bool, if it is one stored as 0 or 1 (the raw byte: `get::<GgufBool>()`).
    pub fn as_bool(&self) -> Option<bool> {
        self.get::<GgufBool>().and_then(GgufBool::as_bool)
    }

    /// The text, if it is a string of UTF-8 (any string: [`ValueRef::as_text`]).
    pub fn as_str(&self) -> Option<&'a str> {
        self.as_text().and_then(|s| s.as_str().ok())
    }

    /// The string, UTF-8 or not, if it is one.
    pub fn as_text(&self) -> Option<TextRef<'a>> {
        match self {
            ValueRef::String(s) => Some(*s),
            _ => None,
        }
    }

    /// The array, if it is one.
    pub fn as_array(&self) -> Option<ArrayRef<'a, 'h>> {
        match self {
            ValueRef::Array(a) => Some(*a),
            _ => None,
        }
    }

    /// The same value in the owned model (copies strings and arrays).
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Scalar(s) => s.to_value(),
            ValueRef::String(s) => Value::String(s.into()),
            ValueRef::Array(a) => Value::Array(Array::new(a.to_values())),
        }
    }
}

/// An array whose elements stay in the file's bytes.
#[derive(Clone, Copy, Debug)]
pub struct ArrayRef<'a, 'h> {
    values: &'h ArrayValuesOf<Spans>,
    bytes: &'a [u8],
    byte_order: ByteOrder,
    width: Width,
}

impl<'a, 'h> ArrayRef<'a, 'h> {
    /// The element type.
    pub fn element_type(&self) -> ValueType {
        self.values.element_type()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The strings, if these are strings.
    pub fn strings(&self) -> Option<Strings<'a>> {
        match self.values {
            ArrayValuesOf::String(StrsSpan {
                offset,
                bytes,
                count,
            }) => Some(Strings {
                rest: slice(self.bytes, *offset, *bytes),
                left: *count,
                byte_order: self.byte_order,
                width: self.width,
            }),
            _ => None,
        }
    }

    /// The elements, if they are of type `T` (`u8` … `f64`, `bool`), decoded from the file's
    /// byte order one by one (the bytes need not be aligned).
    pub fn numbers<T: Number>(&self) -> Option<impl Iterator<Item = T> + 'a> {
        let raw = self.raw_numbers()?;
        if T::TYPE != self.element_type() {
            return None;
        }
        let endian = self.byte_order.endian();
        // Every element decodes (whole elements, any bytes): none is skipped.
        Some(
            raw.chunks_exact(T::SIZE)
                .filter_map(move |b| T::decode(b, endian)),
        )
    }

    /// The elements' bytes as stored (file byte order), for numeric and bool arrays.
    pub fn raw_numbers(&self) -> Option<&'a [u8]> {
        let (offset, len) = self.values.number_bytes()?;
        Some(slice(self.bytes, offset, len))
    }

    /// The elements in the owned model (copied).
    pub fn to_values(&self) -> ArrayValues {
        /// The elements of each element type, copied.
        struct Copy<'r, 'a, 'h>(&'r ArrayRef<'a, 'h>);
        impl ValueTypeVisitor for Copy<'_, '_, '_> {
            type Out = ArrayValues;
            fn number<T: Number>(self) -> ArrayValues {
                T::into_array(
                    self.0
                        .numbers::<T>()
                        .map(Iterator::collect)
                        .unwrap_or_default(),
                )
            }
            fn string(self) -> ArrayValues {
                let strings = self.0.strings().into_iter().flatten();
                ArrayValues::String(strings.collect())
            }
            fn array(self) -> ArrayValues {
                let arrays = self.0.arrays().into_iter().flatten();
                ArrayValues::Array(arrays.map(|a| Array::new(a.to_values())).collect())
            }
        }
        self.element_type().visit(Copy(self))
    }

    /// The inner arrays, if these are arrays.
    pub fn arrays(&self) -> Option<impl ExactSizeIterator<Item = ArrayRef<'a, 'h>> + '_> {
        match self.values {
            ArrayValuesOf::Array(arrays) => Some(arrays.iter().map(|a| ArrayRef {
                values: &a.values,
                ..*self
            })),
            _ => None,
        }
    }
}

/// The strings of an array, borrowed, in order.
#[derive(Clone, Debug)]
pub struct Strings<'a> {
    rest: &'a [u8],
    left: u64,
    byte_order: ByteOrder,
    width: Width,
}

impl<'a> Iterator for Strings<'a> {
    type Item = TextRef<'a>;

    fn next(&mut self) -> Option<TextRef<'a>> {
        if self.left == 0 {
            return None;
        }
        let w = self.width.bytes() as usize;
        let endian = self.byte_order.endian();
        let len = self.width.decode(self.rest.get(..w)?, endian)? as usize;
        let text = self.rest.get(w..w + len)?;
        self.rest = &self.rest[w + len..];
        self.left -= 1;
        Some(TextRef::new(text))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Strings<'_> {}
