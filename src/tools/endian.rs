//! Converting a file to the other byte order: the header re-encoded (every count, length and
//! value in the new order, the same length), each tensor's blocks swapped as their declaration
//! says ([`crate::quant::swap_plan`]), everything else in the data section (gaps, padding,
//! trailing bytes) kept as it is. Memory stays bounded whatever the size: the data goes
//! through one buffer.

pub use crate::error::EndianError;
use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::fsutil::{
    critical, read_exact_at, write_all_at, write_atomic_file, write_staged, Mode, Progress,
};
use crate::quant::GgmlType;
use ggufrw_schema::{version, ByteOrder, Header};
use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

/// Bytes swapped at once (a multiple of every block size is taken within each tensor).
const BUFFER: usize = 4 << 20;

/// A stretch of the data section: a tensor's blocks of a type, or bytes kept as they are.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stretch {
    range: Range<u64>,
    blocks_of: Option<GgmlType>,
}

/// The header in `to`, and the data section cut into stretches; refuses what cannot be
/// converted without loss: a version that has no such byte order, unknown types, data outside
/// the file or overlapping (a byte swapped twice is not swapped).
fn plan<B: AsRef<[u8]>>(file: &Gguf<B>, to: ByteOrder) -> Result<(Header, Vec<Stretch>)> {
    let old = file.header();
    if !version::is_supported(old.version, to) {
        return Err(EndianError::NoSuchVersion {
            version: old.version,
            to,
        }
        .into());
    }
    let mut new = old.clone();
    new.byte_order = to;
    let data_len = file.data_section().len() as u64;
    let mut tensors = Vec::with_capacity(old.tensor_infos.len());
    for (i, info) in old.tensor_infos.iter().enumerate() {
        let ty = GgmlType::from_id(info.ggml_type).ok_or_else(|| Error::Tensor {
            index: i,
            name: info.name.to_string(),
            source: TensorError::UnknownType(info.ggml_type),
        })?;
        let data = file.tensor_data(i)?;
        tensors.push((info.offset, info.offset + data.len() as u64, ty, i));
    }
    tensors.sort_unstable_by_key(|&(start, end, _, i)| (start, end, i));
    let mut stretches = Vec::new();
    let mut at = 0u64;
    for &(start, end, ty, i) in &tensors {
        if start < at {
            return Err(EndianError::Overlap {
                index: i,
                name: old.tensor_infos[i].name.to_string(),
            }
            .into());
        }
        if start > at {
            stretches.push(Stretch {
                range: at..start,
                blocks_of: None,
            });
        }
        stretches.push(Stretch {
            range: start..end,
            blocks_of: Some(ty),
        });
        at = end;
    }
    if at < data_len {
        stretches.push(Stretch {
            range: at..data_len,
            blocks_of: None,
        });
    }
    Ok((new, stretches))
}

/// Pieces of a stretch of at most [`BUFFER`] bytes, whole blocks each.
fn pieces(stretch: &Stretch) -> impl Iterator<Item = Range<u64>> + '_ {
    let block = stretch.blocks_of.map_or(1, |t| t.type_size());
    let step = (BUFFER as u64 / block).max(1) * block;
    let Range { start, end } = stretch.range;
    (start..end)
        .step_by(step as usize)
        .map(move |s| s..(s + step).min(end))
}

/// Writes `input` in byte order `to` to `output` (atomically, with the input's permissions).
pub fn convert_endian(
    input: &Path,
    output: &Path,
    to: ByteOrder,
    progress: &dyn Progress,
) -> Result<()> {
    let (header, stretches, data_offset, data_len) = {
        let file = Gguf::open(input)?;
        let (header, stretches) = plan(&file, to).map_err(|e| e.in_file(input))?;
        let data_len = file.data_section().len() as u64;
        (header, stretches, file.layout().data_offset, data_len)
    };
    // Read with pread, not through a map: memory stays a few buffers whatever the file's size.
    let source = std::fs::File::open(input).map_err(|e| Error::from(e).in_file(input))?;
    let read = |e: std::io::Error| Error::from(e).in_file(input);
    progress.begin(data_len);
    write_atomic_file(output, Mode::of(input)?, |out| {
        let written = |e: std::io::Error| Error::from(e).in_file(output);
        // Read and swapped here while the staged writer writes the pieces before (with
        // direct I/O where the system has it): the disk is the one cost left.
        write_staged(out, |sink| {
            header
                .write_to(&mut *sink, data_len > 0)
                .map_err(|e| Error::from(e).in_file(output))?;
            let mut buf = vec![0u8; BUFFER];
            for stretch in &stretches {
                for piece in pieces(stretch) {
                    let buf = &mut buf[..(piece.end - piece.start) as usize];
                    read_exact_at(&source, buf, data_offset + piece.start).map_err(read)?;
                    if let Some(ty) = stretch.blocks_of {
                        crate::quant::swap_plan(ty).apply(buf);
                    }
                    sink.write_all(buf).map_err(written)?;
                    progress.advance(buf.len() as u64);
                }
            }
            Ok(())
        })
        .map_err(|e| e.in_file(output))?;
        progress.finish();
        Ok(())
    })
}

/// Converts `path` to byte order `to` where it is: the header rewritten (it keeps its length)
/// and each tensor's blocks swapped in place. The whole conversion runs inside
/// `fsutil::critical`, so that a signal handler lets it finish rather than leave a file half in
/// one order.
pub fn convert_endian_in_place(path: &Path, to: ByteOrder, progress: &dyn Progress) -> Result<()> {
    let in_file = |e: Error| e.in_file(path);
    let io = |e: std::io::Error| Error::from(e).in_file(path);
    // Locked before the header is read (see `fsutil::lock_for_writing`).
    let out = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let _lock = crate::fsutil::lock_for_writing(&out).map_err(io)?;
    let (header, stretches, data_offset, has_data) = {
        let file = Gguf::open(path)?;
        let (header, stretches) = plan(&file, to).map_err(in_file)?;
        let layout = header.layout().map_err(|e| in_file(e.into()))?;
        if layout.data_offset != file.layout().data_offset {
            return Err(in_file(EndianError::HeaderLength.into()));
        }
        (
            header,
            stretches,
            layout.data_offset,
            !file.data_section().is_empty(),
        )
    };
    critical(|| -> Result<()> {
        let total: u64 = stretches.iter().map(|s| s.range.end - s.range.start).sum();
        progress.begin(total);
        let mut buf = vec![0u8; BUFFER];
        for stretch in stretches.iter().filter(|s| s.blocks_of.is_some()) {
            for piece in pieces(stretch) {
                let n = (piece.end - piece.start) as usize;
                read_exact_at(&out, &mut buf[..n], data_offset + piece.start).map_err(io)?;
                if let Some(ty) = stretch.blocks_of {
                    crate::quant::swap_plan(ty).apply(&mut buf[..n]);
                }
                write_all_at(&out, &buf[..n], data_offset + piece.start).map_err(io)?;
                progress.advance(n as u64);
            }
        }
        // Streamed from the start of the file: the padding of a large alignment is not held.
        let mut at_start = &out;
        at_start.seek(SeekFrom::Start(0)).map_err(io)?;
        header
            .write_to(at_start, has_data)
            .map_err(|e| in_file(e.into()))?;
        out.sync_all().map_err(io)?;
        progress.finish();
        Ok(())
    })
}
