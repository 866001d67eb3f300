//! Editing a file's metadata and tensor list without losing data: to a new file (a temporary
//! file beside it, synced and renamed), or in place when the new header fits where the old one
//! was. Everything not edited stays byte-identical; tensor data is copied by the kernel where
//! the OS allows.

pub use crate::error::EditError;
use crate::error::{Error, Result};
use crate::file::{tensor_byte_size, Gguf};
use crate::fsutil::{critical, same_file, write_atomic_file, Mode, Progress};
use crate::keys::standard_key;
use crate::write::{set_metadata, write_parts, Part, Source};
use ggufrw_schema::{GgufString, Header, Layout, TensorInfo, Value};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// The changes to make. Keys and names are byte strings, as files hold them: a key or tensor
/// name that is not UTF-8 can be deleted or renamed too (`GgufString::from_bytes`).
#[derive(Clone, Debug, Default)]
pub struct Edit {
    /// Keys to set: replaced where they are, appended where new.
    pub set: Vec<(GgufString, Value)>,
    /// Keys to delete (every occurrence); each must exist.
    pub delete: Vec<GgufString>,
    /// Tensors to rename, `(old, new)`.
    pub rename_tensors: Vec<(GgufString, GgufString)>,
    /// Tensors to delete; the others' data is laid out again, contiguous and aligned.
    pub delete_tensors: Vec<GgufString>,
    /// Set standard keys to values of another type than their standard one.
    pub force: bool,
}

/// What an edit wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EditReport {
    /// Bytes of the new header, padding included.
    pub header_bytes: u64,
    /// Bytes of tensor data written (0 in place).
    pub data_bytes: u64,
}

impl Edit {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
            && self.delete.is_empty()
            && self.rename_tensors.is_empty()
            && self.delete_tensors.is_empty()
    }

    /// The header with the edit applied, tensor offsets untouched.
    pub fn apply(&self, header: &Header) -> Result<Header> {
        self.apply_tracked(header).map(|(new, _)| new)
    }

    /// The edited header, and for each of its tensors the index it had in `header`.
    fn apply_tracked(&self, header: &Header) -> Result<(Header, Vec<usize>)> {
        let mut new = header.clone();
        let mut origin: Vec<usize> = (0..new.tensor_infos.len()).collect();
        for key in &self.delete {
            let before = new.metadata.len();
            new.metadata.retain(|kv| kv.key != *key);
            if new.metadata.len() == before {
                return Err(EditError::NoSuchKey(key.to_string()).into());
            }
        }
        for (key, value) in &self.set {
            set_metadata(&mut new.metadata, key.clone(), value.clone());
        }
        if !self.force {
            self.check_standard_types(&new)?;
        }
        if new.alignment() != header.alignment() {
            return Err(EditError::AlignmentChanged {
                from: header.alignment(),
                to: new.alignment(),
            }
            .into());
        }
        // A name several tensors share (a file validation rejects) says not which one is meant.
        let only = |infos: &[TensorInfo], name: &GgufString| {
            let mut found = infos.iter().enumerate().filter(|(_, t)| t.name == *name);
            match (found.next(), found.next()) {
                (Some((at, _)), None) => Ok(at),
                (None, _) => Err(EditError::NoSuchTensor(name.to_string())),
                (Some(_), Some(_)) => Err(EditError::AmbiguousTensor(name.to_string())),
            }
        };
        for (old, renamed) in &self.rename_tensors {
            let at = only(&new.tensor_infos, old)?;
            if old != renamed && new.tensor_infos.iter().any(|t| t.name == *renamed) {
                return Err(EditError::TensorExists(renamed.to_string()).into());
            }
            new.tensor_infos[at].name = renamed.clone();
        }
        for name in &self.delete_tensors {
            let at = only(&new.tensor_infos, name)?;
            new.tensor_infos.remove(at);
            origin.remove(at);
        }
        Ok((new, origin))
    }

    /// Refuses a set standard key whose value is not of its standard type, in the
    /// architecture the edited header names.
    fn check_standard_types(&self, new: &Header) -> Result<(), EditError> {
        let arch = crate::keys::Meta::new(&new.metadata).architecture();
        for (key, value) in &self.set {
            // Standard keys are ASCII: a key that is not UTF-8 is none of them.
            let Ok(key) = key.as_str() else {
                continue;
            };
            if let Some(standard) = standard_key(key, arch) {
                if !(standard.matches)(value) {
                    return Err(EditError::NotStandardType {
                        key: key.to_owned(),
                        expected: standard.expected,
                        found: crate::keys::describe(value),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The new header and the parts of the new data section, from a decoded file and its handle.
fn plan<'a, B: AsRef<[u8]>>(
    file: &Gguf<B>,
    handle: &'a File,
    edit: &Edit,
) -> Result<(Header, Vec<Part<'a>>)> {
    let old = file.header();
    let data_offset = file.layout().data_offset;
    let data_len = file.data_section().len() as u64;
    let whole_data = || match data_len {
        0 => Vec::new(),
        len => vec![Part::Data(Source::File {
            file: handle,
            offset: data_offset,
            len,
        })],
    };
    if edit.is_empty() {
        return Ok((old.clone(), whole_data()));
    }
    let (mut new, origin) = edit.apply_tracked(old)?;
    if edit.delete_tensors.is_empty() {
        pad_like(&mut new, old, data_len > 0)?;
        return Ok((new, whole_data()));
    }
    // Deleting tensors: the rest are laid out again as ggml lays them out.
    let alignment = u64::from(new.alignment());
    let mut parts = Vec::new();
    let mut offset = 0u64;
    for (info, &index) in new.tensor_infos.iter_mut().zip(&origin) {
        let size = tensor_byte_size(index, &old.tensor_infos[index])?;
        let source = file.tensor_data(index).map(|_| Source::File {
            file: handle,
            offset: data_offset + info.offset,
            len: size,
        })?;
        info.offset = offset;
        let end = offset + size;
        offset = end.next_multiple_of(alignment);
        parts.push(Part::Data(source));
        parts.push(Part::Zeros(offset - end));
    }
    pad_like(&mut new, old, offset > 0)?;
    Ok((new, parts))
}

/// Pads the edited header as its alignment calls for when tensor data follows. Without data
/// the padding is optional, and is kept no longer than the input's: an edit never grows a
/// data-less file towards a large `general.alignment` (up to 4 GiB of zeros).
fn pad_like(new: &mut Header, old: &Header, data_follows: bool) -> Result<Layout> {
    let layout = new.pad()?;
    if !data_follows {
        new.padding.truncate(old.padding.len());
    }
    Ok(layout)
}

/// Writes `input` with `edit` applied to `output`, which must not be `input`: through a
/// temporary file beside `output`, synced and renamed, so that a failure leaves no output and
/// the input is never touched. The output gets the input's permission bits.
pub fn edit_file(input: &Path, output: &Path, edit: &Edit) -> Result<EditReport> {
    edit_file_with(input, output, edit, &())
}

/// [`edit_file`], telling `progress` how the copy of the tensor data advances.
pub fn edit_file_with(
    input: &Path,
    output: &Path,
    edit: &Edit,
    progress: &dyn Progress,
) -> Result<EditReport> {
    if same_file(input, output) {
        return Err(Error::from(EditError::OutputIsInput).in_file(output));
    }
    let in_input = |e: Error| e.in_file(input);
    let handle = File::open(input).map_err(|e| in_input(e.into()))?;
    let file = Gguf::open(input)?;
    let mode = Mode::of(input)?;
    let (header, mut parts) = plan(&file, &handle, edit).map_err(in_input)?;
    let data_bytes = parts.iter().map(Part::len).sum::<u64>();
    progress.begin(data_bytes);
    let written = write_atomic_file(output, mode, |out| {
        write_parts(out, &header, &mut parts, progress).map_err(|e| e.in_file(output))
    })?;
    Ok(EditReport {
        header_bytes: written - data_bytes,
        data_bytes,
    })
}

/// Applies `edit` to `path` by rewriting only its header, when the new header ends where the
/// old one did, up to the alignment slack. Otherwise refuses, saying by how many bytes it
/// misses, and changes nothing. Deleting tensors is refused (it would leave a gap in the data).
/// The header write runs inside `fsutil::critical`, so that a signal handler that calls
/// [`crate::fsutil::remove_temporary_files`] lets it finish.
pub fn edit_in_place(path: &Path, edit: &Edit) -> Result<EditReport> {
    edit_in_place_inner(path, edit).map_err(|e| e.in_file(path))
}

fn edit_in_place_inner(path: &Path, edit: &Edit) -> Result<EditReport> {
    if !edit.delete_tensors.is_empty() {
        return Err(EditError::DeleteInPlace.into());
    }
    // Locked before the header is read: a second writer must not edit what this one is
    // about to overwrite.
    let out = OpenOptions::new().write(true).open(path)?;
    let _lock = crate::fsutil::lock_for_writing(&out)?;
    let (new, has_data) = {
        let file = Gguf::open(path)?;
        let mut new = edit.apply(file.header())?;
        let has_data = !file.data_section().is_empty();
        let layout = pad_like(&mut new, file.header(), has_data)?;
        let old_start = file.layout().data_offset;
        if layout.data_offset != old_start && (has_data || layout.data_offset > old_start) {
            return Err(if layout.tensor_infos_end > old_start {
                EditError::DoesNotFit {
                    needed: layout.tensor_infos_end - old_start,
                    room: old_start,
                }
            } else {
                EditError::ShrinksPastSlack {
                    by: old_start - layout.tensor_infos_end,
                    alignment: layout.alignment,
                }
            }
            .into());
        }
        (new, has_data)
    };
    let header_bytes = critical(|| -> Result<u64> {
        let header_bytes = new.write_to(&mut &out, has_data)?;
        if !has_data {
            // A file without data ends with its header: cut if the header shrank.
            out.set_len(header_bytes)?;
        }
        out.sync_all()?;
        Ok(header_bytes)
    })?;
    Ok(EditReport {
        header_bytes,
        data_bytes: 0,
    })
}
