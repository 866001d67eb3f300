//! Validation: the rules about meaning that decoding leaves out, under two profiles.
//!
//! | check | `spec` | `ggml` |
//! |---|---|---|
//! | version 1 | info | error (ggml no longer reads it) |
//! | a version after 3 | – | error (ggml reads 2 and 3) |
//! | big-endian | – | error (ggml reads little-endian only) |
//! | magic spelled `FUGG` | warning | error |
//! | empty key, duplicate key | error | error |
//! | key, string or tensor name not UTF-8 | error | warning (ggml keeps the bytes) |
//! | bool stored as a byte other than 0 or 1 | error | warning (ggml reads it as true) |
//! | key longer than 65,535 bytes | error | – |
//! | key not lower-case dotted snake_case | warning | warning |
//! | `general.alignment` not a multiple of 8 | error | – |
//! | `general.alignment` not a power of two | – | error |
//! | a key that is `general.alignment` up to a NUL byte, first of them, and not the alignment in force | – | error |
//! | nested arrays | – | error |
//! | a value type ggml does not know (id 13 on) | – | error |
//! | string over 1 GiB, array over 2^30 elements | – | error |
//! | tensor name longer than 64 bytes (ggml: 63) | error | error |
//! | duplicate tensor name | error | error |
//! | dimension ≥ 2^63 | error | error |
//! | unknown or retired type id | error | error |
//! | a type id ggml does not have (43 on) | – | error |
//! | `ne[0]` not whole blocks, size overflow | error | error |
//! | offset not aligned | error | error |
//! | data outside the file | error | error (category `load`) |
//! | the last tensor's padding missing at the end of the file | – | error (category `load`) |
//! | a file with tensors that ends before its data section (padding cut) | – | error |
//! | a shape whose dimensions above 1 multiply past INT64_MAX (ggml aborts) | – | error |
//! | tensors overlapping | error | error |
//! | data not contiguous in declaration order | – | error |
//! | non-zero padding | warning | – |
//! | bytes after the last tensor | info | – |
//!
//! And, under both profiles, the meaning of the standard keys ([`semantic`]).
//!
//! Under `ggml`, category `structure` holds exactly what ggml's header read
//! (`gguf_init_from_file` with `no_alloc`) refuses, and category `load` what its full load
//! (and llama.cpp's loader, which checks each tensor's extent) refuses on top: data that the
//! file does not hold. The ggml peer tests hold the profile to ggml itself.

pub mod semantic;

use crate::file::Gguf;
use crate::quant::{type_name, GgmlType};
use ggufrw_schema::{
    ArrayValues, ByteOrder, GgufBool, Header, Layout, Magic, TextRef, Value, Width, ALIGNMENT_KEY,
};
use std::collections::HashMap;
use std::fmt;

/// Which rules to check.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    strum::EnumString,
    strum::Display,
    strum::VariantNames,
    strum::EnumIter,
)]
#[strum(serialize_all = "lowercase")]
pub enum Profile {
    /// What the GGUF spec says.
    #[default]
    Spec,
    /// What ggml's reader (and so llama.cpp) accepts.
    Ggml,
}

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum Severity {
    /// Worth knowing, harmless.
    Info,
    /// Allowed, but unusual or against a convention.
    Warning,
    /// The profile rejects the file.
    Error,
}

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum Category {
    /// The container: layout, limits, uniqueness (the profiles differ here).
    Structure,
    /// What the standard keys mean ([`semantic`]), the same under both profiles.
    Meaning,
    /// Under `ggml`: what ggml's full load (and llama.cpp's loader) refuses although its
    /// header read accepts the file: tensor data the file does not hold.
    Load,
}

/// One finding: severity, field path, byte offset, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// Structure or meaning.
    pub category: Category,
    /// The field, as in decode errors (`tensor[2].offset`).
    pub path: String,
    /// Byte offset of the field.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl Finding {
    /// Whether it is an error about the container itself.
    pub fn is_structural_error(&self) -> bool {
        self.severity == Severity::Error && self.category == Category::Structure
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} @ 0x{:x}: {}: {}",
            self.path, self.offset, self.severity, self.message
        )
    }
}

/// ggml's longest string (`GGML_MAX_STRING_LENGTH`... as its reader enforces it).
const GGML_MAX_STRING: u64 = 1 << 30;
/// ggml's largest array.
const GGML_MAX_ARRAY: u64 = 1 << 30;
/// The pair ggml reads as `general.alignment`: the first whose key is those bytes up to its
/// first NUL byte, or all of it (ggml looks keys up with `strcmp`).
pub fn ggml_alignment_key(header: &Header) -> Option<usize> {
    header.metadata.iter().position(|kv| {
        let key = kv.key.text_ref().as_bytes();
        let cut = key.iter().position(|&b| b == 0).unwrap_or(key.len());
        &key[..cut] == ALIGNMENT_KEY.as_bytes()
    })
}

/// ggml's longest tensor name (`GGML_MAX_NAME` 64, less the NUL).
const GGML_MAX_NAME: usize = 63;
/// The spec's longest tensor name.
const SPEC_MAX_NAME: usize = 64;
/// The spec's longest key.
const SPEC_MAX_KEY: usize = 65_535;
/// The versions ggml's reader accepts (`gguf_init_from_file_impl`): ggml's own list, which a
/// version added to the format's table does not join until ggml reads it.
pub const GGML_VERSIONS: [u32; 2] = [2, 3];
/// How many value types ggml's reader knows (`GGUF_TYPE_COUNT`): ids from here on are new to
/// it, whatever the format's table adds.
const GGML_VALUE_TYPES: u32 = 13;

/// How many tensor type ids ggml has (`GGML_TYPE_COUNT`): a type added to the table from here
/// on is one ggml refuses until it has it.
pub const GGML_TYPE_COUNT: u32 = 43;

/// The value types ggml reads (ids below its `GGUF_TYPE_COUNT`): what a file meant to pass the
/// `ggml` profile may hold.
pub fn ggml_value_types() -> Vec<ggufrw_schema::ValueType> {
    use strum::IntoEnumIterator;
    (ggufrw_schema::ValueType::iter())
        .filter(|&t| (t as u32) < GGML_VALUE_TYPES)
        .collect()
}

/// Validates a decoded file.
pub fn validate<B: AsRef<[u8]>>(file: &Gguf<B>, profile: Profile) -> Vec<Finding> {
    validate_header(
        file.header(),
        file.layout(),
        file.bytes().len() as u64,
        profile,
    )
}

/// Validates a header whose file is `file_len` bytes long.
pub fn validate_header(
    header: &Header,
    layout: &Layout,
    file_len: u64,
    profile: Profile,
) -> Vec<Finding> {
    let mut v = Validator {
        profile,
        findings: Vec::new(),
        width: header.ctx().width(),
    };
    v.file(header);
    v.metadata(header, layout);
    v.tensors(header, layout, file_len);
    semantic::check(header, layout, &mut |severity, path, offset, message| {
        v.findings.push(Finding {
            severity,
            category: Category::Meaning,
            path,
            offset,
            message,
        })
    });
    v.findings
}

/// `tensor[i].field`, formatted only when a finding names it.
#[derive(Clone, Copy)]
struct TensorField(usize, &'static str);

impl fmt::Display for TensorField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tensor[{}].{}", self.0, self.1)
    }
}

struct Validator {
    profile: Profile,
    findings: Vec<Finding>,
    /// The width of length and count fields.
    width: Width,
}

impl Validator {
    /// Records a finding if `profiles` includes the active one; the path is only formatted
    /// then, so that a clean file of a million keys allocates no paths.
    fn report(
        &mut self,
        profiles: &[Profile],
        severity: Severity,
        path: impl fmt::Display,
        offset: u64,
        message: impl Into<String>,
    ) {
        self.report_in(
            Category::Structure,
            profiles,
            severity,
            path,
            offset,
            message,
        );
    }

    /// [`Validator::report`] in another category.
    fn report_in(
        &mut self,
        category: Category,
        profiles: &[Profile],
        severity: Severity,
        path: impl fmt::Display,
        offset: u64,
        message: impl Into<String>,
    ) {
        if profiles.contains(&self.profile) {
            self.findings.push(Finding {
                severity,
                category,
                path: path.to_string(),
                offset,
                message: message.into(),
            });
        }
    }

    fn file(&mut self, header: &Header) {
        use Profile::*;
        if header.version == 1 {
            self.report(
                &[Spec],
                Severity::Info,
                "version",
                4,
                "version 1 is obsolete",
            );
        }
        // ggml's own list, not the table's: a version added to the format is one ggml refuses
        // until it says otherwise.
        if !GGML_VERSIONS.contains(&header.version) {
            let message = match header.version {
                1 => "ggml no longer reads version 1".to_owned(),
                v => format!(
                    "ggml reads versions {}, not {v}",
                    GGML_VERSIONS.map(|v| v.to_string()).join(" and ")
                ),
            };
            self.report(&[Ggml], Severity::Error, "version", 4, message);
        }
        if header.byte_order == ByteOrder::Big {
            self.report(
                &[Ggml],
                Severity::Error,
                "version",
                4,
                "ggml reads little-endian files only",
            );
        }
        if header.magic == Magic::Fugg {
            let msg = "magic is spelled FUGG (byte-reversed)";
            self.report(&[Spec], Severity::Warning, "magic", 0, msg);
            self.report(&[Ggml], Severity::Error, "magic", 0, msg);
        }
    }

    fn metadata(&mut self, header: &Header, layout: &Layout) {
        use Profile::*;
        let mut seen: HashMap<Name<'_>, usize> = HashMap::with_capacity(header.metadata.len());
        for (i, kv) in header.metadata.iter().enumerate() {
            let at = layout.kv_offsets[i];
            let key = kv.key.text_ref();
            let path = Field("kv", i, "key");
            self.text(key, &path, at + self.width.bytes(), "key");
            if key.is_empty() {
                self.report(&[Spec, Ggml], Severity::Error, path, at, "key is empty");
            } else if let Some(first) = seen.insert(Name(key.as_bytes()), i) {
                seen.insert(Name(key.as_bytes()), first);
                self.report(
                    &[Spec, Ggml],
                    Severity::Error,
                    path,
                    at,
                    format!("duplicate key {key:?} (first at kv[{first}])"),
                );
            }
            if key.len() > SPEC_MAX_KEY {
                self.report(
                    &[Spec],
                    Severity::Error,
                    path,
                    at,
                    format!("key is {} bytes, at most {SPEC_MAX_KEY}", key.len()),
                );
            } else if !key.is_empty() && key.is_utf8() && !is_conventional_key(key.as_bytes()) {
                self.report(
                    &[Spec, Ggml],
                    Severity::Warning,
                    path,
                    at,
                    format!("key {key:?} is not lower-case snake_case parts separated by dots"),
                );
            }
            if key.len() as u64 > GGML_MAX_STRING {
                self.report(
                    &[Ggml],
                    Severity::Error,
                    path,
                    at,
                    "key is longer than ggml's 1 GiB limit",
                );
            }
            let value_at = layout.kv_value_offsets[i];
            let value_path = Field("kv", i, "value");
            self.value(&kv.value, value_path, value_at);
            self.bytes_of(&kv.value, &value_path, value_at + 4);
            if key == ALIGNMENT_KEY && seen.get(&Name(key.as_bytes())) == Some(&i) {
                if let Value::Uint32(a) = kv.value {
                    if a % 8 != 0 {
                        self.report(
                            &[Spec],
                            Severity::Error,
                            value_path,
                            value_at,
                            format!("alignment {a} is not a multiple of 8"),
                        );
                    }
                    if !a.is_power_of_two() {
                        self.report(
                            &[Ggml],
                            Severity::Error,
                            value_path,
                            value_at,
                            format!("alignment {a} is not a power of two"),
                        );
                    }
                }
            }
        }
        self.alignment_as_ggml_finds_it(header, layout);
    }

    /// ggml finds `general.alignment` by comparing C strings, so the first key that reads
    /// `general.alignment` up to a NUL byte is its alignment key, even where the spec's (the
    /// whole key) is another or none. Such a key is judged as ggml judges its alignment.
    fn alignment_as_ggml_finds_it(&mut self, header: &Header, layout: &Layout) {
        let Some(i) = ggml_alignment_key(header) else {
            return;
        };
        let kv = &header.metadata[i];
        if kv.key.text_ref().as_bytes() == ALIGNMENT_KEY.as_bytes() {
            return;
        }
        let why = match kv.value {
            Value::Uint32(a) if a.is_power_of_two() && a == header.alignment() => return,
            Value::Uint32(a) if a.is_power_of_two() => format!(
                "lays the data out at alignment {a}, not {}",
                header.alignment()
            ),
            Value::Uint32(a) => format!("refuses its alignment {a}, not a power of two"),
            ref other => format!(
                "refuses it, being {}, not uint32",
                other.value_type().name()
            ),
        };
        self.report(
            &[Profile::Ggml],
            Severity::Error,
            Field("kv", i, "key"),
            layout.kv_offsets[i],
            format!(
                "ggml takes this key for {ALIGNMENT_KEY} (it compares keys up to their first NUL byte) and {why}"
            ),
        );
    }

    /// A string that is not UTF-8 (`at`: where its bytes start): the spec's error, what ggml
    /// reads. `what`: the key, the string, the name.
    fn text(&mut self, text: TextRef<'_>, path: &dyn fmt::Display, at: u64, what: &str) {
        use Profile::*;
        let Err(why) = text.as_str() else {
            return;
        };
        let at = at + why.valid_up_to as u64;
        let byte = text.as_bytes()[why.valid_up_to];
        let spec = format!(
            "{what} is not UTF-8: byte 0x{byte:02x} at {}",
            why.valid_up_to
        );
        self.report(&[Spec], Severity::Error, path, at, spec);
        let ggml = format!(
            "{what} is not UTF-8 (byte 0x{byte:02x} at {}): ggml reads its bytes as they are",
            why.valid_up_to
        );
        self.report(&[Ggml], Severity::Warning, path, at, ggml);
    }

    /// A bool stored as neither 0 nor 1 (at `at`), `more` others like it after it.
    fn bool_byte(&mut self, b: GgufBool, path: &dyn fmt::Display, at: u64, more: usize) {
        use Profile::*;
        let also = match more {
            0 => String::new(),
            n => format!(" ({n} more such bools follow)"),
        };
        let byte = b.byte();
        let spec = format!("bool stored as {byte}, the spec allows 0 or 1{also}");
        self.report(&[Spec], Severity::Error, path, at, spec);
        let ggml = format!("bool stored as {byte}: ggml reads any byte but 0 as true{also}");
        self.report(&[Ggml], Severity::Warning, path, at, ggml);
    }

    /// The strings and bools of a value (its payload at `at`) that are bytes the spec does not
    /// allow: each scalar, and in an array the first such element with a count of the rest
    /// (a vocabulary of bad strings is one finding, not 100,000).
    fn bytes_of(&mut self, value: &Value, path: &dyn fmt::Display, at: u64) {
        match value {
            Value::String(s) => self.text(s.text_ref(), path, at + self.width.bytes(), "string"),
            Value::Bool(b) if !b.is_valid() => self.bool_byte(*b, path, at, 0),
            Value::Array(a) => self.array_bytes(&a.values, path, at + 4 + self.width.bytes()),
            _ => {}
        }
    }

    /// [`Validator::bytes_of`] for an array's elements, which start at `at`.
    fn array_bytes(&mut self, values: &ArrayValues, path: &dyn fmt::Display, at: u64) {
        match values {
            ArrayValues::Bool(v) => {
                let mut bad = v.iter().enumerate().filter(|(_, b)| !b.is_valid());
                if let Some((k, b)) = bad.next() {
                    let more = bad.count();
                    self.bool_byte(*b, &Element(path, k), at + k as u64, more);
                }
            }
            ArrayValues::String(v) => {
                let mut start = at;
                let mut first = None;
                let mut more = 0usize;
                for (k, s) in v.iter().enumerate() {
                    if !s.is_utf8() {
                        match first {
                            None => first = Some((k, s, start)),
                            Some(_) => more += 1,
                        }
                    }
                    start += self.width.bytes() + s.len() as u64;
                }
                if let Some((k, s, start)) = first {
                    let what = match more {
                        0 => "string".to_owned(),
                        n => format!("string (and {n} more strings of the array)"),
                    };
                    self.text(s, &Element(path, k), start + self.width.bytes(), &what);
                }
            }
            ArrayValues::Array(inner) => {
                let mut start = at;
                for (k, a) in inner.iter().enumerate() {
                    let elements = start + 4 + self.width.bytes();
                    self.array_bytes(&a.values, &Element(path, k), elements);
                    start = elements + a.values.encoded_len(self.width);
                }
            }
            _ => {}
        }
    }

    /// ggml's limits on values: no nesting, bounded strings and arrays.
    fn value(&mut self, value: &Value, path: Field<'_>, at: u64) {
        let too_long = |s: TextRef<'_>| s.len() as u64 > GGML_MAX_STRING;
        let ggml = |this: &mut Self, message: String| {
            this.report(&[Profile::Ggml], Severity::Error, path, at, message)
        };
        let element = match value {
            Value::Array(a) => Some(a.values.element_type()),
            _ => None,
        };
        for ty in std::iter::once(value.value_type()).chain(element) {
            if ty as u32 >= GGML_VALUE_TYPES {
                ggml(
                    self,
                    format!(
                        "value type {} ({}): ggml knows ids below {GGML_VALUE_TYPES}",
                        ty.name(),
                        ty as u32
                    ),
                );
            }
        }
        match value {
            Value::String(s) if too_long(s.text_ref()) => {
                ggml(self, "string is longer than ggml's 1 GiB limit".into());
            }
            Value::Array(a) => {
                if a.values.len() as u64 > GGML_MAX_ARRAY {
                    ggml(
                        self,
                        format!(
                            "array of {} elements, ggml reads at most 2^30",
                            a.values.len()
                        ),
                    );
                }
                match &a.values {
                    ArrayValues::Array(_) => ggml(self, "nested arrays: ggml rejects them".into()),
                    ArrayValues::String(v) if v.iter().any(too_long) => {
                        ggml(
                            self,
                            "array holds a string longer than ggml's 1 GiB limit".into(),
                        );
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn tensors(&mut self, header: &Header, layout: &Layout, file_len: u64) {
        use Profile::*;
        let alignment = u64::from(layout.alignment);
        let data_len = file_len.saturating_sub(layout.data_offset);
        let mut names: HashMap<Name<'_>, usize> = HashMap::with_capacity(header.tensor_infos.len());
        // (offset, end, index) of every tensor whose extent is known, for the overlap check.
        let mut extents: Vec<(u64, u64, usize)> = Vec::with_capacity(header.tensor_infos.len());
        let mut expected_offset = Some(0u64);
        let mut past_end = false;
        for (i, info) in header.tensor_infos.iter().enumerate() {
            let at = layout.tensor_info_offsets[i];
            let fields = layout.tensor_fields[i];
            let (dims_at, type_at, offset_at) =
                (fields.n_dimensions, fields.ggml_type, fields.offset);
            let name = info.name.text_ref();
            let path = |field: &'static str| TensorField(i, field);
            self.text(name, &path("name"), at + self.width.bytes(), "name");
            if let Some(first) = names.insert(Name(name.as_bytes()), i) {
                names.insert(Name(name.as_bytes()), first);
                self.report(
                    &[Spec, Ggml],
                    Severity::Error,
                    path("name"),
                    at,
                    format!("duplicate tensor name {name:?} (first at tensor[{first}])"),
                );
            }
            if name.len() > SPEC_MAX_NAME {
                self.report(
                    &[Spec],
                    Severity::Error,
                    path("name"),
                    at,
                    format!(
                        "name is {} bytes, the spec allows {SPEC_MAX_NAME}",
                        name.len()
                    ),
                );
            }
            if name.len() > GGML_MAX_NAME {
                self.report(
                    &[Ggml],
                    Severity::Error,
                    path("name"),
                    at,
                    format!("name is {} bytes, ggml allows {GGML_MAX_NAME}", name.len()),
                );
            }
            if let Some(d) = info.dimensions.iter().position(|&ne| ne > i64::MAX as u64) {
                self.report(
                    &[Spec, Ggml],
                    Severity::Error,
                    path("dimensions"),
                    dims_at,
                    format!("ne[{d}] = {} does not fit int64", info.dimensions[d]),
                );
            } else if let Some(d) = ggml_new_tensor_aborts(&info.dimensions) {
                self.report(
                    &[Ggml],
                    Severity::Error,
                    path("dimensions"),
                    dims_at,
                    format!(
                        "ggml aborts on this shape: ggml_new_tensor multiplies the dimensions above 1 and ne[{d}] = {} takes the product past INT64_MAX (its header check, which also multiplies by 0, passes it)",
                        info.dimensions[d]
                    ),
                );
            }
            let size = match GgmlType::from_id(info.ggml_type) {
                None => {
                    self.report(
                        &[Spec, Ggml],
                        Severity::Error,
                        path("type"),
                        type_at,
                        match type_name(info.ggml_type).split_once(':') {
                            Some(("retired", was)) => {
                                format!("type id {} is retired (was {was})", info.ggml_type)
                            }
                            _ => format!("type id {} is unknown", info.ggml_type),
                        },
                    );
                    None
                }
                Some(ty) => {
                    if info.ggml_type >= GGML_TYPE_COUNT {
                        self.report(
                            &[Ggml],
                            Severity::Error,
                            path("type"),
                            type_at,
                            format!(
                                "type {} (id {}): ggml knows ids below {GGML_TYPE_COUNT}",
                                type_name(info.ggml_type),
                                info.ggml_type
                            ),
                        );
                    }
                    match ty.byte_size(&info.dimensions) {
                        Ok(size) => Some(size),
                        Err(e) => {
                            self.report(
                                &[Spec, Ggml],
                                Severity::Error,
                                path("dimensions"),
                                dims_at,
                                crate::error::TensorError::from(e).to_string(),
                            );
                            None
                        }
                    }
                }
            };
            if info.offset % alignment != 0 {
                self.report(
                    &[Spec, Ggml],
                    Severity::Error,
                    path("offset"),
                    offset_at,
                    format!(
                        "offset {} is not a multiple of the alignment {alignment}",
                        info.offset
                    ),
                );
            }
            if let Some(size) = size {
                match info.offset.checked_add(size).filter(|&end| end <= data_len) {
                    Some(end) => extents.push((info.offset, end, i)),
                    None => {
                        past_end = true;
                        let message = format!(
                            "data {}..+{size} runs past the end of the {data_len}-byte data section",
                            info.offset
                        );
                        self.report(
                            &[Spec],
                            Severity::Error,
                            path("offset"),
                            offset_at,
                            &*message,
                        );
                        self.report_in(
                            Category::Load,
                            &[Ggml],
                            Severity::Error,
                            path("offset"),
                            offset_at,
                            message,
                        );
                    }
                }
            }
            match (expected_offset, size) {
                (Some(expected), _) if info.offset != expected => {
                    self.report(&[Ggml], Severity::Error, path("offset"), offset_at, format!("offset {} where ggml expects {expected} (data contiguous in declaration order)", info.offset));
                    expected_offset = None;
                }
                (Some(expected), Some(size)) => {
                    expected_offset = size
                        .checked_next_multiple_of(alignment)
                        .and_then(|padded| expected.checked_add(padded));
                    if expected_offset.is_none() {
                        self.report(&[Ggml], Severity::Error, path("dimensions"), dims_at, format!("the tensors' padded sizes sum past 2^64 here: ggml's reader refuses (it cannot accumulate {expected} + the padded {size})"));
                    }
                }
                _ => expected_offset = None,
            }
        }
        // With tensors, ggml's header read seeks to the data section, which must be in the file.
        if !header.tensor_infos.is_empty() && file_len < layout.data_offset {
            self.report(
                &[Ggml],
                Severity::Error,
                "padding",
                layout.tensor_infos_end,
                format!(
                    "the file ends {} bytes before the data section it has tensors in: ggml's reader cannot seek to it",
                    layout.data_offset - file_len
                ),
            );
        }
        // ggml's full load reads every tensor's padded size from the data offset on.
        if let Some(blob) = expected_offset.filter(|&blob| blob > data_len && !past_end) {
            self.report_in(
                Category::Load,
                &[Ggml],
                Severity::Error,
                "data",
                layout.data_offset + data_len,
                format!(
                    "the file ends {} bytes short of the last tensor's padding: ggml's full load reads {blob} bytes of data",
                    blob - data_len
                ),
            );
        }
        extents.sort_unstable();
        let mut last_end = 0u64;
        let mut last_index = None;
        for &(start, end, i) in &extents {
            if let Some(prev) = last_index.filter(|_| start < last_end && end > start) {
                let offset_at = layout.tensor_fields[i].offset;
                self.report(
                    &[Spec, Ggml],
                    Severity::Error,
                    format!("tensor[{i}].offset"),
                    offset_at,
                    format!("data overlaps tensor[{prev}]"),
                );
            }
            if end > last_end || last_index.is_none() {
                last_end = last_end.max(end);
                last_index = Some(i);
            }
        }
        if !header.padding.is_zero() {
            self.report(
                &[Spec],
                Severity::Warning,
                "padding",
                layout.tensor_infos_end,
                "padding bytes are not zero",
            );
        }
        let used = extents
            .iter()
            .map(|&(_, end, _)| end.next_multiple_of(alignment))
            .max()
            .unwrap_or(0);
        if extents.len() == header.tensor_infos.len() && data_len > used {
            self.report(
                &[Spec],
                Severity::Info,
                "data",
                layout.data_offset + used,
                format!("{} bytes after the last tensor's data", data_len - used),
            );
        }
    }
}

/// A key or tensor name in the duplicate checks. Hashed with the standard library's randomly
/// keyed SipHash, so that no file can make its names collide (an unkeyed hash lets a file make
/// every insertion compare against every earlier name). The unit tests count comparisons to
/// bound the work.
#[derive(Clone, Copy, Hash)]
struct Name<'a>(&'a [u8]);

impl PartialEq for Name<'_> {
    fn eq(&self, other: &Self) -> bool {
        #[cfg(test)]
        tests::COMPARISONS.with(|c| c.set(c.get() + 1));
        self.0 == other.0
    }
}

impl Eq for Name<'_> {}

/// The dimension at which ggml's `ggml_new_tensor`, which llama.cpp's loader calls for every
/// tensor of a header it reads, asserts: it multiplies `ne[0]` by each later dimension above 1
/// and aborts when `INT64_MAX / ne[i] <= product` (its header check multiplies by zeros too,
/// so a shape such as `[256, 0, 2^60]` passes that check and then aborts). Dimensions must
/// fit in i64 (checked before).
fn ggml_new_tensor_aborts(dims: &[u64]) -> Option<usize> {
    let mut product = dims.first().copied().unwrap_or(1) as i64;
    for (i, &ne) in dims.iter().enumerate().skip(1) {
        let ne = ne as i64;
        if ne > 1 {
            if i64::MAX / ne <= product {
                return Some(i);
            }
            product *= ne;
        }
    }
    None
}

/// A field path such as `kv[3].value`, formatted only when a finding needs it.
#[derive(Clone, Copy)]
struct Field<'a>(&'a str, usize, &'a str);

/// Element `[k]` of what a path names.
struct Element<'p>(&'p dyn fmt::Display, usize);

impl fmt::Display for Element<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}].{}", self.0, self.1, self.2)
    }
}

/// Lower-case snake_case parts separated by dots: `[a-z0-9_]+(\.[a-z0-9_]+)*`.
fn is_conventional_key(key: &[u8]) -> bool {
    key.split(|&b| b == b'.').all(|part| {
        !part.is_empty()
            && part
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Builder, GgmlType, KeyValue, Value};

    thread_local! {
        /// Names compared for equality by this thread's validations.
        pub(super) static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Duplicate detection hashes with a keyed hash: distinct names are compared only when
    /// their hashes meet by chance, never each against the others. The work is bounded by
    /// counting comparisons, not by timing (a collision-prone hash fails at 20,000 keys).
    #[test]
    fn a_million_keys_and_100000_tensors_validate_with_one_comparison_per_name_at_most() {
        // Small first: a quadratic step fails there in seconds instead of running for hours.
        for (kvs, tensors) in [
            (20_000, 0),
            (1_000_000, 0),
            (0, 100_000),
            (100_000, 100_000),
        ] {
            let mut metadata = vec![KeyValue {
                key: "general.architecture".into(),
                value: Value::from("llama"),
            }];
            metadata.extend((0..kvs).map(|i| KeyValue {
                key: format!("k.{i}").as_str().into(),
                value: Value::Uint32(i as u32),
            }));
            let mut builder = Builder::new().with_metadata(metadata);
            for i in 0..tensors {
                builder = builder
                    .tensor(format!("t.{i}"), GgmlType::F32, &[1], vec![0u8; 4])
                    .unwrap();
            }
            let file = builder.build().unwrap();
            let before = COMPARISONS.with(|c| c.get());
            let findings = validate(&file, Profile::Ggml);
            let comparisons = COMPARISONS.with(|c| c.get()) - before;
            let errors: Vec<_> = (findings.iter())
                .filter(|f| f.severity == Severity::Error)
                .take(3)
                .collect();
            assert!(errors.is_empty(), "{errors:?}");
            let names = (kvs + tensors + 1) as u64;
            assert!(
                comparisons <= names,
                "{kvs} keys, {tensors} tensors: {comparisons} name comparisons"
            );
        }
    }
}
