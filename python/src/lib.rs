//! `ggufrw._native`: the Rust side of the `ggufrw` Python package.
//!
//! The Python modules (`python/ggufrw/`) give the API its shape; this module hands them plain
//! values (tuples, lists, ints, `bytes`, `bytearray`) so that it stays small and the abi3 wheel
//! needs nothing of the interpreter beyond the stable ABI. Long jobs (dequantize, quantize,
//! split, merge, hash, edits) run with the interpreter released.

use ggufrw::edit::{edit_file, edit_in_place, Edit};
use ggufrw::quant::{self, BlockVisitor, Codec, QuantError};
use ggufrw::quantize::CommandLine;
use ggufrw::schema::{Array, ArrayValues, StrList, Width};
use ggufrw::tools::hash::{hash_file, HashKind};
use ggufrw::tools::split::{self, SplitBy};
use ggufrw::validate::{validate_header, Profile};
use ggufrw::view::Content;
use ggufrw::{
    ByteOrder, DecodeError, Error, GgmlType, Gguf, GgufBool, GgufString, Header, KeyValue, Text,
    Value, ValueType,
};
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyList, PyString, PyTuple};
use std::path::{Path, PathBuf};

/// The exceptions, named as the package exports them (`ggufrw.Error`, `ggufrw.DecodeError`).
mod exceptions {
    use pyo3::create_exception;
    use pyo3::exceptions::PyException;

    create_exception!(
        ggufrw,
        Error,
        PyException,
        "Anything that can go wrong reading, writing or converting a GGUF file."
    );
    create_exception!(
        ggufrw,
        DecodeError,
        Error,
        "The input is not a well-formed GGUF file."
    );
}

use exceptions::{DecodeError as PyDecodeError, Error as GgufError};

/// A short name for the error's kind, for `Error.kind`.
fn kind_of(e: &Error) -> String {
    let kind = match e.root() {
        Error::Decode(d) => return decode_kind(d),
        Error::Encode(_) => "encode",
        Error::Tensor { .. } | Error::NoTensor { .. } => "tensor",
        Error::Alignment { .. } => "alignment",
        Error::Gated(_) => "gated",
        Error::Edit(_) => "edit",
        Error::Quant(_) => "quant",
        Error::Quantize(_) => "quantize",
        Error::Split(_) => "split",
        Error::Endian(_) => "endian",
        Error::Io(_) => "io",
        Error::Remote { .. } => "remote",
        _ => "other",
    };
    kind.to_owned()
}

/// The decode error's kind as its variant name in snake case (`unexpected_eof`).
fn decode_kind(d: &DecodeError) -> String {
    let debug = format!("{:?}", d.kind);
    let name = debug.split(['(', ' ', '{']).next().unwrap_or("decode");
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The library's error as a Python exception carrying kind, field path, byte offset and file.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    let file = e.path().map(|p| p.display().to_string());
    let kind = kind_of(&e);
    let (path, offset) = match e.root() {
        Error::Decode(d) => (Some(d.path.clone()), Some(d.offset)),
        _ => (None, None),
    };
    let message = e.to_string();
    let err = if matches!(e.root(), Error::Decode(_)) {
        PyDecodeError::new_err(message)
    } else {
        GgufError::new_err(message)
    };
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory exhaustion;
    // the exception is raised either way.
    let _ = value.setattr("kind", kind);
    let _ = value.setattr("path", path);
    let _ = value.setattr("offset", offset);
    let _ = value.setattr("file", file);
    err
}

fn quant_err(py: Python<'_>, e: QuantError) -> PyErr {
    py_err(py, Error::Quant(e))
}

fn byte_order_name(order: ByteOrder) -> &'static str {
    match order {
        ByteOrder::Little => "little",
        ByteOrder::Big => "big",
    }
}

fn parse_byte_order(name: &str) -> PyResult<ByteOrder> {
    match name {
        "little" | "<" | "LE" | "le" => Ok(ByteOrder::Little),
        "big" | ">" | "BE" | "be" => Ok(ByteOrder::Big),
        other => Err(PyValueError::new_err(format!(
            "byte order {other:?}: 'little' or 'big'"
        ))),
    }
}

fn ggml_type(id: u32) -> PyResult<GgmlType> {
    GgmlType::from_id(id)
        .ok_or_else(|| PyValueError::new_err(format!("{id} is not a ggml type ggufrw knows")))
}

/// Text as `str` when it is UTF-8, else as `bytes` (what the file holds, unchanged).
fn text_to_py<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(bytes) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, bytes).into_any(),
    }
}

fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Uint8(v) => v.into_pyobject(py)?.into_any(),
        Value::Int8(v) => v.into_pyobject(py)?.into_any(),
        Value::Uint16(v) => v.into_pyobject(py)?.into_any(),
        Value::Int16(v) => v.into_pyobject(py)?.into_any(),
        Value::Uint32(v) => v.into_pyobject(py)?.into_any(),
        Value::Int32(v) => v.into_pyobject(py)?.into_any(),
        Value::Uint64(v) => v.into_pyobject(py)?.into_any(),
        Value::Int64(v) => v.into_pyobject(py)?.into_any(),
        Value::Float32(v) => f64::from(*v).into_pyobject(py)?.into_any(),
        Value::Float64(v) => v.into_pyobject(py)?.into_any(),
        Value::Bool(b) => PyBool::new(py, b.is_nonzero()).to_owned().into_any(),
        Value::String(s) => text_to_py(py, s.as_bytes()),
        Value::Array(a) => array_to_py(py, &a.values)?.into_any(),
    })
}

fn list_of<'py, T: Copy>(
    py: Python<'py>,
    values: &[T],
    f: impl Fn(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let items = values.iter().map(|v| f(*v)).collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn array_to_py<'py>(py: Python<'py>, values: &ArrayValues) -> PyResult<Bound<'py, PyList>> {
    macro_rules! nums {
        ($v:expr) => {
            list_of(py, $v, |x| Ok(x.into_pyobject(py)?.into_any()))
        };
    }
    match values {
        ArrayValues::Uint8(v) => nums!(v),
        ArrayValues::Int8(v) => nums!(v),
        ArrayValues::Uint16(v) => nums!(v),
        ArrayValues::Int16(v) => nums!(v),
        ArrayValues::Uint32(v) => nums!(v),
        ArrayValues::Int32(v) => nums!(v),
        ArrayValues::Uint64(v) => nums!(v),
        ArrayValues::Int64(v) => nums!(v),
        ArrayValues::Float32(v) => {
            list_of(py, v, |x| Ok(f64::from(x).into_pyobject(py)?.into_any()))
        }
        ArrayValues::Float64(v) => nums!(v),
        ArrayValues::Bool(v) => list_of(py, v, |b: GgufBool| {
            Ok(PyBool::new(py, b.is_nonzero()).to_owned().into_any())
        }),
        ArrayValues::String(v) => PyList::new(py, v.iter().map(|s| text_to_py(py, s.as_bytes()))),
        ArrayValues::Array(v) => {
            let items = (v.iter())
                .map(|a| array_to_py(py, &a.values))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)
        }
    }
}

fn value_type(id: u32) -> PyResult<ValueType> {
    ValueType::from_repr(id)
        .ok_or_else(|| PyValueError::new_err(format!("{id} is not a GGUF value type (0 to 12)")))
}

/// Bytes of a `str` (UTF-8) or of `bytes` (as they are).
fn text_bytes(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyValueError::new_err(format!(
        "a string value must be str or bytes, not {}",
        value.get_type().name()?
    )))
}

fn gguf_string(value: &Bound<'_, PyAny>) -> PyResult<GgufString> {
    Ok(GgufString::from_bytes(text_bytes(value)?))
}

/// An int that must fit `T`, with the value and type named when it does not.
fn int<T: TryFrom<i128>>(value: &Bound<'_, PyAny>, ty: ValueType) -> PyResult<T> {
    let wide: i128 = value.extract()?;
    T::try_from(wide)
        .map_err(|_| PyValueError::new_err(format!("{wide} does not fit a GGUF {}", ty.name())))
}

fn bool_of(value: &Bound<'_, PyAny>) -> PyResult<GgufBool> {
    // An int is the byte itself (what a file holds); a bool is 0 or 1.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(GgufBool::from(b.is_true()));
    }
    Ok(GgufBool::from_byte(int::<u8>(value, ValueType::Bool)?))
}

/// A Python value with its GGUF type as a [`Value`]; `element` types an array's elements, and
/// the elements of a nested array are `(element_type, list)` pairs.
fn py_to_value(ty: u32, value: &Bound<'_, PyAny>, element: Option<u32>) -> PyResult<Value> {
    let ty = value_type(ty)?;
    Ok(match ty {
        ValueType::Uint8 => Value::Uint8(int(value, ty)?),
        ValueType::Int8 => Value::Int8(int(value, ty)?),
        ValueType::Uint16 => Value::Uint16(int(value, ty)?),
        ValueType::Int16 => Value::Int16(int(value, ty)?),
        ValueType::Uint32 => Value::Uint32(int(value, ty)?),
        ValueType::Int32 => Value::Int32(int(value, ty)?),
        ValueType::Uint64 => Value::Uint64(int(value, ty)?),
        ValueType::Int64 => Value::Int64(int(value, ty)?),
        ValueType::Float32 => Value::Float32(value.extract::<f64>()? as f32),
        ValueType::Float64 => Value::Float64(value.extract()?),
        ValueType::Bool => Value::Bool(bool_of(value)?),
        ValueType::String => Value::String(gguf_string(value)?),
        ValueType::Array => {
            let element = element
                .ok_or_else(|| PyValueError::new_err("an array value needs its element type"))?;
            Value::Array(Array::new(py_to_array(element, value)?))
        }
    })
}

fn py_to_array(element: u32, value: &Bound<'_, PyAny>) -> PyResult<ArrayValues> {
    let ty = value_type(element)?;
    let items: Vec<Bound<'_, PyAny>> = value.try_iter()?.collect::<PyResult<_>>()?;
    macro_rules! ints {
        ($variant:ident) => {
            ArrayValues::$variant(items.iter().map(|v| int(v, ty)).collect::<PyResult<_>>()?)
        };
    }
    Ok(match ty {
        ValueType::Uint8 => ints!(Uint8),
        ValueType::Int8 => ints!(Int8),
        ValueType::Uint16 => ints!(Uint16),
        ValueType::Int16 => ints!(Int16),
        ValueType::Uint32 => ints!(Uint32),
        ValueType::Int32 => ints!(Int32),
        ValueType::Uint64 => ints!(Uint64),
        ValueType::Int64 => ints!(Int64),
        ValueType::Float32 => ArrayValues::Float32(
            (items.iter())
                .map(|v| Ok(v.extract::<f64>()? as f32))
                .collect::<PyResult<_>>()?,
        ),
        ValueType::Float64 => {
            ArrayValues::Float64(items.iter().map(|v| v.extract()).collect::<PyResult<_>>()?)
        }
        ValueType::Bool => ArrayValues::Bool(items.iter().map(bool_of).collect::<PyResult<_>>()?),
        ValueType::String => {
            let mut list = StrList::with_capacity(items.len(), 0);
            for v in &items {
                list.push_bytes(&text_bytes(v)?);
            }
            ArrayValues::String(list)
        }
        ValueType::Array => ArrayValues::Array(
            (items.iter())
                .map(|pair| {
                    let (inner, values): (u32, Bound<'_, PyAny>) = pair.extract()?;
                    Ok(Array::new(py_to_array(inner, &values)?))
                })
                .collect::<PyResult<_>>()?,
        ),
    })
}

/// Where a pair lies: `(kv_offset, key_len, value_type, element_type, count)`.
type KvPlace = (u64, u64, u32, Option<u32>, Option<u64>);

/// A finding: `(severity, category, path, offset, message)`.
type PyFinding = (String, String, String, u64, String);

/// A pair as Python gives it: `(key, value_type, value, element_type)`.
type PyKeyValue<'py> = (Bound<'py, PyAny>, u32, Bound<'py, PyAny>, Option<u32>);

fn key_values(metadata: Vec<PyKeyValue<'_>>) -> PyResult<Vec<KeyValue>> {
    (metadata.into_iter())
        .map(|(key, ty, value, element)| {
            Ok(KeyValue::new(
                gguf_string(&key)?,
                py_to_value(ty, &value, element)?,
            ))
        })
        .collect()
}

/// An open GGUF file: its header decoded, its bytes mapped (or held, or, for a URL, only the
/// header's).
#[pyclass(frozen, module = "ggufrw._native")]
struct File {
    gguf: Gguf<Content>,
    path: Option<String>,
    /// The file's length (a remote file's as the server says; its bytes stop at the data).
    len: u64,
}

impl File {
    fn name(&self) -> &Path {
        Path::new(self.path.as_deref().unwrap_or("<bytes>"))
    }

    fn fail(&self, py: Python<'_>, e: Error) -> PyErr {
        match &self.path {
            Some(_) => py_err(py, e.in_file(self.name())),
            None => py_err(py, e),
        }
    }

    fn width(&self) -> u64 {
        match self.gguf.header().ctx().width() {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }
}

#[pymethods]
impl File {
    /// Memory-maps and decodes the file at `path`.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<File> {
        let name = path.display().to_string();
        let gguf = py
            .detach(|| {
                let map = ggufrw::view::map(&path)?;
                Gguf::from_bytes(Content::Map(map)).map_err(|e| e.in_file(&path))
            })
            .map_err(|e| py_err(py, e))?;
        let len = gguf.bytes().len() as u64;
        Ok(File {
            gguf,
            path: Some(name),
            len,
        })
    }

    /// Decodes a file held in memory.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<File> {
        let bytes = data.as_bytes().to_vec();
        let len = bytes.len() as u64;
        let gguf = py
            .detach(|| Gguf::from_bytes(Content::Bytes(bytes)))
            .map_err(|e| py_err(py, e))?;
        Ok(File {
            gguf,
            path: None,
            len,
        })
    }

    /// Fetches and decodes the header of the file at an http(s) URL (range requests; the
    /// tensor data is not fetched).
    #[staticmethod]
    fn open_url(py: Python<'_>, url: String) -> PyResult<File> {
        let options = ggufrw::remote::Options::from_env();
        let remote = py
            .detach(|| ggufrw::remote::open_as::<Content>(&url, &options))
            .map_err(|e| py_err(py, e))?;
        Ok(File {
            gguf: remote.file,
            path: Some(url),
            len: remote.len,
        })
    }

    /// Format version.
    #[getter]
    fn version(&self) -> u32 {
        self.gguf.header().version
    }

    /// `'little'` or `'big'`.
    #[getter]
    fn byte_order(&self) -> &'static str {
        byte_order_name(self.gguf.header().byte_order)
    }

    /// The data alignment in force.
    #[getter]
    fn alignment(&self) -> u32 {
        self.gguf.layout().alignment
    }

    /// Where the data section starts.
    #[getter]
    fn data_offset(&self) -> u64 {
        self.gguf.layout().data_offset
    }

    /// Bytes of the file.
    #[getter]
    fn size(&self) -> u64 {
        self.len
    }

    /// The path or URL it was opened from.
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// `(key, value_type, value, element_type)` of each pair, in file order.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = (self.gguf.header().metadata.iter())
            .map(|kv| {
                let element = match &kv.value {
                    Value::Array(a) => Some(a.values.element_type() as u32),
                    _ => None,
                };
                PyTuple::new(
                    py,
                    [
                        text_to_py(py, kv.key.as_bytes()),
                        (kv.value.value_type() as u32).into_pyobject(py)?.into_any(),
                        value_to_py(py, &kv.value)?,
                        element.into_pyobject(py)?.into_any(),
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// `(kv_offset, key_len, value_type, element_type, count)` of each pair: where its bytes
    /// lie.
    fn kv_layout(&self) -> Vec<KvPlace> {
        let layout = self.gguf.layout();
        (self.gguf.header().metadata.iter().enumerate())
            .map(|(i, kv)| {
                let (element, count) = match &kv.value {
                    Value::Array(a) => (
                        Some(a.values.element_type() as u32),
                        Some(a.values.len() as u64),
                    ),
                    _ => (None, None),
                };
                let ty = kv.value.value_type() as u32;
                (
                    layout.kv_offsets[i],
                    kv.key.as_bytes().len() as u64,
                    ty,
                    element,
                    count,
                )
            })
            .collect()
    }

    /// For the string array of pair `kv_index`: the offset of each element's length field, as
    /// native-endian u64s.
    fn string_offsets<'py>(
        &self,
        py: Python<'py>,
        kv_index: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let header = self.gguf.header();
        let kv = (header.metadata.get(kv_index))
            .ok_or_else(|| PyValueError::new_err(format!("no metadata pair {kv_index}")))?;
        let Value::Array(Array {
            values: ArrayValues::String(strings),
        }) = &kv.value
        else {
            return Err(PyValueError::new_err(format!(
                "metadata pair {kv_index} is not an array of strings"
            )));
        };
        let width = self.width();
        // The value: its type (4), the element type (4), the count, then the strings.
        let mut at = self.gguf.layout().kv_value_offsets[kv_index] + 8 + width;
        let mut out = Vec::with_capacity(strings.len() * 8);
        for s in strings.iter() {
            out.extend_from_slice(&at.to_ne_bytes());
            at += width + s.len() as u64;
        }
        Ok(PyBytes::new(py, &out))
    }

    /// `(name, info_offset, dims, type_id, rel_offset, abs_offset, nbytes)` of each tensor.
    #[allow(clippy::type_complexity)]
    fn tensors<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(Bound<'py, PyAny>, u64, Vec<u64>, u32, u64, u64, Option<u64>)>> {
        let layout = self.gguf.layout();
        Ok((self.gguf.tensors())
            .map(|t| {
                (
                    text_to_py(py, t.info.name.as_bytes()),
                    layout.tensor_info_offsets[t.index],
                    t.info.dimensions.clone(),
                    t.info.ggml_type,
                    t.info.offset,
                    t.file_offset,
                    t.byte_size().ok(),
                )
            })
            .collect())
    }

    /// `(start, length)` of tensor `index`'s data in the file, refused when the bytes are not
    /// all there.
    fn tensor_range(&self, py: Python<'_>, index: usize) -> PyResult<(u64, u64)> {
        let data = self.gguf.tensor_data(index).map_err(|e| self.fail(py, e))?;
        let start = data.as_ptr() as usize - self.gguf.bytes().as_ptr() as usize;
        Ok((start as u64, data.len() as u64))
    }

    /// Tensor `index`'s bytes, copied.
    fn tensor_bytes<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.gguf.tensor_data(index).map_err(|e| self.fail(py, e))?;
        Ok(PyBytes::new(py, data))
    }

    /// Tensor `index` as float32 (native byte order), on `threads` threads (0: all).
    #[pyo3(signature = (index, threads = 0))]
    fn dequantize<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        threads: usize,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        let tensor = (self.gguf.tensors().nth(index)).ok_or_else(|| {
            self.fail(
                py,
                Error::NoTensor {
                    index,
                    count: self.gguf.header().tensor_infos.len(),
                },
            )
        })?;
        let ty = GgmlType::from_id(tensor.info.ggml_type).ok_or_else(|| {
            self.fail(
                py,
                Error::Tensor {
                    index,
                    name: tensor.name().to_string(),
                    source: ggufrw::TensorError::UnknownType(tensor.info.ggml_type),
                },
            )
        })?;
        let data = self.gguf.tensor_data(index).map_err(|e| self.fail(py, e))?;
        let order = self.gguf.header().byte_order;
        dequantize_bytes(py, ty, data, order, threads, |e| {
            self.fail(py, Error::Quant(e))
        })
    }

    /// Findings of `profile` (`'ggml'` or `'spec'`): `(severity, category, path, offset,
    /// message)`.
    #[pyo3(signature = (profile = "ggml"))]
    fn check(&self, profile: &str) -> PyResult<Vec<PyFinding>> {
        let profile: Profile = profile
            .parse()
            .map_err(|_| PyValueError::new_err(format!("profile {profile:?}: 'ggml' or 'spec'")))?;
        let findings = validate_header(self.gguf.header(), self.gguf.layout(), self.len, profile);
        Ok((findings.into_iter())
            .map(|f| {
                (
                    f.severity.to_string(),
                    f.category.to_string(),
                    f.path,
                    f.offset,
                    f.message,
                )
            })
            .collect())
    }

    /// The file written back (identical bytes for a file that decoded; the header alone for
    /// a URL).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.gguf.to_bytes())
            .map_err(|e| self.fail(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// Dequantizes into a new bytearray with the interpreter released: the buffer is not visible
/// to Python until it is returned.
fn dequantize_bytes<'py>(
    py: Python<'py>,
    ty: GgmlType,
    data: &[u8],
    order: ByteOrder,
    threads: usize,
    fail: impl Fn(QuantError) -> PyErr,
) -> PyResult<Bound<'py, PyByteArray>> {
    let (size, block) = (ty.type_size() as usize, ty.block_size() as usize);
    let elements = data.len() / size.max(1) * block;
    let len = (elements.checked_mul(4))
        .ok_or_else(|| PyValueError::new_err("the output would pass the address space"))?;
    let out = fresh_bytearray(py, len)?;
    // SAFETY: the bytearray was made above and no Python code has a reference to it yet, so
    // nothing can resize, read or free its buffer while this slice lives.
    let buf = unsafe { out.as_bytes_mut() };
    py.detach(|| {
        // A bytearray's buffer has no alignment promise: dequantize into an f32 buffer where
        // it is not 4-aligned.
        match bytemuck_f32(buf) {
            Some(floats) => quant::dequantize_threads(ty, data, order, floats, threads),
            None => {
                let mut floats = vec![0f32; elements];
                quant::dequantize_threads(ty, data, order, &mut floats, threads)?;
                for (dst, src) in buf.chunks_exact_mut(4).zip(&floats) {
                    dst.copy_from_slice(&src.to_ne_bytes());
                }
                Ok(())
            }
        }
    })
    .map_err(fail)?;
    Ok(out)
}

/// A zeroed bytearray of `len` bytes, its pages huge where the system allows: a dequantized
/// tensor is often hundreds of megabytes, and faulting it in 4 KiB pages costs more than
/// dequantizing it (numpy asks for huge pages for its large arrays likewise).
fn fresh_bytearray(py: Python<'_>, len: usize) -> PyResult<Bound<'_, PyByteArray>> {
    let size = ffi::Py_ssize_t::try_from(len)
        .map_err(|_| PyValueError::new_err("the output would pass the address space"))?;
    // SAFETY: with a null source, PyByteArray_FromStringAndSize allocates `len` bytes (plus
    // the terminating NUL) and leaves them uninitialised; they are zeroed through the raw
    // pointer before any reference to them is made, and the object is owned by `obj`.
    unsafe {
        let raw = ffi::PyByteArray_FromStringAndSize(std::ptr::null(), size);
        let obj = Bound::from_owned_ptr_or_err(py, raw)?.cast_into_unchecked::<PyByteArray>();
        let ptr = ffi::PyByteArray_AsString(obj.as_ptr()).cast::<u8>();
        advise_huge_pages(ptr, len);
        std::ptr::write_bytes(ptr, 0, len);
        Ok(obj)
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 2 * HUGE {
        return;
    }
    // Whole pages inside the buffer only: advice about memory the buffer does not own could
    // touch a neighbour's.
    let page = 4096;
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize + len) / page * page;
    if end > start {
        // SAFETY: madvise(MADV_HUGEPAGE) changes no contents and no protection; the range
        // lies inside the buffer. A refusal (no THP) leaves the pages as they were.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

/// `bytes` as f32s when they are 4-aligned.
fn bytemuck_f32(bytes: &mut [u8]) -> Option<&mut [f32]> {
    bytemuck::try_cast_slice_mut(bytes).ok()
}

/// Blocks of `type_id` as float32 (native byte order).
#[pyfunction]
#[pyo3(signature = (type_id, data, byte_order = "little", threads = 0))]
fn dequantize<'py>(
    py: Python<'py>,
    type_id: u32,
    data: &Bound<'py, PyBytes>,
    byte_order: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyByteArray>> {
    let ty = ggml_type(type_id)?;
    let order = parse_byte_order(byte_order)?;
    dequantize_bytes(py, ty, data.as_bytes(), order, threads, |e| {
        quant_err(py, e)
    })
}

/// Rows of `n_per_row` float32 (native byte order) quantized to `type_id`, as ggml's
/// `ggml_quantize_chunk` does (with `imatrix`: `n_per_row` float32 importance weights).
#[pyfunction]
#[pyo3(signature = (type_id, x, n_per_row, imatrix = None, threads = 0))]
fn quantize<'py>(
    py: Python<'py>,
    type_id: u32,
    x: &Bound<'py, PyBytes>,
    n_per_row: usize,
    imatrix: Option<&Bound<'py, PyBytes>>,
    threads: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let ty = ggml_type(type_id)?;
    let floats = |b: &[u8]| -> PyResult<Vec<f32>> {
        if b.len() % 4 != 0 {
            return Err(PyValueError::new_err(format!(
                "{} bytes are not whole float32s",
                b.len()
            )));
        }
        Ok((b.chunks_exact(4))
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    };
    let x = floats(x.as_bytes())?;
    let weights = imatrix.map(|w| floats(w.as_bytes())).transpose()?;
    let block = ty.block_size() as usize;
    if n_per_row == 0 || x.len() % n_per_row != 0 || n_per_row % block != 0 {
        return Err(PyValueError::new_err(format!(
            "{} values are not whole rows of {n_per_row}, or {n_per_row} is not a multiple of \
             {}'s block of {block}",
            x.len(),
            ty.name()
        )));
    }
    let mut out = vec![0u8; x.len() / block * ty.type_size() as usize];
    py.detach(|| {
        quant::quantize_into_weighted_threads(
            ty,
            &x,
            n_per_row,
            weights.as_deref(),
            &mut out,
            threads,
        )
    })
    .map_err(|e| quant_err(py, e))?;
    Ok(PyBytes::new(py, &out))
}

/// `(id, name, block_size, type_size, dequantizes, quantizes)` of every ggml type ggufrw knows.
#[pyfunction]
fn types() -> Vec<(u32, &'static str, u64, u64, bool, bool)> {
    use strum::IntoEnumIterator;
    struct Abilities;
    impl BlockVisitor for Abilities {
        type Out = (bool, bool);
        fn visit<B: Codec>(self) -> (bool, bool) {
            (B::DEQUANTIZES, B::REFUSAL.is_none())
        }
    }
    GgmlType::iter()
        .map(|t| {
            let (dequantizes, quantizes) = t.visit(Abilities);
            (
                t.id(),
                t.name(),
                t.block_size(),
                t.type_size(),
                dequantizes,
                quantizes,
            )
        })
        .collect()
}

/// The header of a new file (up to the data section, its padding included) and each
/// tensor's offset in the data section, laid out as ggml and gguf-py lay them out.
#[pyfunction]
#[pyo3(signature = (version, byte_order, metadata, tensors))]
fn encode_header<'py>(
    py: Python<'py>,
    version: u32,
    byte_order: &str,
    metadata: Vec<PyKeyValue<'py>>,
    tensors: Vec<(Bound<'py, PyAny>, Vec<u64>, u32, u64)>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<u64>)> {
    let mut header = Header::empty(version, parse_byte_order(byte_order)?);
    header.metadata = key_values(metadata)?;
    let alignment = u64::from(header.alignment());
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(tensors.len());
    for (index, (name, dims, ty, nbytes)) in tensors.into_iter().enumerate() {
        let name = gguf_string(&name)?;
        // A known type's data must be the size its shape takes (gguf-py's own writer does
        // not check; a file with the wrong size is one ggml refuses).
        if let Some(known) = GgmlType::from_id(ty) {
            let needed = known.byte_size(&dims).map_err(|e| {
                py_err(
                    py,
                    Error::Tensor {
                        index,
                        name: name.to_string(),
                        source: e.into(),
                    },
                )
            })?;
            if needed != nbytes {
                return Err(py_err(
                    py,
                    Error::Tensor {
                        index,
                        name: name.to_string(),
                        source: ggufrw::TensorError::DataLength {
                            ty: known,
                            dimensions: dims,
                            given: nbytes,
                            needed,
                        },
                    },
                ));
            }
        }
        offsets.push(offset);
        header.tensor_infos.push(ggufrw::TensorInfo {
            name,
            dimensions: dims,
            ggml_type: ty,
            offset,
        });
        offset = (offset.checked_add(nbytes))
            .and_then(|end| end.checked_next_multiple_of(alignment))
            .ok_or_else(|| PyValueError::new_err("tensor data past 2^64 bytes"))?;
    }
    let err = |e: ggufrw::EncodeError| py_err(py, Error::Encode(e));
    header.pad().map_err(err)?;
    let bytes = header.encode(true).map_err(err)?;
    Ok((PyBytes::new(py, &bytes), offsets))
}

/// Edits `path` into `output` (through a temporary file), or in place when `output` is None.
#[pyfunction]
#[pyo3(signature = (path, output, set, delete, rename_tensors, delete_tensors, force = false))]
#[allow(clippy::too_many_arguments)]
fn edit(
    py: Python<'_>,
    path: PathBuf,
    output: Option<PathBuf>,
    set: Vec<PyKeyValue<'_>>,
    delete: Vec<Bound<'_, PyAny>>,
    rename_tensors: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
    delete_tensors: Vec<Bound<'_, PyAny>>,
    force: bool,
) -> PyResult<()> {
    let edit = Edit {
        set: (key_values(set)?.into_iter())
            .map(|kv| (kv.key, kv.value))
            .collect(),
        delete: delete.iter().map(gguf_string).collect::<PyResult<_>>()?,
        rename_tensors: (rename_tensors.iter())
            .map(|(a, b)| Ok((gguf_string(a)?, gguf_string(b)?)))
            .collect::<PyResult<_>>()?,
        delete_tensors: delete_tensors
            .iter()
            .map(gguf_string)
            .collect::<PyResult<_>>()?,
        force,
    };
    py.detach(|| match &output {
        Some(out) => edit_file(&path, out, &edit),
        None => edit_in_place(&path, &edit),
    })
    .map(|_| ())
    .map_err(|e| py_err(py, e))
}

/// Splits `path` into shards named as llama.cpp's gguf-split names them:
/// `(path, tensors, data_bytes)` of each.
#[pyfunction]
#[pyo3(signature = (path, prefix, max_tensors = None, max_size = None, no_tensor_first = false, dry_run = false))]
fn split_file(
    py: Python<'_>,
    path: PathBuf,
    prefix: PathBuf,
    max_tensors: Option<usize>,
    max_size: Option<u64>,
    no_tensor_first: bool,
    dry_run: bool,
) -> PyResult<Vec<(String, usize, u64)>> {
    let by = match (max_tensors, max_size) {
        (Some(n), None) => SplitBy::Tensors(n),
        (None, Some(b)) => SplitBy::Bytes(b),
        (None, None) => SplitBy::Tensors(128),
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err("max_tensors or max_size, not both"))
        }
    };
    let shards = py
        .detach(|| split::split(&path, &prefix, by, no_tensor_first, dry_run, &()))
        .map_err(|e| py_err(py, e))?;
    Ok((shards.into_iter())
        .map(|s| (s.path.display().to_string(), s.tensors, s.data_bytes))
        .collect())
}

/// Merges the shards that `first` starts into `output`.
#[pyfunction]
fn merge(py: Python<'_>, first: PathBuf, output: PathBuf) -> PyResult<()> {
    py.detach(|| split::merge(&first, &output, &()))
        .map(|_| ())
        .map_err(|e| py_err(py, e))
}

/// The lines llama-gguf-hash prints for `path` with these hash kinds (`xxh64`, `xxh3`,
/// `sha1`, `sha256`, `uuid`).
#[pyfunction]
#[pyo3(signature = (path, kinds, per_tensor = true))]
fn hash(
    py: Python<'_>,
    path: PathBuf,
    kinds: Vec<String>,
    per_tensor: bool,
) -> PyResult<Vec<String>> {
    let kinds = (kinds.iter())
        .map(|k| {
            HashKind::from_name(k).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "hash kind {k:?} is not one of xxh64, xxh3, sha1, sha256, uuid"
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let display = path.display().to_string();
    let lines = py
        .detach(|| hash_file(&path, &display, &kinds, per_tensor))
        .map_err(|e| py_err(py, e))?;
    Ok(lines.iter().map(ToString::to_string).collect())
}

/// The converter's error as `ggufrw.Error`, with `kind` (`io`, `field`, `unsupported` or the
/// writer's own), `file` and, for a field, `path` (the field's dotted name).
fn hf_err(py: Python<'_>, e: ggufrw_hf::Error) -> PyErr {
    use ggufrw_hf::Error as E;
    let e = match e {
        E::Output(inner) => return py_err(py, inner),
        other => other,
    };
    let (kind, file, field) = match &e {
        E::Io { path, .. } => ("io", Some(path.display().to_string()), None),
        E::Field { path, field, .. } => (
            "field",
            Some(path.display().to_string()),
            Some(field.clone()),
        ),
        _ => ("unsupported", None, None),
    };
    let err = GgufError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("kind", kind);
    let _ = value.setattr("path", field);
    let _ = value.setattr("offset", None::<u64>);
    let _ = value.setattr("file", file);
    err
}

/// Converts a Hugging Face checkpoint folder as `convert_hf_to_gguf.py` does (the options are
/// its own): the files written (or, with `dry_run`, that would be) and the parameter count.
#[pyfunction]
#[pyo3(signature = (model_dir, outfile = None, outtype = "f16", vocab_only = false, bigendian = false,
    model_name = None, metadata = None, split_max_tensors = 0, split_max_size = 0,
    no_tensor_first_split = false, dry_run = false, tokenizer_pre = None, threads = 0,
    quantize = None, via = "auto", quantize_options = Vec::new(), fp8_as_q8 = false))]
#[allow(clippy::too_many_arguments)]
fn convert_hf(
    py: Python<'_>,
    model_dir: PathBuf,
    outfile: Option<PathBuf>,
    outtype: Option<&str>,
    vocab_only: bool,
    bigendian: bool,
    model_name: Option<String>,
    metadata: Option<PathBuf>,
    split_max_tensors: u64,
    split_max_size: u64,
    no_tensor_first_split: bool,
    dry_run: bool,
    tokenizer_pre: Option<String>,
    threads: usize,
    quantize: Option<String>,
    via: &str,
    quantize_options: Vec<String>,
    fp8_as_q8: bool,
) -> PyResult<(Vec<String>, u64)> {
    // With a preset, the conversion is to `via` and the file's type is the preset's.
    let converted = match (&quantize, outtype) {
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "outtype is the quantized file's own with quantize; via sets the type converted to first",
            ))
        }
        (Some(_), None) => via,
        (None, outtype) => outtype.unwrap_or("f16"),
    };
    let outtype = ggufrw_hf::OutType::parse(converted).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{} {converted:?} is not one of f32, f16, bf16, q8_0, tq1_0, tq2_0, auto",
            if quantize.is_some() { "via" } else { "outtype" }
        ))
    })?;
    let mut options = ggufrw_hf::Options {
        outfile,
        outtype,
        vocab_only,
        bigendian,
        model_name,
        metadata,
        split_max_tensors,
        split_max_size,
        no_tensor_first_split,
        fp8_as_q8,
        dry_run,
        tokenizer_pre,
        threads,
        ..ggufrw_hf::Options::default()
    };
    let report = match quantize {
        None => py.detach(|| ggufrw_hf::convert(&model_dir, &options)),
        Some(preset) => {
            let (plan_options, mut run) =
                CommandLine::options_for(&quantize_options, &preset, &|pattern| {
                    let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
                    Ok(Box::new(move |name: &str| re.is_match(name)))
                })
                .map_err(PyValueError::new_err)?;
            run.threads = threads;
            options.name_type = Some(preset);
            py.detach(|| {
                if options.dry_run {
                    ggufrw_hf::convert(&model_dir, &options)
                } else {
                    (ggufrw_hf::convert_quantized(&model_dir, &options, &plan_options, &run, &()))
                        .map(|(conversion, _)| conversion)
                }
            })
        }
    }
    .map_err(|e| hf_err(py, e))?;
    Ok((
        report
            .outputs
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        report.parameters,
    ))
}

/// Converts a PEFT LoRA adapter folder as `convert_lora_to_gguf.py` does (the options are its
/// own): the file written (or, with `dry_run`, that would be), its tensor count, and the
/// warnings about what the reference loses silently.
#[pyfunction]
#[pyo3(signature = (lora_dir, base = None, outfile = None, outtype = "f32", bigendian = false,
    dry_run = false, rslora_scale = false, threads = 0))]
#[allow(clippy::too_many_arguments)]
fn convert_lora(
    py: Python<'_>,
    lora_dir: PathBuf,
    base: Option<PathBuf>,
    outfile: Option<PathBuf>,
    outtype: &str,
    bigendian: bool,
    dry_run: bool,
    rslora_scale: bool,
    threads: usize,
) -> PyResult<(String, usize, Vec<String>)> {
    let outtype = ggufrw_hf::OutType::parse(outtype)
        .filter(|t| {
            use ggufrw_hf::OutType::*;
            matches!(t, F32 | F16 | BF16 | Q8_0 | Auto)
        })
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "outtype {outtype:?} is not one of f32, f16, bf16, q8_0, auto"
            ))
        })?;
    let options = ggufrw_hf::LoraOptions {
        base,
        outfile,
        outtype,
        bigendian,
        dry_run,
        rslora_scale,
        threads,
    };
    let report = py
        .detach(|| ggufrw_hf::convert_lora(&lora_dir, &options, &()))
        .map_err(|e| hf_err(py, e))?;
    Ok((
        report.outputs[0].display().to_string(),
        report.tensors.len(),
        report.warnings,
    ))
}

/// Merges LoRA adapters into their base as `llama-export-lora` does: `adapters` are
/// `(path, scale)` pairs; the merged and written tensor counts and the adapter tensors no base
/// tensor takes.
#[pyfunction]
#[pyo3(signature = (base, adapters, out, threads = 0))]
fn export_lora(
    py: Python<'_>,
    base: PathBuf,
    adapters: Vec<(PathBuf, f32)>,
    out: PathBuf,
    threads: usize,
) -> PyResult<(usize, usize, Vec<String>)> {
    let adapters: Vec<ggufrw::lora::Adapter> = adapters
        .into_iter()
        .map(|(path, scale)| ggufrw::lora::Adapter { path, scale })
        .collect();
    let report = py
        .detach(|| ggufrw::lora::export_lora(&base, &adapters, &out, threads, &()))
        .map_err(|e| match e {
            ggufrw::lora::LoraError::Gguf(inner) => py_err(py, inner),
            other => GgufError::new_err(other.to_string()),
        })?;
    Ok((report.merged, report.tensors, report.ignored))
}

/// Exports a GGUF model (the first file of a split one) to a Hugging Face folder, as
/// `ggufrw export-hf` does: the files written, relative to `out`, and the tensor count.
#[pyfunction]
#[pyo3(signature = (model, out, dtype = "auto", max_shard_size = 5_000_000_000, vocab_only = false, threads = 0))]
fn export_hf(
    py: Python<'_>,
    model: PathBuf,
    out: PathBuf,
    dtype: &str,
    max_shard_size: u64,
    vocab_only: bool,
    threads: usize,
) -> PyResult<(Vec<String>, usize)> {
    let dtype = ggufrw_hf::Dtype::parse(dtype).ok_or_else(|| {
        PyValueError::new_err(format!(
            "dtype {dtype:?} is not one of f32, f16, bf16, auto"
        ))
    })?;
    let options = ggufrw_hf::ExportOptions {
        dtype,
        max_shard_size,
        vocab_only,
        threads,
    };
    let report = py
        .detach(|| ggufrw_hf::export_hf(&model, &out, &options))
        .map_err(|e| hf_err(py, e))?;
    Ok((
        report
            .files
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        report.tensors,
    ))
}

/// The text of a value as ggufrw's own tools print strings (`\xNN` for bytes that are not
/// UTF-8).
#[pyfunction]
fn escape(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(Text::from_bytes(text_bytes(value)?).to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<GgufError>())?;
    m.add("DecodeError", py.get_type::<PyDecodeError>())?;
    m.add_class::<File>()?;
    m.add_function(wrap_pyfunction!(dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(types, m)?)?;
    m.add_function(wrap_pyfunction!(encode_header, m)?)?;
    m.add_function(wrap_pyfunction!(edit, m)?)?;
    m.add_function(wrap_pyfunction!(split_file, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(hash, m)?)?;
    m.add_function(wrap_pyfunction!(escape, m)?)?;
    m.add_function(wrap_pyfunction!(convert_hf, m)?)?;
    m.add_function(wrap_pyfunction!(convert_lora, m)?)?;
    m.add_function(wrap_pyfunction!(export_lora, m)?)?;
    m.add_function(wrap_pyfunction!(export_hf, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
