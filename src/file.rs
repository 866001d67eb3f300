//! A decoded file: its header, where each part lies, and its bytes (mapped, owned or borrowed).

use crate::error::{Error, Result, TensorError};
use crate::quant::{type_name, GgmlType};
use ggufrw_schema::{decode_header, Header, Layout, TensorInfo, TextRef, Value};
use memmap2::Mmap;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// A GGUF file held as bytes `B`: a memory map ([`Gguf::open`]), a `Vec<u8>`, or a borrowed
/// slice. Decoding reads the header only; tensor data is sliced out on request, never copied.
#[derive(Debug)]
pub struct Gguf<B = Mmap> {
    header: Header,
    layout: Layout,
    bytes: B,
}

/// One tensor: its info, its resolved type and where its data lies in the file.
#[derive(Clone, Copy, Debug)]
pub struct Tensor<'a> {
    /// Position in the tensor infos.
    pub index: usize,
    /// The info as stored.
    pub info: &'a TensorInfo,
    /// The ggml type, if the id is known.
    pub ggml_type: Option<GgmlType>,
    /// Absolute byte offset of its data in the file.
    pub file_offset: u64,
}

impl Tensor<'_> {
    /// Its name (bytes: ggml reads names that are not UTF-8 too).
    pub fn name(&self) -> TextRef<'_> {
        self.info.name.text_ref()
    }

    /// Name of its type (`q4_K`, `unknown:99`).
    pub fn type_name(&self) -> String {
        type_name(self.info.ggml_type)
    }

    /// Bytes of data, from type and shape.
    pub fn byte_size(&self) -> Result<u64> {
        tensor_byte_size(self.index, self.info)
    }
}

/// Bytes of data a tensor info describes: the type must be known and the shape whole blocks.
pub fn tensor_byte_size(index: usize, info: &TensorInfo) -> Result<u64> {
    size_of(
        index,
        info.name.text_ref(),
        info.ggml_type,
        &info.dimensions,
    )
}

/// [`tensor_byte_size`] from the info's parts.
pub(crate) fn size_of(
    index: usize,
    name: TextRef<'_>,
    ggml_type: u32,
    dimensions: &[u64],
) -> Result<u64> {
    let (ty, fail) = known_type(index, name, ggml_type)?;
    ty.byte_size(dimensions).map_err(|e| fail(e.into()))
}

/// Tensor `index`'s type, known to ggufrw, and how to name the tensor in an error about it.
pub(crate) fn known_type(
    index: usize,
    name: TextRef<'_>,
    ggml_type: u32,
) -> Result<(GgmlType, impl Fn(TensorError) -> Error + '_)> {
    let fail = move |source: TensorError| Error::Tensor {
        index,
        name: name.to_string(),
        source,
    };
    let ty =
        GgmlType::from_id(ggml_type).ok_or_else(|| fail(TensorError::UnknownType(ggml_type)))?;
    Ok((ty, fail))
}

/// The bytes from `data_offset` on (none if the file ends before it).
pub(crate) fn data_section(bytes: &[u8], data_offset: u64) -> &[u8] {
    usize::try_from(data_offset)
        .ok()
        .and_then(|start| bytes.get(start..))
        .unwrap_or(&[])
}

/// A tensor's bytes in the data section `data`, from its info's parts; an error when its type
/// or shape has no size or its extent is not inside `data`.
pub(crate) fn tensor_slice<'d>(
    data: &'d [u8],
    index: usize,
    name: TextRef<'_>,
    ggml_type: u32,
    dimensions: &[u64],
    offset: u64,
) -> Result<&'d [u8]> {
    let size = size_of(index, name, ggml_type, dimensions)?;
    let data_len = data.len() as u64;
    let range = extent(offset, size, data_len).ok_or_else(|| Error::Tensor {
        index,
        name: name.to_string(),
        source: TensorError::OutsideData {
            offset,
            size,
            data_len,
        },
    })?;
    Ok(&data[range])
}

/// Memory-maps a regular file read-only.
pub(crate) fn map_file(path: &Path) -> Result<Mmap> {
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    // SAFETY: the map is read-only; another process truncating the file while it is mapped
    // is outside what any mmap-based reader can defend against.
    Ok(unsafe { Mmap::map(&file)? })
}

impl Gguf<Mmap> {
    /// Opens and memory-maps a file, decoding its header. The tensor data is not read.
    /// Errors name the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        map_file(path)
            .and_then(Gguf::from_bytes)
            .map_err(|e| e.in_file(path))
    }
}

impl<B: AsRef<[u8]>> Gguf<B> {
    /// Decodes the header from the start of `bytes`.
    pub fn from_bytes(bytes: B) -> Result<Self> {
        let header = decode_header(&mut Cursor::new(bytes.as_ref()))?;
        let layout = header.decoded_layout();
        Ok(Gguf {
            header,
            layout,
            bytes,
        })
    }

    /// The storage (a file's map), for a reader that hands back what it has read.
    pub(crate) fn storage(&self) -> &B {
        &self.bytes
    }

    /// A file from a header already decoded from `bytes` (or from their first part).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub(crate) fn from_parts(header: Header, layout: Layout, bytes: B) -> Self {
        Gguf {
            header,
            layout,
            bytes,
        }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Where each part of the header lies.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The data section as stored: from the aligned end of the tensor infos to the end of the
    /// file (empty when the file ends before it).
    pub fn data_section(&self) -> &[u8] {
        data_section(self.bytes(), self.layout.data_offset)
    }

    /// The first value stored under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.header
            .metadata
            .iter()
            .find(|kv| kv.key == *key)
            .map(|kv| &kv.value)
    }

    /// The tensors in file order.
    pub fn tensors(&self) -> impl ExactSizeIterator<Item = Tensor<'_>> + '_ {
        let data_offset = self.layout.data_offset;
        (self.header.tensor_infos.iter().enumerate()).map(move |(index, info)| Tensor {
            index,
            info,
            ggml_type: GgmlType::from_id(info.ggml_type),
            file_offset: data_offset.saturating_add(info.offset),
        })
    }

    /// The first tensor named `name` (a `&str`, or the bytes of a name that is not UTF-8).
    pub fn tensor(&self, name: impl AsRef<[u8]>) -> Option<Tensor<'_>> {
        let name = name.as_ref();
        self.tensors().find(|t| t.name().as_bytes() == name)
    }

    /// A tensor's data, borrowed from the file; an error when its type or shape has no size or
    /// its extent is not inside the data section.
    pub fn tensor_data(&self, index: usize) -> Result<&[u8]> {
        let info = self.header.tensor_infos.get(index).ok_or(Error::NoTensor {
            index,
            count: self.header.tensor_infos.len(),
        })?;
        let dims = &info.dimensions;
        tensor_slice(
            self.data_section(),
            index,
            info.name.text_ref(),
            info.ggml_type,
            dims,
            info.offset,
        )
    }

    /// Writes the file back: header, padding and data section exactly as decoded.
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        let data = self.data_section();
        self.header.write_to(&mut out, !data.is_empty())?;
        out.write_all(data)?;
        Ok(())
    }

    /// The encoded file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.bytes().len());
        self.write_to(&mut out)?;
        Ok(out)
    }
}

/// `[offset, offset + size)` as a range, if it lies inside `len` bytes.
fn extent(offset: u64, size: u64, len: u64) -> Option<std::ops::Range<usize>> {
    let end = offset.checked_add(size).filter(|&end| end <= len)?;
    Some(usize::try_from(offset).ok()?..usize::try_from(end).ok()?)
}

/// Decodes the header of any seekable reader, reading nothing past it.
pub fn read_header<R: Read + Seek>(reader: &mut R) -> Result<(Header, Layout)> {
    let header = decode_header(reader)?;
    let layout = header.layout()?;
    Ok((header, layout))
}

/// Reads one tensor's bytes from a seekable reader, after [`read_header`].
pub fn read_tensor_data<R: Read + Seek>(
    reader: &mut R,
    header: &Header,
    layout: &Layout,
    index: usize,
) -> Result<Vec<u8>> {
    let info = header.tensor_infos.get(index).ok_or(Error::NoTensor {
        index,
        count: header.tensor_infos.len(),
    })?;
    let size = tensor_byte_size(index, info)?;
    let end = reader.seek(SeekFrom::End(0))?;
    let data_len = end.saturating_sub(layout.data_offset);
    let range = extent(info.offset, size, data_len).ok_or_else(|| Error::Tensor {
        index,
        name: info.name.to_string(),
        source: TensorError::OutsideData {
            offset: info.offset,
            size,
            data_len,
        },
    })?;
    reader.seek(SeekFrom::Start(layout.data_offset + range.start as u64))?;
    let mut data = vec![0u8; range.len()];
    reader.read_exact(&mut data)?;
    Ok(data)
}
