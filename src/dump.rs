//! The header as JSON (`ggufrw dump --json`) and as readable text (`ggufrw dump`).
//!
//! JSON: integers are exact (u64 and i64 too); floats are numbers (an f32 printed as the f64
//! it widens to, exactly), except NaN and the infinities, which are the strings `"nan"`,
//! `"inf"` and `"-inf"`. An array inside an array is an object
//! `{"element_type": …, "value": […]}`. A string (key, value, tensor name) that is not UTF-8
//! is the object `{"hex": "…"}` of its bytes, and a bool stored as a byte other than 0 or 1
//! is that byte as a number, so that every file ggml reads has a JSON form that rebuilds it.

use crate::file::Gguf;
use crate::quant::type_name;
use crate::tensor_byte_size;
use ggufrw_schema::{
    ArrayValues, FixedValue, GgufBool, KeyValue, TensorInfo, Text, TextRef, Value, Wide,
};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

/// The text of a float JSON cannot hold, in every JSON and text form here (`dump`, lossless
/// JSON, `--set`): `"nan"`, `"inf"`, `"-inf"`; `None` for a finite float.
pub fn non_finite_text(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("nan")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// The float [`non_finite_text`] writes as `text`, if it is one of its texts.
pub fn non_finite_from_text(text: &str) -> Option<f64> {
    match text {
        "nan" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// A string as JSON: its text, or `{"hex": "…"}` when the bytes are not UTF-8.
pub fn text_json(text: TextRef<'_>) -> Json {
    match text.as_str() {
        Ok(s) => json!(s),
        Err(_) => {
            let mut hex = String::with_capacity(text.len() * 2);
            for b in text.as_bytes() {
                let _ = write!(hex, "{b:02x}");
            }
            json!({ "hex": hex })
        }
    }
}

/// The string [`text_json`] writes as `json`; `None` for anything else.
pub fn text_from_json(json: &Json) -> Option<Text> {
    match json {
        Json::String(s) => Some(Text::from(s.as_str())),
        Json::Object(o) if o.len() == 1 => {
            let hex = o.get("hex")?.as_str()?;
            if hex.len() % 2 != 0 {
                return None;
            }
            let digits: Option<Vec<u8>> = (hex.as_bytes().chunks_exact(2))
                .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
                .collect();
            Some(Text::from_bytes(digits?))
        }
        _ => None,
    }
}

/// A bool as JSON: `true`, `false`, or the byte as a number when it is neither 0 nor 1.
pub fn bool_json(b: GgufBool) -> Json {
    match b.as_bool() {
        Some(b) => json!(b),
        None => json!(b.byte()),
    }
}

/// The bool [`bool_json`] writes as `json`; `None` for anything else.
pub fn bool_from_json(json: &Json) -> Option<GgufBool> {
    match json {
        Json::Bool(b) => Some((*b).into()),
        Json::Number(n) => Some(GgufBool::from_byte(u8::try_from(n.as_u64()?).ok()?)),
        _ => None,
    }
}

fn float(f: f64) -> Json {
    match non_finite_text(f) {
        Some(text) => json!(text),
        None => json!(f),
    }
}

/// A widened number or bool as JSON.
fn wide_json(wide: Wide) -> Json {
    match wide {
        Wide::Unsigned(v) => json!(v),
        Wide::Signed(v) => json!(v),
        Wide::Float(v) => float(v),
        Wide::Bool(v) => bool_json(v),
    }
}

/// A value as JSON: scalars as JSON scalars, arrays as lists.
pub fn value_json(value: &Value) -> Json {
    match value {
        Value::String(v) => text_json(v.text_ref()),
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
        ArrayValues::String(v) => Json::Array(v.iter().map(text_json).collect()),
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
                "key": text_json(kv.key.text_ref()),
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
                "name": text_json(t.name.text_ref()),
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

/// What the dumps show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpOptions {
    /// Whether to list the tensors.
    pub tensors: bool,
    /// Elements shown of an array (text and markdown: then `… N more`; JSON: the first N and
    /// `"count"`); `None`: all in JSON, 8 in text.
    pub arrays: Option<usize>,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            tensors: true,
            arrays: None,
        }
    }
}

/// A value as one line of text, long arrays abbreviated.
pub fn value_text(value: &Value) -> String {
    value_text_with(value, SHOWN_ELEMENTS)
}

/// A value as one line of text, arrays cut after `shown` elements.
pub fn value_text_with(value: &Value, shown: usize) -> String {
    match value {
        Value::String(s) => format!("{:?}", s.text_ref()),
        Value::Array(a) => {
            let Json::Array(items) = array_json(&a.values) else {
                unreachable!("arrays are lists")
            };
            let mut out = String::from("[");
            for (i, item) in items.iter().take(shown).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&item.to_string());
            }
            if items.len() > shown {
                let _ = write!(out, ", … {} more", items.len() - shown);
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
    dump_text_with(file, DumpOptions::default())
}

/// [`dump_text`] with options; each key and tensor info with the offset where it starts.
pub fn dump_text_with<B: AsRef<[u8]>>(file: &Gguf<B>, options: DumpOptions) -> String {
    let shown = options.arrays.unwrap_or(SHOWN_ELEMENTS);
    let header = file.header();
    let layout = file.layout();
    let mut out = format!(
        "{}, alignment {}, {} metadata pairs, {} tensors, data at 0x{:x}\n",
        format_text(header),
        layout.alignment,
        header.metadata.len(),
        header.tensor_infos.len(),
        layout.data_offset
    );
    let arch = crate::keys::Meta::new(&header.metadata).architecture();
    let arch_prefix = arch.map(|a| format!("{a}."));
    let group = |key: &[u8]| {
        if key.starts_with(b"general.") {
            0
        } else if (arch_prefix.as_deref()).is_some_and(|p| key.starts_with(p.as_bytes())) {
            1
        } else if key.starts_with(b"tokenizer.") {
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
        let keys: Vec<_> = (header.metadata.iter().enumerate())
            .filter(|(_, kv)| group(kv.key.as_bytes()) == g)
            .collect();
        if keys.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}:");
        for (index, kv) in keys {
            let ty = match &kv.value {
                Value::Array(a) => format!(
                    "array[{}; {}]",
                    a.values.element_type().name(),
                    a.values.len()
                ),
                v => v.value_type().name().to_owned(),
            };
            let _ = write!(
                out,
                "  @0x{:x} {} ({ty}) = {}",
                layout.kv_offsets[index],
                kv.key,
                value_text_with(&kv.value, shown)
            );
            let key = kv.key.as_str().ok();
            if let Some(meaning) = key.and_then(|k| interpretation(k, &kv.value)) {
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
    if !options.tensors {
        return out;
    }
    let _ = writeln!(out, "\ntensors:");
    for (i, t) in header.tensor_infos.iter().enumerate() {
        let size = tensor_byte_size(i, t).map_or_else(|_| "?".to_owned(), |s| s.to_string());
        let _ = writeln!(
            out,
            "  {:>5} @0x{:x} {} {} {:?} offset {} size {size}",
            i,
            layout.tensor_info_offsets[i],
            t.name,
            type_name(t.ggml_type),
            t.dimensions,
            t.offset
        );
    }
    out
}

/// [`dump_json`] with options: tensors left out, arrays cut to their first elements (such an
/// array's entry then carries `"count"`, its full length).
pub fn dump_json_with<B: AsRef<[u8]>>(file: &Gguf<B>, options: DumpOptions) -> Json {
    let mut json = dump_json(file);
    if !options.tensors {
        if let Some(o) = json.as_object_mut() {
            o.remove("tensors");
        }
    }
    if let (Some(shown), Some(Json::Array(entries))) = (options.arrays, json.get_mut("metadata")) {
        for entry in entries {
            if let Some(Json::Array(items)) = entry.get_mut("value") {
                if items.len() > shown {
                    let count = items.len();
                    items.truncate(shown);
                    entry["count"] = json!(count);
                }
            }
        }
    }
    json
}

/// Escapes text for a markdown table cell.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '`' => out.push('\''),
            c => out.push(c),
        }
    }
    out
}

/// The group a tensor is listed under in the markdown view: `blk.N` for a layer's tensors,
/// else `base`.
fn tensor_group(name: &[u8]) -> &[u8] {
    match name.strip_prefix(b"blk.") {
        Some(rest) => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && rest.get(digits) == Some(&b'.') {
                &name[..4 + digits]
            } else {
                b"base"
            }
        }
        None => b"base",
    }
}

/// `GGUF vN ORDER-endian` and the version-gated fields the header has, as `, NAME VALUE` each
/// (none in versions 1–3).
fn format_text(header: &ggufrw_schema::Header) -> String {
    let mut text = format!(
        "GGUF v{} {}-endian",
        header.version,
        header.byte_order.name()
    );
    for (field, value) in header.gated.values().iter() {
        text.push_str(&format!(", {} {value}", field.name));
    }
    text
}

/// The header as markdown, in the manner of gguf-dump's `--markdown`: a table of the metadata
/// (position, offset, type, count, key, value), then the tensors grouped into `base` and each
/// `blk.N`, with element counts, each group's share of the parameters and bits per weight.
pub fn dump_markdown<B: AsRef<[u8]>>(file: &Gguf<B>, options: DumpOptions) -> String {
    let shown = options.arrays.unwrap_or(SHOWN_ELEMENTS);
    let header = file.header();
    let layout = file.layout();
    let mut out = format!(
        "# {}: {} metadata pairs, {} tensors\n\n",
        format_text(header),
        header.metadata.len(),
        header.tensor_infos.len()
    );
    let _ = writeln!(out, "## Metadata\n");
    let _ = writeln!(out, "| POS | OFFSET | TYPE | COUNT | KEY | VALUE |");
    let _ = writeln!(out, "|----:|-------:|:-----|------:|:----|:------|");
    for (i, kv) in header.metadata.iter().enumerate() {
        let (ty, count) = match &kv.value {
            Value::Array(a) => (
                format!("array[{}]", a.values.element_type().name()),
                a.values.len() as u64,
            ),
            v => (v.value_type().name().to_owned(), 1),
        };
        let _ = writeln!(
            out,
            "| {} | 0x{:x} | {ty} | {count} | {} | {} |",
            i + 1,
            layout.kv_offsets[i],
            cell(&kv.key.to_string()),
            cell(&value_text_with(&kv.value, shown))
        );
    }
    if !options.tensors || header.tensor_infos.is_empty() {
        return out;
    }
    let elements = |t: &TensorInfo| (t.dimensions.iter()).try_fold(1u64, |n, &d| n.checked_mul(d));
    let total: u64 = (header.tensor_infos.iter())
        .filter_map(elements)
        .fold(0u64, u64::saturating_add);
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, t) in header.tensor_infos.iter().enumerate() {
        // The group is `blk.N` (ASCII) or `base`.
        let g = std::str::from_utf8(tensor_group(t.name.as_bytes())).unwrap_or("base");
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, members)) => members.push(i),
            None => groups.push((g, vec![i])),
        }
    }
    let _ = writeln!(out, "\n## Tensors\n");
    let _ = writeln!(out, "| GROUP | TENSORS | ELEMENTS | SHARE |");
    let _ = writeln!(out, "|:------|--------:|---------:|------:|");
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    let group_elements = |members: &[usize]| {
        (members.iter())
            .filter_map(|&i| elements(&header.tensor_infos[i]))
            .fold(0u64, u64::saturating_add)
    };
    for (name, members) in &groups {
        let n = group_elements(members);
        let _ = writeln!(
            out,
            "| {} | {} | {n} | {:.2}% |",
            cell(name),
            members.len(),
            share(n)
        );
    }
    for (name, members) in &groups {
        let n = group_elements(members);
        let _ = writeln!(out, "\n### {}: {n} elements\n", cell(name));
        let _ = writeln!(
            out,
            "| T_ID | NAME | TYPE | SHAPE | ELEMENTS | OFFSET | BYTES | BPW |"
        );
        let _ = writeln!(
            out,
            "|-----:|:-----|:-----|:------|---------:|-------:|------:|----:|"
        );
        for &i in members {
            let t = &header.tensor_infos[i];
            let count = elements(t);
            let bytes = tensor_byte_size(i, t).ok();
            let bpw = match (count, bytes) {
                (Some(c), Some(b)) if c > 0 => format!("{:.4}", b as f64 * 8.0 / c as f64),
                _ => "?".into(),
            };
            let shape: Vec<String> = t.dimensions.iter().map(u64::to_string).collect();
            let _ = writeln!(
                out,
                "| {i} | {} | {} | {} | {} | 0x{:x} | {} | {bpw} |",
                cell(&t.name.to_string()),
                type_name(t.ggml_type),
                shape.join(" × "),
                count.map_or_else(|| "?".into(), |c| c.to_string()),
                layout.data_offset.saturating_add(t.offset),
                bytes.map_or_else(|| "?".into(), |b| b.to_string()),
            );
        }
    }
    out
}
