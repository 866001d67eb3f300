//! What differs between two files: the header's fields, keys added, removed and changed
//! (arrays: their lengths, or the first element that differs), tensors added, removed and
//! changed (type, shape, offset), and with data, each tensor's bytes.

use crate::dump::{value_json, value_text};
use crate::file::Gguf;
use crate::quant::type_name;
use binrw::BinWrite;
use ggufrw_schema::{Ctx, FixedField, FixedValue, Value};
use serde_json::{json, Value as Json};

/// One difference.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A header field (magic, version, the version-gated fields, byte order, alignment).
    Header {
        /// The field.
        field: &'static str,
        /// In A.
        a: String,
        /// In B.
        b: String,
    },
    /// A key only B has.
    KeyAdded {
        /// The key.
        key: String,
        /// Its value.
        value: Value,
    },
    /// A key only A has.
    KeyRemoved {
        /// The key.
        key: String,
        /// Its value.
        value: Value,
    },
    /// A key both have, with other values.
    KeyChanged {
        /// The key.
        key: String,
        /// In A.
        a: Value,
        /// In B.
        b: Value,
        /// For arrays of one length: the first element that differs.
        first_difference: Option<usize>,
    },
    /// The same keys and values in another order.
    KeyOrder,
    /// A tensor only B has.
    TensorAdded {
        /// Its name.
        name: String,
    },
    /// A tensor only A has.
    TensorRemoved {
        /// Its name.
        name: String,
    },
    /// A tensor both have, described differently.
    TensorChanged {
        /// Its name.
        name: String,
        /// (field, in A, in B) for type, shape, offset.
        fields: Vec<(&'static str, String, String)>,
    },
    /// A tensor whose bytes differ.
    TensorData {
        /// Its name.
        name: String,
        /// The first byte that differs (from the start of its data), or where one ends.
        at: u64,
    },
}

/// A value's bytes as written (floats bit for bit).
fn value_bytes(value: &Value) -> Vec<u8> {
    let mut out = binrw::io::Cursor::new(Vec::new());
    let ctx = Ctx::new(3, ggufrw_schema::ByteOrder::Little, u64::MAX);
    let _ = value.write_options(&mut out, binrw::Endian::Little, ctx);
    out.into_inner()
}

/// For two arrays of one length, the first element whose JSON differs.
fn first_difference(a: &Value, b: &Value) -> Option<usize> {
    match (value_json(a), value_json(b)) {
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            x.iter().zip(&y).position(|(p, q)| p != q)
        }
        _ => None,
    }
}

/// The differences between `a` and `b`; tensors' bytes too when `data`.
pub fn diff<A: AsRef<[u8]>, B: AsRef<[u8]>>(a: &Gguf<A>, b: &Gguf<B>, data: bool) -> Vec<Change> {
    let (ha, hb) = (a.header(), b.header());
    let mut changes = Vec::new();
    // The fixed part's own fields by name (a field only one version has shows as absent in
    // the other), then what the header implies.
    let text = |f: &FixedField| match f.value {
        FixedValue::Text(t) => t.to_owned(),
        FixedValue::Number(n) => n.to_string(),
    };
    let (fa, fb) = (ha.fixed_fields(), hb.fixed_fields());
    let mut names: Vec<&'static str> = Vec::new();
    for f in fa.iter().chain(&fb).filter(|f| !f.derived) {
        if !names.contains(&f.name) {
            names.push(f.name);
        }
    }
    let value = |list: &[FixedField], name| {
        (list.iter().find(|f| f.name == name)).map_or_else(|| "absent".to_owned(), text)
    };
    let mut header_fields: Vec<(&'static str, String, String)> = (names.into_iter())
        .map(|n| (n, value(&fa, n), value(&fb, n)))
        .collect();
    header_fields.extend([
        (
            "byte_order",
            ha.byte_order.name().into(),
            hb.byte_order.name().into(),
        ),
        (
            "alignment",
            a.layout().alignment.to_string(),
            b.layout().alignment.to_string(),
        ),
    ]);
    for (field, x, y) in header_fields {
        if x != y {
            changes.push(Change::Header { field, a: x, b: y });
        }
    }
    let find = |list: &[ggufrw_schema::KeyValue], key: &ggufrw_schema::GgufString| {
        list.iter()
            .find(|kv| kv.key == *key)
            .map(|kv| kv.value.clone())
    };
    for kv in &ha.metadata {
        match find(&hb.metadata, &kv.key) {
            None => changes.push(Change::KeyRemoved {
                key: kv.key.to_string(),
                value: kv.value.clone(),
            }),
            Some(other)
                if value_bytes(&other) != value_bytes(&kv.value)
                    || other.value_type() != kv.value.value_type() =>
            {
                changes.push(Change::KeyChanged {
                    key: kv.key.to_string(),
                    first_difference: first_difference(&kv.value, &other),
                    a: kv.value.clone(),
                    b: other,
                })
            }
            Some(_) => {}
        }
    }
    for kv in &hb.metadata {
        if find(&ha.metadata, &kv.key).is_none() {
            changes.push(Change::KeyAdded {
                key: kv.key.to_string(),
                value: kv.value.clone(),
            });
        }
    }
    fn keys(h: &ggufrw_schema::Header) -> Vec<&[u8]> {
        h.metadata.iter().map(|kv| kv.key.as_bytes()).collect()
    }
    if changes.iter().all(|c| matches!(c, Change::Header { .. })) && keys(ha) != keys(hb) {
        changes.push(Change::KeyOrder);
    }
    for t in a.tensors() {
        match b.tensor(t.name()) {
            None => changes.push(Change::TensorRemoved {
                name: t.name().to_string(),
            }),
            Some(u) => {
                let mut fields = Vec::new();
                if t.info.ggml_type != u.info.ggml_type {
                    fields.push((
                        "type",
                        type_name(t.info.ggml_type),
                        type_name(u.info.ggml_type),
                    ));
                }
                if t.info.dimensions != u.info.dimensions {
                    fields.push((
                        "shape",
                        format!("{:?}", t.info.dimensions),
                        format!("{:?}", u.info.dimensions),
                    ));
                }
                if t.info.offset != u.info.offset {
                    fields.push((
                        "offset",
                        t.info.offset.to_string(),
                        u.info.offset.to_string(),
                    ));
                }
                if !fields.is_empty() {
                    changes.push(Change::TensorChanged {
                        name: t.name().to_string(),
                        fields,
                    });
                }
                if data {
                    let (x, y) = (
                        a.tensor_data(t.index).unwrap_or(&[]),
                        b.tensor_data(u.index).unwrap_or(&[]),
                    );
                    let at = x.iter().zip(y).position(|(p, q)| p != q);
                    let at = at.or((x.len() != y.len()).then(|| x.len().min(y.len())));
                    if let Some(at) = at {
                        changes.push(Change::TensorData {
                            name: t.name().to_string(),
                            at: at as u64,
                        });
                    }
                }
            }
        }
    }
    for u in b.tensors() {
        if a.tensor(u.name()).is_none() {
            changes.push(Change::TensorAdded {
                name: u.name().to_string(),
            });
        }
    }
    changes
}

impl Change {
    /// One line of text.
    pub fn text(&self) -> String {
        match self {
            Change::Header { field, a, b } => format!("~ {field}: {a} → {b}"),
            Change::KeyAdded { key, value } => format!(
                "+ key {key} ({}) = {}",
                value.value_type().name(),
                value_text(value)
            ),
            Change::KeyRemoved { key, value } => format!(
                "- key {key} ({}) = {}",
                value.value_type().name(),
                value_text(value)
            ),
            Change::KeyChanged {
                key,
                a,
                b,
                first_difference,
            } => {
                let (la, lb) = (array_len(a), array_len(b));
                match (la, lb, first_difference) {
                    (Some(x), Some(y), _) if x != y => {
                        format!("~ key {key}: array of {x} → {y} elements")
                    }
                    (Some(_), Some(_), Some(i)) => format!(
                        "~ key {key}: element {i} differs: {} → {}",
                        element(a, *i),
                        element(b, *i)
                    ),
                    _ => format!(
                        "~ key {key}: {} {} → {} {}",
                        a.value_type().name(),
                        value_text(a),
                        b.value_type().name(),
                        value_text(b)
                    ),
                }
            }
            Change::KeyOrder => "~ the keys are in another order".into(),
            Change::TensorAdded { name } => format!("+ tensor {name}"),
            Change::TensorRemoved { name } => format!("- tensor {name}"),
            Change::TensorChanged { name, fields } => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(f, x, y)| format!("{f} {x} → {y}"))
                    .collect();
                format!("~ tensor {name}: {}", parts.join(", "))
            }
            Change::TensorData { name, at } => {
                format!("~ tensor {name}: data differs from byte {at}")
            }
        }
    }

    /// As JSON.
    pub fn json(&self) -> Json {
        match self {
            Change::Header { field, a, b } => {
                json!({"change": "header", "field": field, "a": a, "b": b})
            }
            Change::KeyAdded { key, value } => {
                json!({"change": "key added", "key": key, "type": value.value_type().name(), "value": value_json(value)})
            }
            Change::KeyRemoved { key, value } => {
                json!({"change": "key removed", "key": key, "type": value.value_type().name(), "value": value_json(value)})
            }
            Change::KeyChanged {
                key,
                a,
                b,
                first_difference,
            } => json!({"change": "key changed", "key": key,
                "a": {"type": a.value_type().name(), "value": value_json(a)},
                "b": {"type": b.value_type().name(), "value": value_json(b)},
                "first_difference": first_difference}),
            Change::KeyOrder => json!({"change": "key order"}),
            Change::TensorAdded { name } => json!({"change": "tensor added", "name": name}),
            Change::TensorRemoved { name } => json!({"change": "tensor removed", "name": name}),
            Change::TensorChanged { name, fields } => {
                json!({"change": "tensor changed", "name": name,
                "fields": fields.iter().map(|(f, x, y)| json!({"field": f, "a": x, "b": y})).collect::<Vec<_>>()})
            }
            Change::TensorData { name, at } => {
                json!({"change": "tensor data", "name": name, "at": at})
            }
        }
    }
}

fn array_len(v: &Value) -> Option<usize> {
    match v {
        Value::Array(a) => Some(a.values.len()),
        _ => None,
    }
}

fn element(v: &Value, i: usize) -> String {
    match value_json(v) {
        Json::Array(items) => items.get(i).map_or_else(String::new, ToString::to_string),
        _ => String::new(),
    }
}
