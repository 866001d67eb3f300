//! Editing a file's metadata and tensor list without losing data: to a new file (a temporary
//! file beside it, synced and renamed), or in place when the new header fits where the old one
//! was. Everything not edited stays byte-identical; tensor data is copied by the kernel where
//! the OS allows.

use crate::error::{Error, Result};
use crate::file::{tensor_byte_size, Gguf};
use crate::fsutil::{same_file, write_atomic_file, Progress};
use crate::write::{set_metadata, write_parts, Part, Source};
use ggufrw_schema::{
    Array, ArrayValues, Header, Layout, TensorInfo, Value, ValueType, ALIGNMENT_KEY,
};
use std::fs::{File, OpenOptions};
use std::path::Path;
use std::str::FromStr;

/// The changes to make.
#[derive(Clone, Debug, Default)]
pub struct Edit {
    /// Keys to set: replaced where they are, appended where new.
    pub set: Vec<(String, Value)>,
    /// Keys to delete (every occurrence); each must exist.
    pub delete: Vec<String>,
    /// Tensors to rename, `(old, new)`.
    pub rename_tensors: Vec<(String, String)>,
    /// Tensors to delete; the others' data is laid out again, contiguous and aligned.
    pub delete_tensors: Vec<String>,
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
            new.metadata.retain(|kv| kv.key != **key);
            if new.metadata.len() == before {
                return Err(Error::Invalid(format!("--delete {key}: no such key")));
            }
        }
        for (key, value) in &self.set {
            set_metadata(&mut new.metadata, key, value.clone());
        }
        if new.alignment() != header.alignment() {
            return Err(Error::Invalid(format!(
                "{ALIGNMENT_KEY} would change from {} to {}: that moves every tensor's data, which edit does not do",
                header.alignment(),
                new.alignment()
            )));
        }
        // A name several tensors share (a file validation rejects) says not which one is meant.
        let only = |infos: &[TensorInfo], flag: &str, name: &str| {
            let mut found = infos.iter().enumerate().filter(|(_, t)| t.name == *name);
            match (found.next(), found.next()) {
                (Some((at, _)), None) => Ok(at),
                (None, _) => Err(Error::Invalid(format!("{flag} {name}: no such tensor"))),
                (Some(_), Some(_)) => Err(Error::Invalid(format!(
                    "{flag} {name}: several tensors have that name, so it does not say which"
                ))),
            }
        };
        for (old, renamed) in &self.rename_tensors {
            let at = only(&new.tensor_infos, "--rename-tensor", old)?;
            if old != renamed && new.tensor_infos.iter().any(|t| t.name == **renamed) {
                return Err(Error::Invalid(format!(
                    "--rename-tensor {old}={renamed}: {renamed} exists"
                )));
            }
            new.tensor_infos[at].name = renamed.as_str().into();
        }
        for name in &self.delete_tensors {
            let at = only(&new.tensor_infos, "--delete-tensor", name)?;
            new.tensor_infos.remove(at);
            origin.remove(at);
        }
        Ok((new, origin))
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
/// the input is never touched.
pub fn edit_file(input: &Path, output: &Path, edit: &Edit) -> Result<EditReport> {
    if same_file(input, output) {
        return Err(Error::Invalid(format!(
            "{} is the input: edit it with --in-place, or write elsewhere",
            output.display()
        )));
    }
    let handle = File::open(input)?;
    let file = Gguf::open(input)?;
    let (header, mut parts) = plan(&file, &handle, edit)?;
    let data_bytes = parts.iter().map(Part::len).sum::<u64>();
    let progress = Progress::for_copy(data_bytes);
    let written = write_atomic_file(output, |out| {
        write_parts(out, &header, &mut parts, &progress)
    })?;
    Ok(EditReport {
        header_bytes: written - data_bytes,
        data_bytes,
    })
}

/// Applies `edit` to `path` by rewriting only its header, when the new header ends where the
/// old one did, up to the alignment slack. Otherwise refuses, saying by how many bytes it
/// misses, and changes nothing. Deleting tensors is refused (it would leave a gap in the data).
pub fn edit_in_place(path: &Path, edit: &Edit) -> Result<EditReport> {
    if !edit.delete_tensors.is_empty() {
        return Err(Error::Invalid(
            "deleting tensors in place would leave a hole in the data section; write a new file with -o".into(),
        ));
    }
    let (new, has_data) = {
        let file = Gguf::open(path)?;
        let mut new = edit.apply(file.header())?;
        let has_data = !file.data_section().is_empty();
        let layout = pad_like(&mut new, file.header(), has_data)?;
        let old_start = file.layout().data_offset;
        if layout.data_offset != old_start && (has_data || layout.data_offset > old_start) {
            return Err(Error::Invalid(if layout.tensor_infos_end > old_start {
                format!(
                    "the new header needs {} more bytes than the {old_start} before the data section; write a new file with -o",
                    layout.tensor_infos_end - old_start
                )
            } else {
                format!(
                    "the new header ends {} bytes before the old one, past the {}-byte alignment slack, which would move the data section; write a new file with -o",
                    old_start - layout.tensor_infos_end,
                    layout.alignment
                )
            }));
        }
        (new, has_data)
    };
    let mut out = OpenOptions::new().write(true).open(path)?;
    let header_bytes = new.write_to(&mut out, has_data)?;
    if !has_data {
        // A file without data ends with its header: cut if the header shrank.
        out.set_len(header_bytes)?;
    }
    out.sync_all()?;
    Ok(EditReport {
        header_bytes,
        data_bytes: 0,
    })
}

/// Parses `TYPE:VALUE` (`uint32:8192`, `string:Gemma`, `bool:true`, `float32:0.5`) or
/// `array[TYPE]:JSON_LIST` (`array[int32]:[1,2]`, `array[string]:["a","b"]`).
pub fn parse_value(text: &str) -> Result<Value> {
    let (ty, raw) = text
        .split_once(':')
        .ok_or_else(|| Error::Invalid(format!("{text:?}: expected TYPE:VALUE")))?;
    let bad = |why: String| Error::Invalid(format!("{text:?}: {why}"));
    if let Some(element) = ty.strip_prefix("array[").and_then(|t| t.strip_suffix(']')) {
        let element =
            ValueType::from_str(element).map_err(|_| bad(format!("unknown type {element}")))?;
        let list: Vec<serde_json::Value> =
            serde_json::from_str(raw).map_err(|e| bad(format!("not a JSON list: {e}")))?;
        let items = list
            .iter()
            .map(|item| match item {
                serde_json::Value::String(s) => scalar(element, s),
                other => scalar(element, &other.to_string()),
            })
            .collect::<Result<Vec<_>>>()
            .map_err(|e| bad(e.to_string()))?;
        return collect_array(element, items).map_err(bad);
    }
    let ty = ValueType::from_str(ty).map_err(|_| bad(format!("unknown type {ty}")))?;
    scalar(ty, raw).map_err(|e| bad(e.to_string()))
}

/// One scalar of type `ty` from text.
fn scalar(ty: ValueType, raw: &str) -> Result<Value> {
    fn num<T: FromStr>(raw: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        raw.trim()
            .parse()
            .map_err(|e| Error::Invalid(format!("{raw:?}: {e}")))
    }
    Ok(match ty {
        ValueType::Uint8 => Value::Uint8(num(raw)?),
        ValueType::Int8 => Value::Int8(num(raw)?),
        ValueType::Uint16 => Value::Uint16(num(raw)?),
        ValueType::Int16 => Value::Int16(num(raw)?),
        ValueType::Uint32 => Value::Uint32(num(raw)?),
        ValueType::Int32 => Value::Int32(num(raw)?),
        ValueType::Float32 => Value::Float32(num(raw)?),
        ValueType::Uint64 => Value::Uint64(num(raw)?),
        ValueType::Int64 => Value::Int64(num(raw)?),
        ValueType::Float64 => Value::Float64(num(raw)?),
        ValueType::Bool => Value::Bool(num(raw)?),
        ValueType::String => Value::from(raw),
        ValueType::Array => {
            return Err(Error::Invalid(
                "arrays are written array[TYPE]:[…]; arrays of arrays cannot be set here".into(),
            ))
        }
    })
}

/// Scalars of one type as an array value.
fn collect_array(ty: ValueType, items: Vec<Value>) -> Result<Value, String> {
    let mut values = ArrayValues::empty(ty);
    macro_rules! push_all {
        ($($variant:ident),*) => {
            match &mut values {
                $(ArrayValues::$variant(v) => {
                    for item in items {
                        match item {
                            Value::$variant(x) => v.push(x),
                            _ => unreachable!("scalar() returns the asked type"),
                        }
                    }
                })*
                ArrayValues::String(list) => {
                    for item in items {
                        match item {
                            Value::String(s) => list.push(&s),
                            _ => unreachable!("scalar() returns the asked type"),
                        }
                    }
                }
                ArrayValues::Array(_) => return Err("arrays of arrays cannot be set here".into()),
            }
        };
    }
    push_all!(Uint8, Int8, Uint16, Int16, Uint32, Int32, Float32, Bool, Uint64, Int64, Float64);
    Ok(Value::Array(Array::new(values)))
}
