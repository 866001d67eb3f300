//! The header as JSON (`ggufrw dump --json`) and as readable text (`ggufrw dump`).
//!
//! JSON: integers are exact (u64 and i64 too); floats are numbers (an f32 printed as the f64
//! it widens to, exactly), except NaN and the infinities, which are the strings `"nan"`,
//! `"inf"` and `"-inf"`. An array inside an array is an object
//! `{"element_type": …, "value": […]}`.

use crate::file::Gguf;
use crate::ggml_type::type_name;
use crate::tensor_byte_size;
use ggufrw_schema::{ArrayValues, FixedValue, KeyValue, TensorInfo, Value, Wide};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

fn float(f: f64) -> Json {
    if f.is_nan() {
        json!("nan")
    } else if f.is_infinite() {
        json!(if f > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(f)
    }
}

/// A widened number or bool as JSON.
fn wide_json(wide: Wide) -> Json {
    match wide {
        Wide::Unsigned(v) => json!(v),
        Wide::Signed(v) => json!(v),
        Wide::Float(v) => float(v),
        Wide::Bool(v) => json!(v),
    }
}

/// A value as JSON: scalars as JSON scalars, arrays as lists.
pub fn value_json(value: &Value) -> Json {
    match value {
        Value::String(v) => json!(v.as_str()),
        Value::Array(a) => array_json(&a.values),
        scalar => scalar.widen().map_or(Json::Null, wide_json),
    }
}

/// An array's elements as a JSON list; each nested array as an object with its own
/// `element_type` and `value`, so that no type is lost.
fn array_json(values: &ArrayValues) -> Json {
    if let Some(numbers) = values.widened() {
        return Json::Array(numbers.map(wide_json).collect());
    }
    match values {
        ArrayValues::String(v) => Json::Array(v.iter().map(|x| json!(x)).collect()),
        ArrayValues::Array(v) => (v.iter())
            .map(|a| json!({"element_type": a.values.element_type().name(), "value": array_json(&a.values)}))
            .collect(),
        _ => Json::Null,
    }
}

/// Metadata pairs as the list `dump --json` prints.
pub fn metadata_json(metadata: &[KeyValue]) -> Json {
    (metadata.iter())
        .map(|kv| {
            let mut entry = json!({
                "key": kv.key.as_str(),
                "type": kv.value.value_type().name(),
                "value": value_json(&kv.value),
            });
            if let Value::Array(a) = &kv.value {
                entry["element_type"] = json!(a.values.element_type().name());
            }
            entry
        })
        .collect()
}

/// Tensor infos as the list `dump --json` prints.
pub fn tensors_json(tensor_infos: &[TensorInfo]) -> Json {
    (tensor_infos.iter().enumerate())
        .map(|(i, t)| {
            json!({
                "name": t.name.as_str(),
                "type": type_name(t.ggml_type),
                "shape": t.dimensions,
                "offset": t.offset,
                "size": tensor_byte_size(i, t).ok(),
            })
        })
        .collect()
}

/// The whole header as one JSON object: the fixed fields (magic, version, counts), the byte
/// order, alignment and data offset, the metadata and the tensor infos.
pub fn dump_json<B: AsRef<[u8]>>(file: &Gguf<B>) -> Json {
    let header = file.header();
    let mut out = serde_json::Map::new();
    for field in header.fixed_fields() {
        let value = match field.value {
            FixedValue::Text(t) => json!(t),
            FixedValue::Number(n) => json!(n),
        };
        out.insert(field.name.into(), value);
    }
    out.insert("byte_order".into(), json!(header.byte_order.name()));
    out.insert("alignment".into(), json!(file.layout().alignment));
    out.insert("data_offset".into(), json!(file.layout().data_offset));
    out.insert("metadata".into(), metadata_json(&header.metadata));
    out.insert("tensors".into(), tensors_json(&header.tensor_infos));
    Json::Object(out)
}

/// Arrays longer than this are abbreviated in text output.
const SHOWN_ELEMENTS: usize = 8;

/// A value as one line of text, long arrays abbreviated.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{:?}", s.as_str()),
        Value::Array(a) => {
            let Json::Array(items) = array_json(&a.values) else {
                unreachable!("arrays are lists")
            };
            let mut out = String::from("[");
            for (i, item) in items.iter().take(SHOWN_ELEMENTS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&item.to_string());
            }
            if items.len() > SHOWN_ELEMENTS {
                let _ = write!(out, ", … {} more", items.len() - SHOWN_ELEMENTS);
            }
            out.push(']');
            out
        }
        other => value_json(other).to_string(),
    }
}

/// What a standard value means, beside the raw value: file type and pooling names, token
/// type names.
fn interpretation(key: &str, value: &Value) -> Option<String> {
    use crate::keys::{FileType, PoolingType, TokenType};
    match (key, value) {
        ("general.file_type", Value::Uint32(id)) => Some(
            FileType::from_repr(*id).map_or_else(|| "unknown file type".into(), |t| t.to_string()),
        ),
        (k, Value::Uint32(id)) if k.ends_with(".pooling_type") => {
            PoolingType::from_repr(*id).map(|t| t.to_string())
        }
        ("tokenizer.ggml.token_type", Value::Array(a)) => match &a.values {
            ArrayValues::Int32(types) => {
                let names: Vec<String> = (types.iter().take(SHOWN_ELEMENTS))
                    .map(|&t| {
                        TokenType::from_repr(t).map_or_else(|| format!("?{t}"), |n| n.to_string())
                    })
                    .collect();
                let more = types.len().saturating_sub(SHOWN_ELEMENTS);
                Some(if more > 0 {
                    format!("{}, …", names.join(", "))
                } else {
                    names.join(", ")
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// The whole header as readable text: keys grouped (general, architecture, tokenizer, other),
/// standard values interpreted, the parameter count.
pub fn dump_text<B: AsRef<[u8]>>(file: &Gguf<B>) -> String {
    let header = file.header();
    let layout = file.layout();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "GGUF v{} {}-endian, alignment {}, {} metadata pairs, {} tensors, data at 0x{:x}",
        header.version,
        header.byte_order.name(),
        layout.alignment,
        header.metadata.len(),
        header.tensor_infos.len(),
        layout.data_offset
    );
    let arch = crate::keys::Meta::new(&header.metadata).architecture();
    let arch_prefix = arch.map(|a| format!("{a}."));
    let group = |key: &str| {
        if key.starts_with("general.") {
            0
        } else if arch_prefix.as_deref().is_some_and(|p| key.starts_with(p)) {
            1
        } else if key.starts_with("tokenizer.") {
            2
        } else {
            3
        }
    };
    let titles = [
        "general".to_owned(),
        format!("architecture ({})", arch.unwrap_or("?")),
        "tokenizer".to_owned(),
        "other".to_owned(),
    ];
    for (g, title) in titles.iter().enumerate() {
        let keys: Vec<_> = header
            .metadata
            .iter()
            .filter(|kv| group(&kv.key) == g)
            .collect();
        if keys.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}:");
        for kv in keys {
            let ty = match &kv.value {
                Value::Array(a) => format!(
                    "array[{}; {}]",
                    a.values.element_type().name(),
                    a.values.len()
                ),
                v => v.value_type().name().to_owned(),
            };
            let _ = write!(out, "  {} ({ty}) = {}", kv.key, value_text(&kv.value));
            if let Some(meaning) = interpretation(&kv.key, &kv.value) {
                let _ = write!(out, "  [{meaning}]");
            }
            out.push('\n');
        }
    }
    if let Ok(p) = crate::params::count(&header.tensor_infos) {
        let _ = write!(out, "\nparameters: {} total", p.total);
        if p.expert_count > 0 {
            let _ = write!(
                out,
                ", {} shared, {} per expert, {} experts",
                p.shared, p.expert, p.expert_count
            );
        }
        let _ = writeln!(out, " (size label {})", p.size_label());
    }
    let _ = writeln!(out, "\ntensors:");
    for (i, t) in header.tensor_infos.iter().enumerate() {
        let size = tensor_byte_size(i, t).map_or_else(|_| "?".to_owned(), |s| s.to_string());
        let _ = writeln!(
            out,
            "  {:>5} {} {} {:?} offset {} size {size}",
            i,
            t.name,
            type_name(t.ggml_type),
            t.dimensions,
            t.offset
        );
    }
    out
}
