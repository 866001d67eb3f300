//! Checks of what the standard keys mean, under both profiles: required keys, standard types,
//! tokenizer arrays that agree, special tokens inside the vocabulary, a file type that matches
//! the tensors, consistent split keys.
//!
//! | finding | severity |
//! |---|---|
//! | `general.architecture` missing | warning (llama.cpp cannot load it; other GGUF files, such as imatrix data, have none) |
//! | `general.quantization_version` missing while a tensor is quantized | warning |
//! | a standard key holding another type than the standard one | error |
//! | `tokenizer.ggml.tokens`, `scores`, `token_type` of different lengths | error |
//! | a special-token id outside the vocabulary | error |
//! | a token type outside 1..=6 | warning |
//! | `general.file_type` unknown, or its main tensor type absent | warning |
//! | `split.no` ≥ `split.count`, one without the other, more tensors than `split.tensors.count` | error |

use super::Severity;
use crate::keys::{describe, standard_key, FileType, Required, TokenType, STANDARD_KEYS};
use crate::quant::GgmlType;
use ggufrw_schema::{ArrayValues, Header, Layout, Value};
use std::collections::HashMap;

/// Special-token ids that must name a token.
const SPECIAL_TOKENS: &[&str] = &[
    "bos",
    "eos",
    "unknown",
    "seperator",
    "padding",
    "eot",
    "eom",
    "mask",
    "prefix",
    "suffix",
    "middle",
    "fim_pre",
    "fim_suf",
    "fim_mid",
    "fim_pad",
    "fim_rep",
    "fim_sep",
];

/// Runs every semantic check on a decoded header, reporting each finding.
pub fn check(
    header: &Header,
    layout: &Layout,
    report: &mut dyn FnMut(Severity, String, u64, String),
) {
    let arch = (header.metadata.iter())
        .find(|kv| kv.key == *"general.architecture")
        .and_then(|kv| match &kv.value {
            Value::String(s) => s.as_str().ok(),
            _ => None,
        });
    // One pass: each standard key's type, and where the first occurrence of each standard key
    // sits (other keys are not looked up again, so a million of them cost one lookup each).
    let mut at: HashMap<&str, (usize, u64)> = HashMap::default();
    for (i, kv) in header.metadata.iter().enumerate() {
        // Standard keys are ASCII: a key that is not UTF-8 is none of them.
        let Ok(key) = kv.key.as_str() else {
            continue;
        };
        let Some(standard) = standard_key(key, arch) else {
            continue;
        };
        let offset = layout.kv_value_offsets[i];
        at.entry(key).or_insert((i, offset));
        if !(standard.matches)(&kv.value) {
            report(
                Severity::Error,
                format!("kv[{i}].value"),
                offset,
                format!(
                    "{key:?} holds {}, the standard type is {}",
                    describe(&kv.value),
                    standard.expected
                ),
            );
        }
    }
    let value = |key: &str| {
        at.get(key)
            .map(|&(i, offset)| (&header.metadata[i].value, format!("kv[{i}].value"), offset))
    };

    // Required keys.
    let quantized = (header.tensor_infos.iter())
        .any(|t| GgmlType::from_id(t.ggml_type).is_some_and(GgmlType::is_quantized));
    for key in STANDARD_KEYS {
        let required = match key.required {
            Required::Always => true,
            Required::WhenQuantized => quantized,
            Required::No => false,
        };
        if required && value(key.pattern).is_none() {
            let why = if key.required == Required::Always {
                ""
            } else {
                " (a tensor is quantized)"
            };
            report(
                Severity::Warning,
                "metadata".into(),
                layout.metadata_start,
                format!("{} is required{why}", key.pattern),
            );
        }
    }

    // The vocabulary: arrays of one length, special tokens inside it, known token types.
    let array_len = |key: &str| match value(key) {
        Some((Value::Array(a), path, offset)) => Some((a.values.len(), path, offset)),
        _ => None,
    };
    let tokens = array_len("tokenizer.ggml.tokens");
    if let Some((n, _, _)) = &tokens {
        for key in ["tokenizer.ggml.scores", "tokenizer.ggml.token_type"] {
            if let Some((m, path, offset)) = array_len(key) {
                if m != *n {
                    report(
                        Severity::Error,
                        path,
                        offset,
                        format!("{key} has {m} entries for {n} tokens"),
                    );
                }
            }
        }
        for name in SPECIAL_TOKENS {
            let key = format!("tokenizer.ggml.{name}_token_id");
            if let Some((v, path, offset)) = value(&key) {
                let id = match v {
                    Value::Uint32(id) => i64::from(*id),
                    Value::Int32(id) => i64::from(*id),
                    _ => continue,
                };
                if id < 0 || id >= *n as i64 {
                    report(
                        Severity::Error,
                        path,
                        offset,
                        format!("{key} = {id} is outside the {n}-token vocabulary"),
                    );
                }
            }
        }
    }
    if let Some((Value::Array(a), path, offset)) = value("tokenizer.ggml.token_type") {
        if let ArrayValues::Int32(types) = &a.values {
            if let Some((i, t)) = types
                .iter()
                .enumerate()
                .find(|(_, &t)| TokenType::from_repr(t).is_none())
            {
                report(
                    Severity::Warning,
                    path,
                    offset,
                    format!("token {i} has type {t}, known are 1..=6"),
                );
            }
        }
    }

    // The file type against the tensors.
    if let Some((Value::Uint32(id), path, offset)) = value("general.file_type") {
        match FileType::from_repr(*id) {
            None => report(
                Severity::Warning,
                path,
                offset,
                format!("general.file_type {id} is not a known file type"),
            ),
            Some(ft) => {
                if let Some(main) = ft.main_type() {
                    let present = header.tensor_infos.iter().any(|t| t.ggml_type == main.id());
                    if !header.tensor_infos.is_empty() && !present {
                        report(
                            Severity::Warning,
                            path,
                            offset,
                            format!("general.file_type is {ft} but no tensor is {main}"),
                        );
                    }
                }
            }
        }
    }

    // Split keys.
    let int = |key: &str| match value(key) {
        Some((Value::Uint16(v), path, offset)) => Some((i64::from(*v), path, offset)),
        Some((Value::Int32(v), path, offset)) => Some((i64::from(*v), path, offset)),
        _ => None,
    };
    match (int("split.no"), int("split.count")) {
        // llama-gguf-split --merge leaves split.count 0: llama.cpp reads that as not split.
        (Some(_), Some((0, _, _))) => {}
        (Some((no, path, offset)), Some((count, _, _))) if no >= count => {
            report(
                Severity::Error,
                path,
                offset,
                format!("split.no {no} is not below split.count {count}"),
            );
        }
        (Some((_, path, offset)), None) => {
            report(
                Severity::Error,
                path,
                offset,
                "split.no without split.count".into(),
            );
        }
        (None, Some((_, path, offset))) => {
            report(
                Severity::Error,
                path,
                offset,
                "split.count without split.no".into(),
            );
        }
        _ => {}
    }
    if let Some((total, path, offset)) = int("split.tensors.count") {
        if (header.tensor_infos.len() as i64) > total {
            report(
                Severity::Error,
                path,
                offset,
                format!(
                    "this shard has {} tensors, more than split.tensors.count {total}",
                    header.tensor_infos.len()
                ),
            );
        }
    }
}
