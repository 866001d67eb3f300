//! JSON files as Python's `json` reads them: `config.json` written by `json.dump` may hold
//! `NaN` and `Infinity`, which JSON does not have and `json.load` accepts.

use crate::error::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// The string a non-finite number of a Python-written JSON file is held as: `json.dump`
/// writes `NaN`, `Infinity` and `-Infinity`, which `json.load` reads and JSON does not have.
pub(crate) const NON_FINITE: [(&str, f64); 3] = [
    ("\u{0}NaN", f64::NAN),
    ("\u{0}Infinity", f64::INFINITY),
    ("\u{0}-Infinity", f64::NEG_INFINITY),
];

/// A non-finite number read from a Python-written file, if `v` is one.
pub(crate) fn non_finite(v: &Value) -> Option<f64> {
    let s = v.as_str()?;
    NON_FINITE.iter().find(|(k, _)| *k == s).map(|(_, x)| *x)
}

/// Reads a JSON file as Python's `json.load` does (bare `NaN`, `Infinity` and `-Infinity`
/// accepted, held as [`NON_FINITE`]'s strings), naming the file on failure.
pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = python_constants(&bytes);
    serde_json::from_slice(&text).map_err(|e| {
        Error::field(
            path,
            format!("line {} column {}", e.line(), e.column()),
            format!("not JSON: {e}"),
        )
    })
}

/// `bytes` with each bare `NaN`, `Infinity` and `-Infinity` outside strings replaced by a
/// JSON string of [`NON_FINITE`]; other bytes as they are.
fn python_constants(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const WORDS: [(&[u8], &str); 3] = [
        (b"-Infinity", "\\u0000-Infinity"),
        (b"Infinity", "\\u0000Infinity"),
        (b"NaN", "\\u0000NaN"),
    ];
    if !WORDS
        .iter()
        .any(|(w, _)| bytes.windows(w.len()).any(|x| x == *w))
    {
        return bytes.into();
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 1;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
        }
        match WORDS.iter().find(|(w, _)| bytes[i..].starts_with(w)) {
            Some((w, s)) => {
                out.push(b'"');
                out.extend_from_slice(s.as_bytes());
                out.push(b'"');
                i += w.len();
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_constants_read_outside_strings_only() {
        let text = br#"{"a": [0.0, Infinity, -Infinity, NaN], "b": "NaN Infinity", "c\"NaN": 1}"#;
        let v: Value = serde_json::from_slice(&python_constants(text)).unwrap();
        let a: Vec<f64> = v["a"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().or_else(|| non_finite(x)).unwrap())
            .collect();
        assert_eq!(a[0], 0.0);
        assert_eq!(a[1], f64::INFINITY);
        assert_eq!(a[2], f64::NEG_INFINITY);
        assert!(a[3].is_nan());
        assert_eq!(v["b"], "NaN Infinity");
        assert_eq!(v["c\"NaN"], 1);
        assert_eq!(non_finite(&v["b"]), None);
    }
}
