//! Writing files: a builder for metadata and tensors whose data comes from memory, from a
//! range of another file, or from any reader, streamed after the header through a bounded
//! buffer (or copied by the kernel, file to file) in ggml's layout.

use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::fsutil::{write_atomic_file, Mode, Progress};
use crate::quant::GgmlType;
use ggufrw_schema::{
    ByteOrder, GatedFields, GgufString, Header, KeyValue, TensorInfo, Value, ALIGNMENT_KEY,
};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes of the buffer that data from readers and (where the kernel cannot copy) files goes
/// through: memory stays bounded whatever the file size.
const BUFFER: usize = 4 << 20;

/// Where a tensor's bytes come from.
pub enum Source<'a> {
    /// Bytes owned by the builder.
    Owned(Vec<u8>),
    /// Bytes borrowed from memory.
    Bytes(&'a [u8]),
    /// `len` bytes at `offset` in a file; copied by the kernel when writing to a file.
    File {
        /// The file.
        file: &'a File,
        /// Where the bytes start.
        offset: u64,
        /// How many.
        len: u64,
    },
    /// Exactly `len` bytes from a reader.
    Reader {
        /// The reader.
        reader: Box<dyn Read + 'a>,
        /// How many bytes it must give.
        len: u64,
    },
    /// Exactly `len` bytes made piece by piece as they are written (re-quantized rows, say),
    /// so that a tensor is never held whole; a piece's error stops the write and is returned
    /// as it is.
    Chunks {
        /// The pieces, in order.
        chunks: Box<dyn Iterator<Item = Result<Vec<u8>>> + 'a>,
        /// How many bytes they must add up to.
        len: u64,
    },
}

impl Source<'_> {
    /// Bytes this source gives.
    pub fn len(&self) -> u64 {
        match self {
            Source::Owned(v) => v.len() as u64,
            Source::Bytes(b) => b.len() as u64,
            Source::File { len, .. } | Source::Reader { len, .. } | Source::Chunks { len, .. } => {
                *len
            }
        }
    }

    /// Whether it gives no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> Source<'a> {
    /// Its bytes as pieces of at most [`BUFFER`] bytes (a chunked source's pieces as they come),
    /// for a reader that transforms them rather than copying them out (the quantizer of a model
    /// being made). Short sources are not detected here: the pieces are counted by the caller.
    pub(crate) fn into_pieces(self) -> Box<dyn Iterator<Item = Result<Vec<u8>>> + 'a> {
        match self {
            Source::Owned(v) => Box::new(std::iter::once(Ok(v))),
            Source::Bytes(b) => Box::new(b.chunks(BUFFER).map(|c| Ok(c.to_vec()))),
            Source::Chunks { chunks, .. } => chunks,
            Source::File { file, offset, len } => {
                let mut done = 0u64;
                Box::new(std::iter::from_fn(move || {
                    if done >= len {
                        return None;
                    }
                    let mut buf = vec![0u8; (len - done).min(BUFFER as u64) as usize];
                    let read = crate::fsutil::read_exact_at(file, &mut buf, offset + done);
                    done += buf.len() as u64;
                    Some(read.map(|()| buf).map_err(Error::from))
                }))
            }
            Source::Reader { mut reader, len } => {
                let mut done = 0u64;
                Box::new(std::iter::from_fn(move || {
                    if done >= len {
                        return None;
                    }
                    let mut buf = vec![0u8; (len - done).min(BUFFER as u64) as usize];
                    let read = reader.read_exact(&mut buf);
                    done += buf.len() as u64;
                    Some(read.map(|()| buf).map_err(Error::from))
                }))
            }
        }
    }
}

impl From<Vec<u8>> for Source<'_> {
    fn from(v: Vec<u8>) -> Self {
        Source::Owned(v)
    }
}

impl<'a> From<&'a [u8]> for Source<'a> {
    fn from(b: &'a [u8]) -> Self {
        Source::Bytes(b)
    }
}

impl std::fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Source::Owned(_) => "owned",
            Source::Bytes(_) => "bytes",
            Source::File { .. } => "file",
            Source::Reader { .. } => "reader",
            Source::Chunks { .. } => "chunks",
        };
        write!(f, "Source::{kind}({} bytes)", self.len())
    }
}

/// One stretch of a data section: a source's bytes, or zero padding.
#[derive(Debug)]
pub(crate) enum Part<'a> {
    Data(Source<'a>),
    Zeros(u64),
}

/// Builds a GGUF file: metadata and tensors, laid out as ggml lays them out (tensor data
/// contiguous in declaration order, each padded with zeros to the alignment), written in
/// memory ([`Builder::build`]), to any writer ([`Builder::write_to`]) or atomically to a path
/// ([`Builder::write_file`]), holding no more than the header and a bounded buffer.
///
/// ```
/// use ggufrw::{Builder, GgmlType};
/// let file = Builder::new()
///     .metadata("general.architecture", "llama")
///     .tensor("w", GgmlType::F32, &[2], 1.5f32.to_le_bytes().repeat(2))?
///     .build()?;
/// assert_eq!(file.tensor_data(0)?, &1.5f32.to_le_bytes().repeat(2)[..]);
/// # Ok::<(), ggufrw::Error>(())
/// ```
#[derive(Debug)]
pub struct Builder<'a> {
    header: Header,
    sources: Vec<Source<'a>>,
}

impl Default for Builder<'_> {
    fn default() -> Self {
        Builder::new()
    }
}

impl<'a> Builder<'a> {
    /// An empty version 3 little-endian file.
    pub fn new() -> Self {
        Builder {
            header: Header::new_v3(),
            sources: Vec::new(),
        }
    }

    /// Sets the format version (one of [`ggufrw_schema::VERSIONS`]); the fields only some
    /// versions have are those of `version`, each 0 ([`Builder::gated`] sets them).
    pub fn version(mut self, version: u32) -> Self {
        self.header.version = version;
        self.header.gated = GatedFields::for_version(version);
        self
    }

    /// Takes the form of `header`: magic, version, byte order and version-gated fields (what
    /// the fixed part holds besides the counts), so that a file rebuilt from another keeps
    /// every such field, including ones added to the format later.
    pub fn like(mut self, header: &Header) -> Self {
        self.header.magic = header.magic;
        self.header.version = header.version;
        self.header.byte_order = header.byte_order;
        self.header.gated = header.gated.clone();
        self
    }

    /// Sets a version-gated header field (see [`GatedFields::FIELDS`]); refused for a field
    /// the version lacks or a value that does not fit it.
    pub fn gated(mut self, name: &str, value: u64) -> Result<Self> {
        self.header
            .gated
            .set(name, Some(value))
            .map_err(Error::Gated)?;
        // The schema's own refusal: a field this version does not have.
        self.header.gated.check(self.header.version)?;
        Ok(self)
    }

    /// Sets the byte order. Tensor data is taken as given: it must already be in this order.
    pub fn byte_order(mut self, byte_order: ByteOrder) -> Self {
        self.header.byte_order = byte_order;
        self
    }

    /// Sets `key` to `value`, replacing an earlier value in place, else appending.
    pub fn metadata(mut self, key: impl Into<GgufString>, value: impl Into<Value>) -> Self {
        set_metadata(&mut self.header.metadata, key.into(), value.into());
        self
    }

    /// Replaces all the metadata with these pairs, in this order (duplicates kept).
    pub fn with_metadata(mut self, metadata: Vec<KeyValue>) -> Self {
        self.header.metadata = metadata;
        self
    }

    /// Sets `general.alignment`.
    pub fn alignment(self, alignment: u32) -> Self {
        self.metadata(ALIGNMENT_KEY, alignment)
    }

    /// Adds a tensor; its data must be exactly the size its type and shape call for.
    pub fn tensor(
        mut self,
        name: impl Into<GgufString>,
        ggml_type: GgmlType,
        dimensions: &[u64],
        data: impl Into<Source<'a>>,
    ) -> Result<Self> {
        let data = data.into();
        let name = name.into();
        let fail = |source: TensorError| Error::Tensor {
            index: self.header.tensor_infos.len(),
            name: name.to_string(),
            source,
        };
        let size = (ggml_type.byte_size(dimensions)).map_err(|e| fail(e.into()))?;
        if data.len() != size {
            return Err(fail(TensorError::DataLength {
                ty: ggml_type,
                dimensions: dimensions.to_vec(),
                given: data.len(),
                needed: size,
            }));
        }
        self.header.tensor_infos.push(TensorInfo {
            name,
            dimensions: dimensions.to_vec(),
            ggml_type: ggml_type.id(),
            offset: 0,
        });
        self.sources.push(data);
        Ok(self)
    }

    /// Sets each tensor's offset and the padding; returns the header and the data section's
    /// parts.
    pub(crate) fn lay_out(mut self) -> Result<(Header, Vec<Part<'a>>)> {
        let alignment = u64::from(self.header.alignment());
        let mut offset = 0u64;
        let mut parts = Vec::with_capacity(2 * self.sources.len());
        for (index, (info, source)) in
            (self.header.tensor_infos.iter_mut().zip(self.sources)).enumerate()
        {
            info.offset = offset;
            let too_large = || Error::Tensor {
                index,
                name: info.name.to_string(),
                source: TensorError::TooLarge,
            };
            let end = offset.checked_add(source.len()).ok_or_else(too_large)?;
            offset = (end.checked_next_multiple_of(alignment)).ok_or_else(too_large)?;
            parts.push(Part::Data(source));
            parts.push(Part::Zeros(offset - end));
        }
        self.header.pad()?;
        Ok((self.header, parts))
    }

    /// Writes the file to `out`; returns the bytes written.
    pub fn write_to<W: Write>(self, out: W) -> Result<u64> {
        let (header, mut parts) = self.lay_out()?;
        write_parts(&mut Plain(out), &header, &mut parts, &())
    }

    /// Writes the file to `path` through a temporary file beside it (synced, then renamed),
    /// with the permissions a plain `File::create` gives; data from [`Source::File`] is copied
    /// by the kernel where the OS allows. Returns the bytes written.
    pub fn write_file(self, path: &Path) -> Result<u64> {
        self.write_file_with(path, Mode::Plain, &())
    }

    /// [`Builder::write_file`] with the permission bits `mode` says, telling `progress` how the
    /// tensor data advances.
    pub fn write_file_with(self, path: &Path, mode: Mode, progress: &dyn Progress) -> Result<u64> {
        let (header, mut parts) = self.lay_out()?;
        progress.begin(parts.iter().map(Part::len).sum());
        write_atomic_file(path, mode, |out| {
            write_parts(out, &header, &mut parts, progress).map_err(|e| e.in_file(path))
        })
    }

    /// The file in memory.
    pub fn build(self) -> Result<Gguf<Vec<u8>>> {
        let mut bytes = Vec::new();
        self.write_to(&mut bytes)?;
        Gguf::from_bytes(bytes)
    }
}

/// Sets `key` to `value` in place if present, else appends it.
pub(crate) fn set_metadata(metadata: &mut Vec<KeyValue>, key: GgufString, value: Value) {
    match metadata.iter_mut().find(|kv| kv.key == key) {
        Some(kv) => kv.value = value,
        None => metadata.push(KeyValue::new(key, value)),
    }
}

impl Part<'_> {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Part::Data(s) => s.len(),
            Part::Zeros(n) => *n,
        }
    }
}

/// A destination for file data: a plain writer copies through a buffer; a [`File`] lets the
/// kernel copy (copy_file_range, which reflinks where the file system can).
pub(crate) trait Sink: Write {
    /// Appends `len` bytes at `offset` of `file`.
    fn copy_range(&mut self, file: &File, offset: u64, len: u64) -> io::Result<()> {
        let mut buf = vec![0u8; BUFFER.min(len as usize)];
        let mut done = 0u64;
        while done < len {
            let n = buf.len().min((len - done) as usize);
            crate::fsutil::read_exact_at(file, &mut buf[..n], offset + done)?;
            self.write_all(&buf[..n])?;
            done += n as u64;
        }
        Ok(())
    }
}

/// Any writer, copying through a buffer.
pub(crate) struct Plain<W>(pub W);

impl<W: Write> Write for Plain<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write> Sink for Plain<W> {}

impl Sink for File {
    fn copy_range(&mut self, file: &File, offset: u64, len: u64) -> io::Result<()> {
        let mut src = file;
        src.seek(SeekFrom::Start(offset))?;
        // std turns a copy between files into copy_file_range (or sendfile) on Linux.
        let copied = io::copy(&mut src.take(len), self)?;
        if copied != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("source file ended after {copied} of {len} bytes"),
            ));
        }
        Ok(())
    }
}

/// Pieces of this size at most between progress updates.
const STEP: u64 = 256 << 20;

/// Writes the header, then each part, reporting progress; returns the bytes written.
pub(crate) fn write_parts<S: Sink>(
    out: &mut S,
    header: &Header,
    parts: &mut [Part<'_>],
    progress: &dyn Progress,
) -> Result<u64> {
    let data_follows = parts.iter().any(|p| p.len() > 0);
    // Streamed: the padding of a large alignment is never held in memory.
    let mut written = header.write_to(&mut *out, data_follows)?;
    let zeros = vec![0u8; BUFFER];
    let mut tensor = 0;
    for part in parts.iter_mut() {
        // Data parts are tensors in order where a source can fail (the builder's).
        let fail = |source: TensorError| Error::Tensor {
            index: tensor,
            name: (header.tensor_infos.get(tensor))
                .map(|info| info.name.to_string())
                .unwrap_or_default(),
            source,
        };
        match part {
            Part::Zeros(n) => {
                let mut left = *n;
                while left > 0 {
                    let k = left.min(zeros.len() as u64) as usize;
                    out.write_all(&zeros[..k])?;
                    left -= k as u64;
                }
            }
            Part::Data(Source::Owned(v)) => {
                out.write_all(v)?;
                progress.advance(v.len() as u64);
            }
            Part::Data(Source::Bytes(b)) => {
                out.write_all(b)?;
                progress.advance(b.len() as u64);
            }
            Part::Data(Source::File { file, offset, len }) => {
                let mut done = 0;
                while done < *len {
                    let n = (*len - done).min(STEP);
                    out.copy_range(file, *offset + done, n)?;
                    done += n;
                    progress.advance(n);
                }
            }
            Part::Data(Source::Reader { reader, len }) => {
                let mut buf = vec![0u8; BUFFER.min(*len as usize)];
                let mut done = 0u64;
                while done < *len {
                    let n = buf.len().min((*len - done) as usize);
                    reader.read_exact(&mut buf[..n]).map_err(|source| {
                        fail(TensorError::ShortSource {
                            done,
                            len: *len,
                            source,
                        })
                    })?;
                    out.write_all(&buf[..n])?;
                    done += n as u64;
                    progress.advance(n as u64);
                }
            }
            Part::Data(Source::Chunks { chunks, len }) => {
                let mut done = 0u64;
                for chunk in chunks {
                    let chunk = chunk?;
                    done += chunk.len() as u64;
                    if done > *len {
                        break;
                    }
                    out.write_all(&chunk)?;
                    progress.advance(chunk.len() as u64);
                }
                if done != *len {
                    return Err(fail(TensorError::SourceLength {
                        gave: done,
                        declared: *len,
                    }));
                }
            }
        }
        if matches!(part, Part::Data(_)) {
            tensor += 1;
        }
        written += part.len();
    }
    out.flush()?;
    progress.finish();
    Ok(written)
}
