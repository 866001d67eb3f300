//! The GGUF file-name convention:
//! `[<Sidecar>-]<BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf`,
//! every part but the base name optional (ggml's `docs/gguf.md`, "GGUF Naming Convention").
//!
//! - [`naming_convention`] is gguf-py's function of that name (0.19.0, `utility.py`): what
//!   llama.cpp's converter names its output, from the model's name, base name, fine-tune,
//!   version, size label, output type and kind.
//! - [`conventional_name`] applies it to a decoded file's `general.*` metadata, the way the
//!   converter does.
//! - [`FileName`] parses a file name into its parts and formats it back, exactly.
//!
//! ```
//! use ggufrw::naming::{naming_convention, FileName, Shard};
//!
//! let name = FileName::parse("Grok-100B-v1.0-Q4_0-00003-of-00009.gguf")?;
//! assert_eq!(name.base_name, "Grok");
//! assert_eq!(name.size_label.as_deref(), Some("100B"));
//! assert_eq!(name.version.as_deref(), Some("v1.0"));
//! assert_eq!(name.encoding.as_deref(), Some("Q4_0"));
//! assert_eq!(name.shard, Some(Shard { number: 3, total: 9 }));
//! assert_eq!(name.to_string(), "Grok-100B-v1.0-Q4_0-00003-of-00009.gguf");
//!
//! let made = naming_convention(Some("Mixtral 8x7B"), Some("Mixtral"), None, Some("v0.1"),
//!     Some("8x7B"), Some("kq2"), None);
//! assert_eq!(made, "Mixtral-8x7B-v0.1-KQ2");
//! # Ok::<(), ggufrw::naming::NameError>(())
//! ```
//!
//! # Parsing
//!
//! The document says the convention "is not intended to be perfectly parsable"; its regular
//! expression insists on a version, which many real names lack (`Hermes-2-Pro-Llama-3-8B-F16`).
//! [`FileName::parse`] splits the stem on `-` and reads, from the right: a shard
//! (`NNNNN-of-NNNNN`, five digits each), a type (`LoRA` or `vocab`, as spelled), then an
//! encoding and a version. A version is `v` and dot-separated numbers (`v0.1`, `v2`). The token
//! after a version is the encoding whatever it is (`[A-Za-z0-9_]+`); without a version, the
//! last token is an encoding only when it looks like one, in any case: `[IT]?Q<n>(_<x>)*`
//! (`Q4_K_M`, `IQ2_XXS`, `TQ1_0`), `B?FP?<n>` (`F16`, `BF16`, `FP8`), `MXFP<n>`, `NVFP<n>`,
//! `KQ<n>`. From the left, after an optional `mmproj-`/`mtp-` sidecar, the base name runs up to
//! the first later token shaped like a size label (`(<n>x)?<n>(.<n>)?<letter>`: `8x7B`, `1.5B`,
//! `270m`), which may be followed by one attribute (`<letters><n>(.<n>)?<letters>`: `A3B`,
//! `ContextLength4k`); the tokens between it and the version or encoding are the fine-tune.
//! Without a size label, everything before the version or encoding is the base name (the
//! document's regular expression does the same). So parsing never loses anything —
//! `FileName::parse(s)?.to_string() == s` always — but a name made from parts that look like
//! other parts (a fine-tune without a size label, a version without its `v`) parses into
//! different parts.

// Reachable for the differential tests against Python (tests/naming.rs), not part of the API.
#[doc(hidden)]
pub mod python;

use crate::params;
use crate::{Gguf, Value};
use std::fmt;

/// The auxiliary-module prefix of a file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sidecar {
    /// `mmproj`: a multimodal projector (vision or audio encoder) for a base model.
    Mmproj,
    /// `mtp`: multi-token-prediction heads, a draft module for a base model.
    Mtp,
}

impl Sidecar {
    /// As written in file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Sidecar::Mmproj => "mmproj",
            Sidecar::Mtp => "mtp",
        }
    }
}

/// The kind of file, when it is not a plain model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelType {
    /// `LoRA`: a LoRA adapter.
    LoRA,
    /// `vocab`: only the vocabulary and metadata.
    Vocab,
}

impl ModelType {
    /// As written in file names.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelType::LoRA => "LoRA",
            ModelType::Vocab => "vocab",
        }
    }
}

/// `NNNNN-of-NNNNN`: this file's position among the shards of one model, counting from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    /// This shard, from 1.
    pub number: u32,
    /// How many shards.
    pub total: u32,
}

/// A file name's parts. Each string is as it appears in the name; [`fmt::Display`] joins the
/// parts with `-` and adds `.gguf`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileName {
    /// `mmproj-` or `mtp-` in front.
    pub sidecar: Option<Sidecar>,
    /// The model's base name (may contain `-`).
    pub base_name: String,
    /// Parameter class such as `8x7B`, `270M`, `1.5B`, `30B-A3B`.
    pub size_label: Option<String>,
    /// What it was fine-tuned for, such as `Instruct` (may contain `-`).
    pub finetune: Option<String>,
    /// Such as `v0.1`.
    pub version: Option<String>,
    /// The weights' encoding, such as `Q4_K_M`, `F16`, `BF16`, `IQ2_XXS`.
    pub encoding: Option<String>,
    /// `LoRA` or `vocab`.
    pub model_type: Option<ModelType>,
    /// `00001-of-00003`.
    pub shard: Option<Shard>,
}

/// Why a name is not a file name of the convention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    /// It does not end in `.gguf`.
    NoExtension,
    /// Nothing before `.gguf` (or after the sidecar prefix).
    NoBaseName,
    /// Two `-` in a row, or one at the start or end.
    EmptyPart,
    /// It contains a `/` (or a NUL): a path, not a file name.
    NotAFileName,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameError::NoExtension => "it does not end in .gguf",
            NameError::NoBaseName => "it has no base name",
            NameError::EmptyPart => "it has an empty part (a '-' at an end or two in a row)",
            NameError::NotAFileName => "it contains '/' or NUL",
        })
    }
}

impl std::error::Error for NameError {}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(sidecar) = self.sidecar {
            write!(f, "{}-", sidecar.as_str())?;
        }
        f.write_str(&self.base_name)?;
        for part in [
            &self.size_label,
            &self.finetune,
            &self.version,
            &self.encoding,
        ]
        .into_iter()
        .flatten()
        {
            write!(f, "-{part}")?;
        }
        if let Some(t) = self.model_type {
            write!(f, "-{}", t.as_str())?;
        }
        if let Some(Shard { number, total }) = self.shard {
            write!(f, "-{}", crate::shards::position_text(number, total))?;
        }
        f.write_str(".gguf")
    }
}

impl FileName {
    /// Parses a file name (no directories) into its parts; see the module documentation for
    /// the rules. Whatever it accepts, it formats back to the same string.
    pub fn parse(name: &str) -> Result<FileName, NameError> {
        if name.contains(['/', '\0']) {
            return Err(NameError::NotAFileName);
        }
        let stem = name.strip_suffix(".gguf").ok_or(NameError::NoExtension)?;
        let (sidecar, rest) = if let Some(rest) = stem.strip_prefix("mmproj-") {
            (Some(Sidecar::Mmproj), rest)
        } else if let Some(rest) = stem.strip_prefix("mtp-") {
            (Some(Sidecar::Mtp), rest)
        } else {
            (None, stem)
        };
        if rest.is_empty() {
            return Err(NameError::NoBaseName);
        }
        let mut tokens: Vec<&str> = rest.split('-').collect();
        if tokens.iter().any(|t| t.is_empty()) {
            return Err(NameError::EmptyPart);
        }

        // From the right, always leaving at least one token for the base name.
        let mut shard = None;
        if let [.., _, number, "of", total] = tokens[..] {
            let part = crate::shards::position_part;
            if let (Some(number), Some(total)) = (part(number), part(total)) {
                shard = Some(Shard { number, total });
                tokens.truncate(tokens.len() - 3);
            }
        }
        let mut model_type = None;
        if let [.., _, last] = tokens[..] {
            model_type = match last {
                "LoRA" => Some(ModelType::LoRA),
                "vocab" => Some(ModelType::Vocab),
                _ => None,
            };
            if model_type.is_some() {
                tokens.pop();
            }
        }
        let (mut version, mut encoding) = (None, None);
        match tokens[..] {
            [.., _, last] if is_version(last) => {
                version = Some(last.to_owned());
                tokens.pop();
            }
            [.., _, before, last] if is_version(before) && is_word(last) => {
                encoding = Some(last.to_owned());
                version = Some(before.to_owned());
                tokens.truncate(tokens.len() - 2);
            }
            [.., _, last] if looks_like_encoding(last) && !is_size_attribute(&tokens) => {
                encoding = Some(last.to_owned());
                tokens.pop();
                if let [.., _, last] = tokens[..] {
                    if is_version(last) {
                        version = Some(last.to_owned());
                        tokens.pop();
                    }
                }
            }
            _ => {}
        }

        // From the left: base name, size label (and one attribute), fine-tune.
        let size_at = (1..tokens.len()).find(|&i| is_size_label(tokens[i]));
        let (base, size_label, finetune) = match size_at {
            None => (&tokens[..], None, &[][..]),
            Some(i) => {
                let end = if tokens.get(i + 1).is_some_and(|t| is_attribute(t)) {
                    i + 2
                } else {
                    i + 1
                };
                (&tokens[..i], Some(tokens[i..end].join("-")), &tokens[end..])
            }
        };
        Ok(FileName {
            sidecar,
            base_name: base.join("-"),
            size_label,
            finetune: (!finetune.is_empty()).then(|| finetune.join("-")),
            version,
            encoding,
            model_type,
            shard,
        })
    }

    /// The version, or `v1.0` when the name has none (the document: "If model is missing a
    /// version number then assume v1.0").
    pub fn version_or_default(&self) -> &str {
        self.version.as_deref().unwrap_or("v1.0")
    }

    /// The parts that differ from `expected`'s, in name order.
    pub fn differences(&self, expected: &FileName) -> Vec<Difference> {
        let opt = |s: &Option<String>| s.clone();
        let parts: [(&'static str, Option<String>, Option<String>); 8] = [
            (
                "sidecar",
                self.sidecar.map(|s| s.as_str().to_owned()),
                expected.sidecar.map(|s| s.as_str().to_owned()),
            ),
            (
                "base name",
                Some(self.base_name.clone()),
                Some(expected.base_name.clone()),
            ),
            (
                "size label",
                opt(&self.size_label),
                opt(&expected.size_label),
            ),
            ("fine-tune", opt(&self.finetune), opt(&expected.finetune)),
            ("version", opt(&self.version), opt(&expected.version)),
            ("encoding", opt(&self.encoding), opt(&expected.encoding)),
            (
                "type",
                self.model_type.map(|t| t.as_str().to_owned()),
                expected.model_type.map(|t| t.as_str().to_owned()),
            ),
            (
                "shard",
                self.shard.map(shard_text),
                expected.shard.map(shard_text),
            ),
        ];
        parts
            .into_iter()
            .filter(|(_, a, e)| a != e)
            .map(|(part, actual, expected)| Difference {
                part,
                actual,
                expected,
            })
            .collect()
    }
}

fn shard_text(s: Shard) -> String {
    crate::shards::position_text(s.number, s.total)
}

/// One part where a file name differs from the conventional one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Which part: `sidecar`, `base name`, `size label`, `fine-tune`, `version`,
    /// `encoding`, `type` or `shard`.
    pub part: &'static str,
    /// The part in the actual name.
    pub actual: Option<String>,
    /// The part in the conventional name.
    pub expected: Option<String>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |s: &Option<String>| match s {
            Some(s) => format!("{s:?}"),
            None => "none".to_owned(),
        };
        write!(
            f,
            "{}: {} in the file name, {} from the metadata",
            self.part,
            show(&self.actual),
            show(&self.expected)
        )
    }
}

/// Compares a file's actual name (no directories) with its conventional name: `Ok` with the
/// parts that differ (empty when the names are equal), or why the actual name does not parse.
pub fn compare(actual: &str, expected: &FileName) -> Result<Vec<Difference>, NameError> {
    if actual == expected.to_string() {
        return Ok(Vec::new());
    }
    Ok(FileName::parse(actual)?.differences(expected))
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn letters(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic())
}

/// `\d+(\.\d+)?`
fn decimal(s: &str) -> bool {
    match s.split_once('.') {
        Some((i, f)) => digits(i) && digits(f),
        None => digits(s),
    }
}

/// `v\d+(\.\d+)*`
fn is_version(s: &str) -> bool {
    s.strip_prefix('v')
        .is_some_and(|rest| rest.split('.').all(digits))
}

/// `[A-Za-z0-9_]+`
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `(\d+x)?(\d+\.)?\d+[A-Za-z]`
fn is_size_label(s: &str) -> bool {
    let count_scale = |s: &str| {
        s.char_indices()
            .last()
            .is_some_and(|(i, c)| c.is_ascii_alphabetic() && decimal(&s[..i]))
    };
    count_scale(s)
        || s.split_once('x')
            .is_some_and(|(n, rest)| digits(n) && count_scale(rest))
}

/// `[A-Za-z]+(\d+\.)?\d+[A-Za-z]+`
fn is_attribute(s: &str) -> bool {
    let Some(start) = s.find(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    let Some(end) = s.rfind(|c: char| c.is_ascii_digit()) else {
        return false;
    };
    letters(&s[..start]) && decimal(&s[start..=end]) && letters(&s[end + 1..])
}

/// The last token is an attribute of the size label just before it (`30B-A3B`).
fn is_size_attribute(tokens: &[&str]) -> bool {
    match tokens {
        [.., _, size, last] => is_size_label(size) && is_attribute(last),
        _ => false,
    }
}

/// A quantization name, in any case: `[IT]?Q\d+(_[A-Z0-9]+)*`, `B?FP?\d+`, `(MX|NV)FP\d+`,
/// `KQ\d+`.
fn looks_like_encoding(s: &str) -> bool {
    let up = s.to_ascii_uppercase();
    let q = |s: &str| {
        s.strip_prefix('Q').is_some_and(|rest| {
            let mut parts = rest.split('_');
            parts.next().is_some_and(digits)
                && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()))
        })
    };
    let float = |s: &str| {
        let s = s.strip_prefix('B').unwrap_or(s);
        s.strip_prefix('F')
            .map(|s| s.strip_prefix('P').unwrap_or(s))
            .is_some_and(digits)
    };
    q(&up)
        || up.strip_prefix(['I', 'T']).is_some_and(q)
        || float(&up)
        || ["MXFP", "NVFP", "KQ"]
            .iter()
            .any(|p| up.strip_prefix(p).is_some_and(digits))
}

/// `s.strip().replace(' ', '-')`
fn dashed(s: &str) -> String {
    python::strip(s).replace(' ', "-")
}

/// gguf-py's `naming_convention(model_name, base_name, finetune_string, version_string,
/// size_label, output_type, model_type)`: the stem of the conventional file name (no `.gguf`).
///
/// The name is `base_name`, else `model_name` (stripped, spaces and `/` made `-`), else
/// `ggml-model`; then `-size_label` as given; `-finetune`, `-version` and `-model_type`
/// stripped with spaces made `-`; `-output_type` the same and upper-cased. `None` leaves a
/// part out; an empty string does not (`Some("")` gives `-` and nothing).
pub fn naming_convention(
    model_name: Option<&str>,
    base_name: Option<&str>,
    finetune: Option<&str>,
    version: Option<&str>,
    size_label: Option<&str>,
    output_type: Option<&str>,
    model_type: Option<&str>,
) -> String {
    let name = match base_name.or(model_name) {
        Some(n) => dashed(n).replace('/', "-"),
        None => "ggml-model".to_owned(),
    };
    let parts = [
        size_label.map(str::to_owned),
        finetune.map(dashed),
        version.map(dashed),
        output_type.map(|s| python::upper(&dashed(s))),
        model_type.map(dashed),
    ];
    let mut out = name;
    for part in parts.iter().flatten() {
        out.push('-');
        out.push_str(part);
    }
    out
}

/// A non-empty string value.
fn string<'a, B: AsRef<[u8]>>(file: &'a Gguf<B>, key: &str) -> Option<&'a str> {
    match file.get(key) {
        Some(Value::String(s)) if !s.as_bytes().is_empty() => s.as_str().ok(),
        _ => None,
    }
}

fn integer<B: AsRef<[u8]>>(file: &Gguf<B>, key: &str) -> Option<u64> {
    match file.get(key)? {
        Value::Uint8(v) => Some(u64::from(*v)),
        Value::Uint16(v) => Some(u64::from(*v)),
        Value::Uint32(v) => Some(u64::from(*v)),
        Value::Uint64(v) => Some(*v),
        Value::Int8(v) => u64::try_from(*v).ok(),
        Value::Int16(v) => u64::try_from(*v).ok(),
        Value::Int32(v) => u64::try_from(*v).ok(),
        Value::Int64(v) => u64::try_from(*v).ok(),
        _ => None,
    }
}

/// The conventional name of a decoded file, as parts: what llama.cpp's converter
/// (`convert_hf_to_gguf.py`, `prepare_metadata`) would have named it, from its metadata.
/// `output_type` is the encoding (the converter's `ftype.name.partition("_")[2]`, such as
/// `Q4_K_M` for `MOSTLY_Q4_K_M`), from `general.file_type`.
///
/// - Parts: `general.name`, `general.basename`, `general.finetune`, `general.version`,
///   `general.size_label` (string values; a missing, empty or non-string value is absent —
///   gguf-py never writes empty strings).
/// - Size label: `general.size_label`; when absent, computed from the tensors
///   ([`params::count`]) as the converter does — only when the count is positive, so never for
///   a LoRA adapter — and not for a shard, whose tensors are only part of the model.
/// - A projector (`general.type` `mmproj`, or `general.architecture` `clip`) gets the `mmproj-`
///   sidecar and no size label, as the converter's `MmprojModel` names it.
/// - A LoRA adapter (a `*.lora_a` tensor, so gguf-py's total is negative) gets the type
///   `LoRA`, as the converter decides it; `general.type` is not consulted.
/// - A file without tensors (other than a projector or an adapter by `general.type`) is a
///   vocabulary file: type `vocab`, no size label and no encoding, as `--vocab-only` names it.
/// - A shard (`split.count` above 1, `split.no` counting from 0) gets `-NNNNN-of-NNNNN`, as
///   gguf-py's and `llama-gguf-split`'s shard names do.
/// - The `mtp-` sidecar is never derived: no metadata marks a draft module.
pub fn conventional_file_name<B: AsRef<[u8]>>(
    file: &Gguf<B>,
    output_type: Option<&str>,
) -> FileName {
    let s = |key| string(file, key);
    let tensors = &file.header().tensor_infos;
    let counted = params::count(tensors).unwrap_or_default();
    let general_type = s("general.type");
    let mmproj = general_type == Some("mmproj") || s("general.architecture") == Some("clip");
    let vocab = !mmproj && tensors.is_empty() && matches!(general_type, None | Some("model"));
    let lora = !mmproj && counted.lora && counted.total > 0;
    let shard = match (
        integer(file, crate::shards::SPLIT_NO),
        integer(file, crate::shards::SPLIT_COUNT),
    ) {
        (Some(no), Some(count)) if count > 1 => Some(Shard {
            number: u32::try_from(no.saturating_add(1)).unwrap_or(u32::MAX),
            total: u32::try_from(count).unwrap_or(u32::MAX),
        }),
        _ => None,
    };
    let size_label = if mmproj || vocab {
        None
    } else if let Some(label) = s("general.size_label") {
        Some(label.to_owned())
    } else if !counted.lora && counted.total > 0 && shard.is_none() {
        Some(counted.size_label())
    } else {
        None
    };
    let base_name = match s("general.basename").or(s("general.name")) {
        Some(n) => dashed(n).replace('/', "-"),
        None => "ggml-model".to_owned(),
    };
    FileName {
        sidecar: mmproj.then_some(Sidecar::Mmproj),
        base_name,
        size_label,
        finetune: s("general.finetune").map(dashed),
        version: s("general.version").map(dashed),
        encoding: output_type
            .filter(|_| !vocab)
            .map(|t| python::upper(&dashed(t))),
        model_type: if vocab {
            Some(ModelType::Vocab)
        } else if lora {
            Some(ModelType::LoRA)
        } else {
            None
        },
        shard,
    }
}

/// [`conventional_file_name`] as a string, such as `Qwen3-30B-A3B-Instruct-Q4_K_M.gguf`.
pub fn conventional_name<B: AsRef<[u8]>>(file: &Gguf<B>, output_type: Option<&str>) -> String {
    conventional_file_name(file, output_type).to_string()
}

/// What `ggufrw name FILE [--check]` prints: the conventional name (the encoding from
/// `general.file_type`), and with `check` a line per part where the actual file name differs;
/// and whether it differs.
pub fn name_report<B: AsRef<[u8]>>(
    path: &std::path::Path,
    file: &Gguf<B>,
    check: bool,
) -> (String, bool) {
    let output_type = match file.get("general.file_type") {
        Some(crate::Value::Uint32(id)) => {
            crate::keys::FileType::from_repr(*id).map(|t| t.encoding())
        }
        _ => None,
    };
    let expected = conventional_file_name(file, output_type);
    let mut out = format!("{expected}\n");
    let mut differs = false;
    if check {
        let actual = (path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match compare(&actual, &expected) {
            Ok(diffs) => {
                for d in &diffs {
                    out.push_str(&format!("{}: {d}\n", path.display()));
                }
                differs = !diffs.is_empty();
            }
            Err(e) => {
                out.push_str(&format!(
                    "{}: {actual:?} does not follow the naming convention: {e}\n",
                    path.display()
                ));
                differs = true;
            }
        }
    }
    (out, differs)
}
