//! The header as JSON that holds everything needed to write it again byte for byte, and the
//! file built back from such JSON and the data of a file.
//!
//! Shape (version 1, `"ggufrw_lossless": 1`):
//!
//! ```json
//! {"ggufrw_lossless": 1, "magic": "GGUF", "version": 3, "byte_order": "little",
//!  "metadata": [{"key": "general.alignment", "type": "uint32", "value": 32},
//!               {"key": "x", "type": "float32", "value": "nan:0x7fc00001"},
//!               {"key": "l", "type": "array", "element_type": "int8", "value": [1, -2]}],
//!  "tensors": [{"name": "w", "type": "q4_K", "shape": [256, 2], "offset": 0}],
//!  "padding": {"len": 20}}
//! ```
//!
//! Metadata in file order, duplicates kept; integers exact; a finite float as the shortest
//! decimal that reads back to its bits (`-0.0` included), the infinities as `"inf"`, `"-inf"`,
//! the quiet NaN as `"nan"`, any other NaN as `"nan:0x…"` with its bits; an array inside an
//! array as `{"element_type", "value"}`; a tensor of an unknown type as `"type_id": N`;
//! padding as its length, or `"hex"` when it holds non-zero bytes.

use crate::dump::{bool_from_json, metadata_json, text_from_json, text_json};
pub use crate::error::LosslessError;
use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::fsutil::{write_atomic_file, Mode, Progress};
use crate::quant::GgmlType;
use crate::write::{Builder, Source};
use ggufrw_schema::{
    Array, ArrayValues, ByteOrder, GatedFields, GgufString, Header, KeyValue, Magic, Number,
    NumberKind, Padding, StrList, TensorInfo, Value, ValueType, ValueTypeVisitor, Wide,
};
use serde_json::{json, Value as Json};
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

/// The version of the shape written and read.
pub const LOSSLESS_VERSION: u64 = 1;

/// A number as lossless JSON: as `dump --json` writes it, but a float's NaN as `"nan"` (the
/// quiet one) or `"nan:0xBITS"`, and its infinities as `"inf"` and `"-inf"`.
fn number_json<T: Number>(x: T) -> Json {
    match x.widen() {
        Wide::Float(_) if x.is_nan() => {
            if Some(x.bits()) == T::quiet_nan().map(T::bits) {
                json!("nan")
            } else {
                json!(format!("nan:{:#x}", x.bits()))
            }
        }
        Wide::Float(f) if f.is_infinite() => json!(crate::dump::non_finite_text(f)),
        _ => crate::dump::value_json(&x.into_value()),
    }
}

/// Values as lossless JSON: `dump --json`'s, with the numbers `number_json` writes.
fn lossless_value(value: &Value) -> Json {
    struct Scalar<'a>(&'a Value);
    impl ValueTypeVisitor for Scalar<'_> {
        type Out = Json;
        fn number<T: Number>(self) -> Json {
            T::of_value(self.0).map_or(Json::Null, number_json)
        }
        fn string(self) -> Json {
            crate::dump::value_json(self.0)
        }
        fn array(self) -> Json {
            match self.0 {
                Value::Array(a) => array_json(&a.values),
                other => crate::dump::value_json(other),
            }
        }
    }
    value.value_type().visit(Scalar(value))
}

/// An array's elements as lossless JSON.
fn array_json(values: &ArrayValues) -> Json {
    struct Elements<'a>(&'a ArrayValues);
    impl ValueTypeVisitor for Elements<'_> {
        type Out = Json;
        fn number<T: Number>(self) -> Json {
            T::of_array(self.0).map_or(Json::Null, |v| v.iter().map(|x| number_json(*x)).collect())
        }
        fn string(self) -> Json {
            crate::dump::value_json(&Value::Array(Array::new(self.0.clone())))
        }
        fn array(self) -> Json {
            match self.0 {
                ArrayValues::Array(v) => (v.iter())
                    .map(|a| json!({"element_type": a.values.element_type().name(), "value": array_json(&a.values)}))
                    .collect(),
                _ => Json::Null,
            }
        }
    }
    values.element_type().visit(Elements(values))
}

/// The header of `file` as lossless JSON.
pub fn to_json<B: AsRef<[u8]>>(file: &Gguf<B>) -> Json {
    let h = file.header();
    let mut metadata = metadata_json(&h.metadata);
    if let Json::Array(list) = &mut metadata {
        for (entry, kv) in list.iter_mut().zip(&h.metadata) {
            entry["value"] = lossless_value(&kv.value);
        }
    }
    let tensors: Vec<Json> = (h.tensor_infos.iter())
        .map(|t| {
            let mut entry =
                json!({"name": text_json(t.name.text_ref()), "shape": t.dimensions, "offset": t.offset});
            match GgmlType::from_id(t.ggml_type) {
                Some(ty) => entry["type"] = json!(ty.name()),
                None => entry["type_id"] = json!(t.ggml_type),
            }
            entry
        })
        .collect();
    let padding = match h.padding.nonzero_bytes() {
        Some(bytes) => json!({"hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()}),
        None => json!({"len": h.padding.len()}),
    };
    let mut out = json!({
        "ggufrw_lossless": LOSSLESS_VERSION,
        "magic": match h.magic { Magic::Gguf => "GGUF", Magic::Fugg => "FUGG" },
        "version": h.version,
        "byte_order": h.byte_order.name(),
        "metadata": metadata,
        "tensors": tensors,
        "padding": padding,
    });
    for (field, value) in h.gated.values() {
        out[field.name] = json!(value);
    }
    out
}

fn bad(what: impl std::fmt::Display) -> Error {
    LosslessError::Malformed(what.to_string()).into()
}

/// A float from lossless JSON.
fn float_from(j: &Json) -> Result<Wide> {
    let special = crate::dump::non_finite_from_text;
    match j {
        Json::Number(n) => n
            .as_f64()
            .map(Wide::Float)
            .ok_or_else(|| bad(format!("{n} is not a float"))),
        Json::String(s) if special(s).is_some() => Ok(Wide::Float(special(s).unwrap_or(f64::NAN))),
        Json::String(s) => {
            let bits = (s.strip_prefix("nan:0x"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("{s:?} is not a float")))?;
            // Bits survive only as bits: the caller narrows them exactly.
            Ok(Wide::Unsigned(bits))
        }
        other => Err(bad(format!("{other} is not a float"))),
    }
}

/// A number or bool of type `T` from lossless JSON, exactly.
fn number_from<T: Number>(j: &Json) -> Result<T> {
    let wide = match (T::KIND, j) {
        (NumberKind::Bool, j) => {
            Wide::Bool(bool_from_json(j).ok_or_else(|| bad(format!("{j} is not a bool")))?)
        }
        (NumberKind::Unsigned, Json::Number(n)) => Wide::Unsigned(
            n.as_u64()
                .ok_or_else(|| bad(format!("{n} is not a {}", T::TYPE.name())))?,
        ),
        (NumberKind::Signed, Json::Number(n)) => Wide::Signed(
            n.as_i64()
                .ok_or_else(|| bad(format!("{n} is not a {}", T::TYPE.name())))?,
        ),
        (NumberKind::Float, j) => match float_from(j)? {
            // NaN bits given as bits: decoded from their bytes, which must be the type's.
            Wide::Unsigned(bits) => {
                let bytes = bits.to_le_bytes();
                let (own, rest) = bytes.split_at(T::SIZE.min(8));
                let value = T::decode(own, binrw::Endian::Little)
                    .filter(|x| x.is_nan() && rest.iter().all(|&b| b == 0));
                return value.ok_or_else(|| bad(format!("{j} is not a NaN of {}", T::TYPE.name())));
            }
            wide => wide,
        },
        (_, other) => return Err(bad(format!("{other} is not a {}", T::TYPE.name()))),
    };
    T::narrow(wide).ok_or_else(|| bad(format!("{j} does not fit {}", T::TYPE.name())))
}

/// Values of a type from lossless JSON.
struct FromJson<'a>(&'a Json);

impl ValueTypeVisitor for FromJson<'_> {
    type Out = Result<Value>;
    fn number<T: Number>(self) -> Self::Out {
        number_from::<T>(self.0).map(T::into_value)
    }
    fn string(self) -> Self::Out {
        text_from_json(self.0)
            .map(|t| Value::String(t.into()))
            .ok_or_else(|| bad(format!("{} is not a string", self.0)))
    }
    fn array(self) -> Self::Out {
        Err(bad("arrays need an element_type"))
    }
}

/// An array's elements of `ty` from a JSON list.
fn array_from(ty: ValueType, list: &Json) -> Result<ArrayValues> {
    struct Elements<'a>(&'a [Json]);
    impl ValueTypeVisitor for Elements<'_> {
        type Out = Result<ArrayValues>;
        fn number<T: Number>(self) -> Self::Out {
            let v = self
                .0
                .iter()
                .map(number_from::<T>)
                .collect::<Result<Vec<T>>>()?;
            Ok(T::into_array(v))
        }
        fn string(self) -> Self::Out {
            let mut strings = StrList::with_capacity(self.0.len(), 0);
            for s in self.0 {
                let text = text_from_json(s).ok_or_else(|| bad(format!("{s} is not a string")))?;
                strings.push_bytes(text.as_bytes());
            }
            Ok(ArrayValues::String(strings))
        }
        fn array(self) -> Self::Out {
            let arrays = (self.0.iter())
                .map(|inner| {
                    let ty = value_type(&inner["element_type"])?;
                    array_from(ty, &inner["value"]).map(Array::new)
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(ArrayValues::Array(arrays))
        }
    }
    let items = list
        .as_array()
        .ok_or_else(|| bad(format!("{list} is not a list")))?;
    ty.visit(Elements(items))
}

fn value_type(j: &Json) -> Result<ValueType> {
    let name = j
        .as_str()
        .ok_or_else(|| bad(format!("{j} is not a type")))?;
    ValueType::from_str(name).map_err(|_| bad(format!("unknown type {name:?}")))
}

fn field<'a>(j: &'a Json, name: &str) -> Result<&'a Json> {
    j.get(name).ok_or_else(|| bad(format!("no {name:?}")))
}

fn u64_field(j: &Json, name: &str) -> Result<u64> {
    field(j, name)?
        .as_u64()
        .ok_or_else(|| bad(format!("{name:?} is not an integer")))
}

/// The header lossless JSON describes.
pub fn header_from_json(j: &Json) -> Result<Header> {
    if u64_field(j, "ggufrw_lossless")? != LOSSLESS_VERSION {
        return Err(bad(format!(
            "version {} of the shape; this reads {LOSSLESS_VERSION}",
            j["ggufrw_lossless"]
        )));
    }
    let byte_order = match field(j, "byte_order")?.as_str() {
        Some("little") => ByteOrder::Little,
        Some("big") => ByteOrder::Big,
        other => return Err(bad(format!("byte order {other:?}"))),
    };
    let version = u32::try_from(u64_field(j, "version")?).map_err(|_| bad("version"))?;
    let mut header = Header::empty(version, byte_order);
    header.magic = match field(j, "magic")?.as_str() {
        Some("GGUF") => Magic::Gguf,
        Some("FUGG") => Magic::Fugg,
        other => return Err(bad(format!("magic {other:?}"))),
    };
    for f in GatedFields::FIELDS.iter().filter(|f| version >= f.since) {
        let value = u64_field(j, f.name)?;
        header.gated.set(f.name, Some(value)).map_err(bad)?;
    }
    for kv in field(j, "metadata")?
        .as_array()
        .ok_or_else(|| bad("metadata is not a list"))?
    {
        let key = text_from_json(field(kv, "key")?).ok_or_else(|| bad("a key is not a string"))?;
        let ty = value_type(field(kv, "type")?)?;
        let raw = field(kv, "value")?;
        let value = match ty {
            ValueType::Array => {
                let element = value_type(field(kv, "element_type")?)?;
                Value::Array(Array::new(array_from(element, raw)?))
            }
            ty => ty.visit(FromJson(raw))?,
        };
        header.metadata.push(KeyValue::new(key, value));
    }
    for t in field(j, "tensors")?
        .as_array()
        .ok_or_else(|| bad("tensors is not a list"))?
    {
        let name = text_from_json(field(t, "name")?)
            .ok_or_else(|| bad("a tensor name is not a string"))?;
        let ggml_type = match (t.get("type"), t.get("type_id")) {
            (Some(Json::String(n)), _) => GgmlType::from_str(n)
                .map_err(|_| bad(format!("tensor type {n:?}")))?
                .id(),
            (_, Some(id)) => id
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad("type_id"))?,
            _ => return Err(bad(format!("tensor {name:?} has no type"))),
        };
        let dimensions = (field(t, "shape")?.as_array())
            .ok_or_else(|| bad("a shape is not a list"))?
            .iter()
            .map(|d| {
                d.as_u64()
                    .ok_or_else(|| bad("a dimension is not an integer"))
            })
            .collect::<Result<Vec<u64>>>()?;
        header.tensor_infos.push(TensorInfo {
            name: GgufString::from(name),
            dimensions,
            ggml_type,
            offset: u64_field(t, "offset")?,
        });
    }
    let padding = field(j, "padding")?;
    header.padding = match (padding.get("len"), padding.get("hex")) {
        (Some(len), _) => Padding::zeros(len.as_u64().ok_or_else(|| bad("padding len"))?),
        (_, Some(Json::String(hex))) => {
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16)
                        .map_err(|_| bad("padding hex"))
                })
                .collect::<Result<Vec<u8>>>()?;
            Padding::from_bytes(bytes)
        }
        _ => return Err(bad("padding needs len or hex")),
    };
    Ok(header)
}

/// How [`build`] laid the data out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Built {
    /// The tensor infos are `from`'s (names aside): its data section copied as it is.
    DataAsItWas,
    /// Tensors added, dropped, moved or reshaped: each one's data taken from `from` by name
    /// and laid out as ggml lays it out.
    LaidOutAgain,
}

/// Writes `output` from the lossless JSON `j` and the data of `from`: byte-identical to `from`
/// when `j` is `from`'s JSON unedited.
pub fn build(j: &Json, from: &Path, output: &Path, progress: &dyn Progress) -> Result<Built> {
    let mut header = header_from_json(j)?;
    let source = Gguf::open(from)?;
    let old = source.header();
    let handle = std::fs::File::open(from).map_err(|e| Error::from(e).in_file(from))?;
    let same_layout = header.tensor_infos.len() == old.tensor_infos.len()
        && (header.tensor_infos.iter().zip(&old.tensor_infos)).all(|(a, b)| {
            (a.offset, a.ggml_type, &a.dimensions) == (b.offset, b.ggml_type, &b.dimensions)
        });
    if same_layout && header.alignment() == old.alignment() {
        let data = source.data_section();
        let layout = header.layout()?;
        // The padding as given when the header ends where it did; else zeros to the alignment.
        if layout.tensor_infos_end != source.layout().tensor_infos_end
            || (!data.is_empty()
                && layout.data_offset - layout.tensor_infos_end != header.padding.len())
        {
            header.pad()?;
        }
        progress.begin(data.len() as u64);
        let mode = Mode::Plain;
        write_atomic_file(output, mode, |out| {
            let named = |e: std::io::Error| Error::from(e).in_file(output);
            let mut out = std::io::BufWriter::with_capacity(4 << 20, out);
            header
                .write_to(&mut out, !data.is_empty())
                .map_err(|e| Error::from(e).in_file(output))?;
            for chunk in data.chunks(4 << 20) {
                out.write_all(chunk).map_err(named)?;
                progress.advance(chunk.len() as u64);
            }
            out.flush().map_err(named)?;
            progress.finish();
            Ok(())
        })?;
        return Ok(Built::DataAsItWas);
    }
    if header.tensor_infos.is_empty() {
        // No tensors, so no data: the header with the padding the JSON gives (no reader needs
        // any; laid out again, an alignment of 2^31 would call for 2 GiB of zeros).
        write_atomic_file(output, Mode::Plain, |out| {
            header
                .write_to(out, false)
                .map(drop)
                .map_err(|e| Error::from(e).in_file(output))
        })?;
        return Ok(Built::LaidOutAgain);
    }
    let mut builder = Builder::new()
        .like(&header)
        .with_metadata(header.metadata.clone());
    for info in &header.tensor_infos {
        let t = source
            .tensor(&info.name)
            .ok_or_else(|| LosslessError::NoSuchTensor {
                name: info.name.to_string(),
                from: from.to_path_buf(),
            })?;
        if (t.info.ggml_type, &t.info.dimensions) != (info.ggml_type, &info.dimensions) {
            return Err(LosslessError::Mismatch {
                name: info.name.to_string(),
                here_type: info.ggml_type,
                here: info.dimensions.clone(),
                there_type: t.info.ggml_type,
                there: t.info.dimensions.clone(),
                from: from.to_path_buf(),
            }
            .into());
        }
        let ty = t.ggml_type.ok_or_else(|| Error::Tensor {
            index: t.index,
            name: info.name.to_string(),
            source: TensorError::UnknownType(info.ggml_type),
        })?;
        let len = t.byte_size().map_err(|e| e.in_file(from))?;
        source.tensor_data(t.index).map_err(|e| e.in_file(from))?;
        builder = builder.tensor(
            &info.name,
            ty,
            &info.dimensions,
            Source::File {
                file: &handle,
                offset: t.file_offset,
                len,
            },
        )?;
    }
    builder.write_file_with(output, Mode::Plain, progress)?;
    Ok(Built::LaidOutAgain)
}
