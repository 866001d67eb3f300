//! A checkpoint folder, read once: its config as the reference sees it and every JSON file a
//! conversion consults (`tokenizer.json`, `tokenizer_config.json`, …), each parsed the first
//! time it is asked for and shared after that.

use crate::config::Hparams;
use crate::error::{Error, Result, Unsupported};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A Hugging Face model folder.
pub struct ModelDir {
    /// The folder.
    pub path: PathBuf,
    /// `config.json` as `AutoConfig(...).to_dict()` gives it.
    pub hparams: Hparams,
    json: Mutex<HashMap<String, Option<Arc<Value>>>>,
}

impl ModelDir {
    /// Opens `path`: a folder with a `config.json`.
    pub fn open(path: &Path) -> Result<ModelDir> {
        if !path.is_dir() {
            return Err(Unsupported::NotAFolder(path.to_owned()).into());
        }
        Ok(ModelDir {
            path: path.to_owned(),
            hparams: Hparams::load(path)?,
            json: Mutex::new(HashMap::new()),
        })
    }

    /// The path of the folder's file `name`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether the folder has a file `name`.
    pub fn has(&self, name: &str) -> bool {
        self.file(name).is_file()
    }

    /// The folder's JSON file `name`, parsed once; `None` when there is no such file.
    pub fn json(&self, name: &str) -> Result<Option<Arc<Value>>> {
        if let Some(v) = self.lock().get(name) {
            return Ok(v.clone());
        }
        let path = self.file(name);
        let value = if path.is_file() {
            Some(Arc::new(read_json(&path)?))
        } else {
            None
        };
        self.lock().insert(name.to_owned(), value.clone());
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Arc<Value>>>> {
        // A panic elsewhere cannot leave the cache half-written: an entry is one insert.
        self.json.lock().unwrap_or_else(|e| e.into_inner())
    }
}

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
