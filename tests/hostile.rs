//! The hostile corpus: every known attack on the container (docs/guarantees-and-limits.md),
//! and every check ggml's reader makes (`gguf_init_from_file_impl`, ggml/src/gguf.cpp in the
//! pinned llama.cpp), as files written byte by byte with
//! [`common::Raw`] (never with the codec), each with the outcome it must have.
//!
//! - `Reject`: decoding fails with a [`DecodeError`] whose path starts with the given prefix.
//! - `Invalid`: decoding succeeds and validation under the profile reports an error there.
//! - `GgmlOnly`: decoding succeeds, the `spec` profile finds no error, `ggml` finds one there.
//! - `SpecOnly`: decoding succeeds, the `spec` profile finds an error there, `ggml` none (bytes
//!   ggml reads: strings that are not UTF-8, bools other than 0 and 1).
//! - `Accept`: decoding succeeds and the `spec` profile finds no error.
//!
//! Every file that decodes must also write back byte for byte, validate under both profiles,
//! dump, and hand out (or refuse) each tensor's data without panicking.

mod common;

use common::view_agrees;
use common::{small_file, ty, Raw};
use ggufrw::validate::{validate, Finding, Profile, Severity};
use ggufrw::{DecodeError, DecodeErrorKind, GgmlType, Gguf, ValueType};
use ggufrw_schema::limits::MAX_ARRAY_DEPTH;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::Command;
use strum::IntoEnumIterator;

/// ggml tensor type ids used below.
const F32: u32 = 0;
const F16: u32 = 1;
const Q4_0: u32 = 2;
const I8: u32 = 24;
const Q4_K: u32 = 12;

/// The outcome a hostile file must have.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Decodes, and the `spec` profile finds no error.
    Accept,
    /// Does not decode; the error's field path starts with `path_prefix`.
    Reject { path_prefix: &'static str },
    /// Decodes; validation under `profile` reports an error whose path starts with the prefix.
    Invalid {
        profile: Profile,
        path_prefix: &'static str,
    },
    /// Decodes; no error under `spec`, an error under `ggml` whose path starts with the prefix.
    GgmlOnly { path_prefix: &'static str },
    /// Decodes; an error under `spec` whose path starts with the prefix, none under `ggml`.
    SpecOnly { path_prefix: &'static str },
}

use Expect::*;

fn reject(path_prefix: &'static str) -> Expect {
    Reject { path_prefix }
}

fn invalid(path_prefix: &'static str) -> Expect {
    Invalid {
        profile: Profile::Spec,
        path_prefix,
    }
}

fn ggml_only(path_prefix: &'static str) -> Expect {
    GgmlOnly { path_prefix }
}

fn spec_only(path_prefix: &'static str) -> Expect {
    SpecOnly { path_prefix }
}

/// One hostile file.
struct Case {
    name: String,
    bytes: Vec<u8>,
    /// Field marks from [`Raw`], to check that an error lies at or after the field it names.
    fields: Vec<(String, usize)>,
    expect: Expect,
    /// The exact byte offset the error (or finding) must carry, where the case pins it.
    at: Option<u64>,
}

impl Case {
    fn new(name: impl Into<String>, r: &Raw, expect: Expect) -> Case {
        Case {
            name: name.into(),
            bytes: r.bytes.clone(),
            fields: r.fields.clone(),
            expect,
            at: None,
        }
    }

    fn bytes(name: impl Into<String>, bytes: &[u8], expect: Expect) -> Case {
        Case {
            name: name.into(),
            bytes: bytes.to_vec(),
            fields: Vec::new(),
            expect,
            at: None,
        }
    }

    /// Pins the error offset to the start of the field marked `mark`, plus `delta`.
    fn at_mark(mut self, mark: &str, delta: u64) -> Case {
        let start = field_start(&self.fields, mark);
        self.at = Some(start as u64 + delta);
        self
    }

    fn at(mut self, offset: u64) -> Case {
        self.at = Some(offset);
        self
    }
}

fn field_start(fields: &[(String, usize)], mark: &str) -> usize {
    fields
        .iter()
        .find(|(p, _)| p == mark)
        .unwrap_or_else(|| panic!("no field {mark}"))
        .1
}

/// Whether `path` is `prefix` or continues it with a `.field` or `[index]`.
fn has_prefix(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

/// A header with its counts.
fn head(version: u32, big: bool, tensors: u64, kvs: u64) -> Raw {
    let mut r = Raw::new(version, big);
    r.counts(tensors, kvs);
    r
}

/// A tensor info as (name, dims, type, offset).
type T<'a> = (&'a str, &'a [u64], u32, u64);

/// A file with an optional `general.alignment`, these tensors, padding and `data` zero bytes.
fn tensors_file(alignment: Option<u32>, tensors: &[T], data: usize) -> Raw {
    let mut r = head(
        3,
        false,
        tensors.len() as u64,
        u64::from(alignment.is_some()),
    );
    if let Some(a) = alignment {
        r.kv(0, "general.alignment", ty::UINT32).u32(a);
    }
    for (i, &(name, dims, ty, offset)) in tensors.iter().enumerate() {
        r.tensor(i, name, dims, ty, offset);
    }
    r.pad(alignment.unwrap_or(32) as usize);
    r.mark("data").raw(&vec![0; data]);
    r
}

/// One pair holding `levels` arrays nested in each other, the innermost holding one u8.
fn nested(levels: usize) -> Raw {
    let mut r = head(3, false, 0, 1);
    r.kv(0, "nest", ty::ARRAY);
    for _ in 1..levels {
        r.u32(ty::ARRAY).word(1);
    }
    r.u32(ty::UINT8).word(1).u8(7);
    r
}

/// One array pair `arr` with this element type and stored count, then `tail` zero bytes.
fn array(version: u32, element_type: u32, count: u64, tail: usize) -> Raw {
    let mut r = head(version, false, 0, 1);
    r.kv(0, "arr", ty::ARRAY);
    r.mark("kv[0].value.element_type").u32(element_type);
    r.mark("kv[0].value.count");
    if version == 1 {
        r.u32(u32::try_from(count).unwrap());
    } else {
        r.u64(count);
    }
    r.raw(&vec![0; tail]);
    r
}

/// The Q4_0 dimension whose `ne * 18` wraps to 64: the vulnerable formula
/// `ne * type_size / block` gives 2 bytes, the right one `(ne / 32) * 18` about 2.9 EB.
fn wrapping_q4_0_dim() -> u64 {
    let nine_m: u128 = (5u128 << 58) + 1;
    assert_eq!(nine_m % 9, 0);
    let ne0 = u64::try_from(nine_m / 9 * 32).unwrap();
    assert_eq!(ne0.wrapping_mul(18) / 32, 2, "the vulnerable formula wraps");
    ne0
}

/// The whole corpus.
fn cases() -> Vec<Case> {
    let mut c = Vec::new();
    let pad = vec![0u8; 64];

    // ---- magic and version (ggml: magic GGUF; versions 0, >3 and byte-swapped refused)
    c.push(Case::bytes("empty file", b"", reject("magic")).at(0));
    c.push(Case::bytes("3 bytes", b"GGU", reject("magic")).at(0));
    for magic in [*b"GGUG", *b"ggjt", [0; 4], *b"FGGU"] {
        let mut r = head(3, false, 0, 0);
        r.bytes[..4].copy_from_slice(&magic);
        c.push(Case::new(format!("magic {magic:?}"), &r, reject("magic")).at(0));
    }
    c.push(Case::bytes("magic only", b"GGUF", reject("version")).at(4));
    c.push(Case::bytes("cut in version", b"GGUF\x03\x00", reject("version")).at(4));
    // One past the last version of the table: a version added moves these cases along.
    let past = common::past_last_version();
    for (version, big, name) in [
        (0, false, "version 0".to_owned()),
        (past, false, format!("version {past}")),
        (u32::MAX, false, "version 2^32-1".to_owned()),
        (1, true, "byte-swapped version 1".to_owned()),
        (past, true, format!("byte-swapped version {past}")),
        (0x0003_0000, false, "version 3 in the high half".to_owned()),
    ] {
        let r = head(version, big, 0, 0);
        c.push(Case::new(name, &r, reject("version")).at(4));
    }
    let mut fugg = small_file(3, false);
    fugg.bytes[..4].copy_from_slice(b"FUGG");
    c.push(Case::new(
        "magic FUGG (spec warning)",
        &fugg,
        ggml_only("magic"),
    ));

    // ---- valid files of every version and byte order
    c.push(Case::new("small v3", &small_file(3, false), Accept));
    c.push(Case::new("small v2", &small_file(2, false), Accept));
    c.push(Case::new(
        "small v3 BE",
        &small_file(3, true),
        ggml_only("version"),
    ));
    c.push(Case::new(
        "small v2 BE",
        &small_file(2, true),
        ggml_only("version"),
    ));
    c.push(Case::new(
        "small v1 (ggml: no longer read)",
        &small_file(1, false),
        ggml_only("version"),
    ));
    c.push(Case::new("header only", &head(3, false, 0, 0), Accept));

    // ---- CVE-2024-21836, CVE-2024-23605: n_tensors / n_kv huge; counts at 2^32-1, 2^63, 2^64-1
    for count in [u64::from(u32::MAX), 1 << 63, u64::MAX] {
        let mut r = head(3, false, count, 0);
        r.raw(&pad);
        c.push(Case::new(format!("v3 n_tensors {count}"), &r, reject("tensor_count")).at(8));
        let mut r = head(3, false, 0, count);
        r.raw(&pad);
        c.push(Case::new(format!("v3 n_kv {count}"), &r, reject("metadata_kv_count")).at(16));
    }
    let mut r = head(1, false, u64::from(u32::MAX), 0);
    r.raw(&pad);
    c.push(Case::new("v1 n_tensors 2^32-1", &r, reject("tensor_count")).at(8));
    let mut r = head(1, false, 0, u64::from(u32::MAX));
    r.raw(&pad);
    c.push(Case::new("v1 n_kv 2^32-1", &r, reject("metadata_kv_count")).at(12));
    // Version 1 holds u32 counts; a writer that stored them 64-bit gives these.
    let mut r = Raw::new(1, false);
    r.u64(1 << 63).u64(0).raw(&pad);
    c.push(Case::new("v1 n_tensors 2^63 as u64", &r, reject("metadata_kv_count")).at(12));
    let mut r = Raw::new(1, false);
    r.u64(u64::MAX).u64(0).raw(&pad);
    c.push(Case::new("v1 n_tensors 2^64-1 as u64", &r, reject("tensor_count")).at(8));
    // One kv takes at least 13 bytes (v3: empty key, u8 value): 12 left is one byte short.
    let mut r = head(3, false, 0, 1);
    r.raw(&[0; 12]);
    c.push(Case::new(
        "n_kv 1 with 12 bytes left",
        &r,
        reject("metadata_kv_count"),
    ));
    // One tensor info takes at least 24 bytes; the kv count is 8 of those left.
    let mut r = head(3, false, 1, 0);
    r.raw(&[0; 15]);
    c.push(Case::new(
        "n_tensors 1 with 23 bytes left",
        &r,
        reject("tensor_count"),
    ));

    // ---- CVE-2024-32878: n_kv larger than the pairs present
    for version in [1, 3] {
        let mut r = head(version, false, 0, 3);
        r.kv(0, "general.architecture", ty::STRING).string("llama");
        c.push(
            Case::new(format!("v{version} n_kv 3, one pair"), &r, reject("kv[1]"))
                .at(r.bytes.len() as u64),
        );
    }
    let mut r = head(3, false, 3, 1);
    r.kv(0, "general.name", ty::STRING).string(&"x".repeat(40));
    r.tensor(0, "a", &[4], F32, 0);
    c.push(Case::new("n_tensors 3, one info", &r, reject("tensor[1]")));

    // ---- CVE-2024-23496: string length 2^64-1 (v1: 2^32-1), and other huge lengths
    for len in [u64::MAX, 1 << 63, u64::from(u32::MAX)] {
        let mut r = head(3, false, 0, 1);
        r.mark("kv[0].key").u64(len).raw(b"general.name").raw(&pad);
        c.push(
            Case::new(format!("v3 key length {len}"), &r, reject("kv[0].key"))
                .at_mark("kv[0].key", 0),
        );
    }
    let mut r = head(1, false, 0, 1);
    r.mark("kv[0].key")
        .u32(u32::MAX)
        .raw(b"general.name")
        .raw(&pad);
    c.push(Case::new("v1 key length 2^32-1", &r, reject("kv[0].key")).at_mark("kv[0].key", 0));
    for version in [1, 3] {
        let mut r = head(version, false, 0, 1);
        r.kv(0, "general.name", ty::STRING);
        r.mark("kv[0].value.len").word(u64::MAX).raw(&pad);
        c.push(
            Case::new(
                format!("v{version} string value length max"),
                &r,
                reject("kv[0].value"),
            )
            .at_mark("kv[0].value.len", 0),
        );
        let mut r = head(version, false, 1, 0);
        r.mark("tensor[0].name").word(u64::MAX).raw(&pad);
        c.push(
            Case::new(
                format!("v{version} tensor name length max"),
                &r,
                reject("tensor[0].name"),
            )
            .at_mark("tensor[0].name", 0),
        );
    }
    let mut r = array(3, ty::STRING, 2, 0);
    r.string("ok")
        .mark("kv[0].value[1]")
        .u64(u64::MAX)
        .raw(&pad);
    c.push(
        Case::new(
            "string in array length 2^64-1",
            &r,
            reject("kv[0].value[1]"),
        )
        .at_mark("kv[0].value[1]", 0),
    );

    // ---- CVE-2024-21825: array count 2^60 (strings) or 2^62 (u32); element type unchecked
    c.push(
        Case::new(
            "array of 2^60 strings",
            &array(3, ty::STRING, 1 << 60, 64),
            reject("kv[0].value.count"),
        )
        .at_mark("kv[0].value.count", 0),
    );
    c.push(
        Case::new(
            "array of 2^62 u32",
            &array(3, ty::UINT32, 1 << 62, 64),
            reject("kv[0].value.count"),
        )
        .at_mark("kv[0].value.count", 0),
    );
    c.push(Case::new(
        "array of 2^64-1 u64 (count x size wraps)",
        &array(3, ty::UINT64, u64::MAX, 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "array of 2^64-1 u8",
        &array(3, ty::UINT8, u64::MAX, 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "array of 2^63 bools",
        &array(3, ty::BOOL, 1 << 63, 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "array of 2^32-1 u8",
        &array(3, ty::UINT8, u64::from(u32::MAX), 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "array of 2^63 arrays",
        &array(3, ty::ARRAY, 1 << 63, 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "v1 array of 2^32-1 strings",
        &array(1, ty::STRING, u64::from(u32::MAX), 64),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "v1 array of 2^32-1 u8",
        &array(1, ty::UINT8, u64::from(u32::MAX), 64),
        reject("kv[0].value.count"),
    ));
    // 16 u32 need 64 bytes: 63 is one short.
    c.push(Case::new(
        "array of 16 u32 in 63 bytes",
        &array(3, ty::UINT32, 16, 63),
        reject("kv[0].value.count"),
    ));
    c.push(Case::new(
        "array of 16 u32 in 64 bytes",
        &array(3, ty::UINT32, 16, 64),
        Accept,
    ));
    // The first id past the value-type table, and ids far past it.
    let unknown = ValueType::iter().map(|t| t as u32).max().unwrap() + 1;
    for element_type in [unknown, 255, u32::MAX] {
        c.push(
            Case::new(
                format!("array element type {element_type}"),
                &array(3, element_type, 1, 64),
                reject("kv[0].value.element_type"),
            )
            .at_mark("kv[0].value.element_type", 0),
        );
    }
    let mut r = array(3, ty::ARRAY, 1, 0);
    r.mark("kv[0].value[0]")
        .u32(ty::UINT32)
        .u64(1 << 62)
        .raw(&pad);
    c.push(
        Case::new("nested array of 2^62 u32", &r, reject("kv[0].value[0]"))
            .at_mark("kv[0].value[0]", 4),
    );
    for element_type in ValueType::iter().map(|t| t as u32) {
        let r = array(3, element_type, 0, 0);
        let expect = if element_type == ty::ARRAY {
            ggml_only("kv[0].value")
        } else {
            Accept
        };
        c.push(Case::new(
            format!("empty array of type {element_type}"),
            &r,
            expect,
        ));
    }

    // ---- PR #26690: tokenizer.ggml.scores stored as INT8 decodes as what it is (no getter
    // reads it as f32: the value keeps its stored type), and check names the wrong type.
    let mut r = head(3, false, 0, 1);
    r.kv(0, "tokenizer.ggml.scores", ty::ARRAY)
        .u32(ty::INT8)
        .u64(4)
        .raw(&[1, 2, 3, 0xff]);
    c.push(Case::new("scores as INT8", &r, invalid("kv[0].value")));

    // ---- CVE-2024-34359: a chat template is data, kept as it is.
    let mut r = head(3, false, 0, 1);
    r.kv(0, "tokenizer.chat_template", ty::STRING)
        .string("{{ self.__init__.__globals__.__builtins__.__import__('os').system('id') }}");
    c.push(Case::new("Jinja payload in chat template", &r, Accept));

    // ---- value types and bools
    let unknown = ValueType::iter().map(|t| t as u32).max().unwrap() + 1;
    for t in [unknown, unknown + 1, 0x0800_0000, u32::MAX] {
        let mut r = head(3, false, 0, 1);
        r.kv(0, "k", t).raw(&pad);
        c.push(
            Case::new(format!("value type {t}"), &r, reject("kv[0].value.type"))
                .at_mark("kv[0].value.type", 0),
        );
    }
    for b in [2u8, 0xff, 0x80] {
        let mut r = head(3, false, 0, 1);
        r.kv(0, "flag", ty::BOOL).u8(b);
        let at = r.bytes.len() as u64 - 1;
        c.push(Case::new(format!("bool {b}"), &r, spec_only("kv[0].value")).at(at));
    }
    let mut r = array(3, ty::BOOL, 4, 0);
    r.raw(&[1, 0, 2, 1]);
    let at = r.bytes.len() as u64 - 2;
    c.push(Case::new("bool array holding 2", &r, spec_only("kv[0].value[2]")).at(at));
    let mut r = head(3, false, 0, 2);
    r.kv(0, "t", ty::BOOL).u8(1);
    r.kv(1, "f", ty::BOOL).u8(0);
    c.push(Case::new("bools 0 and 1", &r, Accept));

    // ---- strict UTF-8
    for (what, bad) in [
        ("0xff", &b"gen\xffral"[..]),
        ("overlong NUL", &b"ab\xc0\x80"[..]),
        ("surrogate", &b"a\xed\xa0\x80"[..]),
        ("cut multibyte", &b"abc\xe2\x82"[..]),
    ] {
        let valid = std::str::from_utf8(bad).unwrap_err().valid_up_to() as u64;
        let mut r = head(3, false, 0, 1);
        r.mark("kv[0].key").u64(bad.len() as u64).raw(bad);
        r.u32(ty::UINT8).u8(0);
        c.push(
            Case::new(format!("key with {what}"), &r, spec_only("kv[0].key"))
                .at_mark("kv[0].key", 8 + valid),
        );
    }
    let mut r = head(3, false, 0, 1);
    r.kv(0, "general.name", ty::STRING).u64(3).raw(b"a\xffb");
    c.push(Case::new(
        "string value not UTF-8",
        &r,
        spec_only("kv[0].value"),
    ));
    let mut r = head(3, false, 1, 0);
    r.mark("tensor[0].name").u64(3).raw(b"\xfe\xfe\xfe");
    r.u32(1).u64(4).u32(F32).u64(0).raw(&pad);
    c.push(
        Case::new("tensor name not UTF-8", &r, spec_only("tensor[0].name"))
            .at_mark("tensor[0].name", 8),
    );
    let mut r = array(3, ty::STRING, 2, 0);
    r.string("fine").u64(2).raw(b"\xc3(");
    c.push(Case::new(
        "string array element not UTF-8",
        &r,
        spec_only("kv[0].value[1]"),
    ));
    let mut r = head(3, false, 0, 1);
    r.kv(0, "a\0b", ty::UINT8).u8(0);
    c.push(Case::new("key holding NUL (valid UTF-8)", &r, Accept));

    // ---- keys: empty, duplicate, too long
    let mut r = head(3, false, 0, 1);
    r.kv(0, "", ty::UINT32).u32(0);
    c.push(Case::new("empty key", &r, invalid("kv[0].key")));
    // The smallest pair the decoder accepts (an empty key and a u8: 13 bytes, 9 in v1) must
    // pass the metadata count's bound even as the last bytes of the file.
    for version in [1, 3] {
        let mut r = head(version, false, 0, 1);
        r.kv(0, "", ty::UINT8).u8(0);
        let name = format!("v{version} empty key, u8 value, last pair");
        c.push(Case::new(name, &r, invalid("kv[0].key")));
    }
    let mut r = head(3, false, 0, 2);
    r.kv(0, "", ty::UINT8).u8(0);
    r.kv(1, "general.name", ty::STRING).string("m");
    c.push(Case::new(
        "empty key, u8 value, first pair",
        &r,
        invalid("kv[0].key"),
    ));
    let mut r = head(3, false, 0, 2);
    r.kv(0, "general.name", ty::STRING).string("a");
    r.kv(1, "general.name", ty::UINT32).u32(1);
    c.push(Case::new("duplicate key", &r, invalid("kv[1].key")));
    let mut r = head(3, false, 0, 1);
    r.kv(0, &"k".repeat(65_536), ty::UINT8).u8(0);
    c.push(Case::new("key of 65,536 bytes", &r, invalid("kv[0].key")));

    // ---- nesting: at the limit accepted, past it refused, deep input costs no stack
    let limit = usize::from(MAX_ARRAY_DEPTH);
    c.push(Case::new(
        "nesting at the limit",
        &nested(limit),
        ggml_only("kv[0].value"),
    ));
    c.push(Case::new(
        "nesting one past the limit",
        &nested(limit + 1),
        reject("kv[0].value"),
    ));
    c.push(Case::new(
        "nesting 100,000 deep",
        &nested(100_000),
        reject("kv[0].value"),
    ));
    c.push(Case::new(
        "nested arrays (ggml refuses)",
        &nested(2),
        ggml_only("kv[0].value"),
    ));

    // ---- general.alignment (PR #25596, Ollama CVE-2025-0317): not UINT32, or 0
    let alignment_as = |i: usize, t: u32, value: &[u8]| {
        let mut r = head(3, false, 0, i as u64 + 1);
        for j in 0..i {
            r.kv(j, &format!("general.k{j}"), ty::UINT8).u8(0);
        }
        r.kv(i, "general.alignment", t).raw(value);
        r.raw(&pad);
        r
    };
    for (name, t, value, path) in [
        (
            "alignment UINT64",
            ty::UINT64,
            &32u64.to_le_bytes()[..],
            "kv[0].value",
        ),
        (
            "alignment INT32",
            ty::INT32,
            &32i32.to_le_bytes()[..],
            "kv[0].value",
        ),
        (
            "alignment UINT16",
            ty::UINT16,
            &32u16.to_le_bytes()[..],
            "kv[0].value",
        ),
        (
            "alignment STRING",
            ty::STRING,
            &[2, 0, 0, 0, 0, 0, 0, 0, b'3', b'2'][..],
            "kv[0].value",
        ),
        (
            "alignment 0",
            ty::UINT32,
            &0u32.to_le_bytes()[..],
            "kv[0].value",
        ),
    ] {
        let r = alignment_as(0, t, value);
        c.push(Case::new(name, &r, reject(path)).at_mark("kv[0].value.type", 0));
    }
    let r = alignment_as(2, ty::FLOAT32, &32f32.to_le_bytes());
    c.push(
        Case::new("alignment FLOAT32 as kv[2]", &r, reject("kv[2].value"))
            .at_mark("kv[2].value.type", 0),
    );
    let r = alignment_as(1, ty::UINT32, &0u32.to_le_bytes());
    c.push(
        Case::new("alignment 0 as kv[1]", &r, reject("kv[1].value")).at_mark("kv[1].value.type", 0),
    );
    let mut r = head(1, false, 0, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(0);
    c.push(Case::new("v1 alignment 0", &r, reject("kv[0].value")).at_mark("kv[0].value.type", 0));
    let mut r = head(3, false, 0, 2);
    r.kv(0, "general.alignment", ty::UINT32).u32(32);
    r.kv(1, "general.alignment", ty::UINT64).u64(0);
    c.push(Case::new(
        "second alignment UINT64 (duplicate key)",
        &r,
        invalid("kv[1].key"),
    ));
    let r = tensors_file(Some(24), &[("a", &[6], F32, 0), ("b", &[2], F32, 24)], 32);
    c.push(Case::new(
        "alignment 24 (spec ok, ggml not a power of two)",
        &r,
        ggml_only("kv[0].value"),
    ));
    let r = tensors_file(Some(4), &[("a", &[1], F32, 0), ("b", &[1], F32, 4)], 8);
    c.push(Case::new(
        "alignment 4 (not a multiple of 8)",
        &r,
        invalid("kv[0].value"),
    ));
    let r = tensors_file(Some(8), &[("a", &[2], F32, 0), ("b", &[2], F32, 8)], 16);
    c.push(Case::new("alignment 8", &r, Accept));
    let mut r = head(3, false, 0, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(1 << 31);
    c.push(Case::new("alignment 2^31, no data", &r, Accept));
    let mut r = head(3, false, 1, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(u32::MAX);
    r.tensor(0, "a", &[4], F32, 0).raw(&pad);
    c.push(Case::new("alignment 2^32-1", &r, invalid("kv[0].value")));

    // ---- CVE-2024-21802: n_dims > 4
    for n in [5, 64, u32::MAX] {
        let mut r = head(3, false, 1, 0);
        r.mark("tensor[0].name").string("t");
        r.mark("tensor[0].n_dimensions").u32(n);
        r.raw(&[1; 128]);
        c.push(
            Case::new(format!("n_dims {n}"), &r, reject("tensor[0].n_dimensions"))
                .at_mark("tensor[0].n_dimensions", 0),
        );
    }
    let mut r = head(1, false, 1, 0);
    r.mark("tensor[0].name").string("t");
    r.mark("tensor[0].n_dimensions").u32(5);
    r.raw(&[1; 64]);
    c.push(
        Case::new("v1 n_dims 5", &r, reject("tensor[0].n_dimensions"))
            .at_mark("tensor[0].n_dimensions", 0),
    );
    c.push(Case::new(
        "n_dims 4",
        &tensors_file(None, &[("t", &[1, 1, 1, 4], F32, 0)], 16),
        Accept,
    ));
    c.push(Case::new(
        "n_dims 0 (scalar)",
        &tensors_file(None, &[("t", &[], F32, 0)], 4),
        Accept,
    ));

    // ---- PR #25596: a dim of 0 (accepted: zero-element tensors)
    let r = tensors_file(
        None,
        &[
            ("a", &[0], F32, 0),
            ("b", &[256, 0, 3], Q4_K, 0),
            ("c", &[4], F32, 0),
        ],
        16,
    );
    c.push(Case::new("dims of 0", &r, Accept));

    // ---- CVE-2024-41130: file cut inside a tensor name
    let mut r = head(3, false, 1, 1);
    r.kv(0, "general.name", ty::STRING).string(&"x".repeat(40));
    r.mark("tensor[0].name").u64(40).raw(b"blk.0.at");
    c.push(
        Case::new("cut inside tensor[0].name", &r, reject("tensor[0].name"))
            .at_mark("tensor[0].name", 0),
    );
    let mut r = head(3, false, 2, 1);
    r.kv(0, "general.name", ty::STRING).string(&"x".repeat(40));
    r.tensor(0, "blk.0.attn", &[4], F32, 0);
    r.mark("tensor[1].name").u64(10).raw(b"blk.0");
    c.push(
        Case::new(
            "cut inside tensor[1].name, same prefix",
            &r,
            reject("tensor[1].name"),
        )
        .at_mark("tensor[1].name", 0),
    );
    let mut r = head(3, false, 1, 1);
    r.kv(0, "general.name", ty::STRING).string(&"x".repeat(40));
    r.tensor(0, "blk.0.attn", &[4, 4], F32, 0);
    r.bytes.truncate(r.bytes.len() - 13);
    c.push(Case::new(
        "cut inside tensor[0].dimensions",
        &r,
        reject("tensor[0].dimensions"),
    ));

    // ---- CVE-2025-53630, CVE-2026-27940: padded tensor sizes summing past 2^64
    let max = i64::MAX as u64;
    let r = tensors_file(
        None,
        &[
            ("a", &[max], I8, 0),
            ("b", &[max], I8, 1 << 63),
            ("c", &[32], I8, 0),
        ],
        32,
    );
    c.push(Case::new(
        "padded sizes sum past 2^64",
        &r,
        invalid("tensor[1].offset"),
    ));

    // ---- CVE-2026-33298: ne * type_size wraps before the divide by the block size
    let ne0 = wrapping_q4_0_dim();
    let r = tensors_file(None, &[("w", &[ne0], Q4_0, 0)], 32);
    c.push(Case::new(
        "ne * type_size wraps",
        &r,
        invalid("tensor[0].offset"),
    ));
    let r = tensors_file(None, &[("w", &[1 << 32, 1 << 32], F32, 0)], 32);
    c.push(Case::new(
        "element count overflows",
        &r,
        invalid("tensor[0].dimensions"),
    ));
    let r = tensors_file(None, &[("w", &[1 << 62, 4], Q4_0, 0)], 32);
    c.push(Case::new(
        "element count 2^64",
        &r,
        invalid("tensor[0].dimensions"),
    ));
    let r = tensors_file(None, &[("w", &[1 << 63], I8, 0)], 32);
    c.push(Case::new(
        "ne 2^63 (not an int64)",
        &r,
        invalid("tensor[0].dimensions"),
    ));
    let r = tensors_file(None, &[("w", &[u64::MAX], I8, 0)], 32);
    c.push(Case::new("ne 2^64-1", &r, invalid("tensor[0].dimensions")));
    let r = tensors_file(None, &[("w", &[1 << 61], F32, 0)], 32);
    c.push(Case::new(
        "byte size 2^63 (past int64)",
        &r,
        invalid("tensor[0].dimensions"),
    ));

    // ---- Ollama CVE-2026-7482: offset + size past EOF; offsets wrapping around
    let r = tensors_file(None, &[("a", &[4], F32, 0), ("b", &[4], F32, 32)], 47);
    c.push(Case::new(
        "offset + size past EOF by one",
        &r,
        invalid("tensor[1].offset"),
    ));
    let r = tensors_file(None, &[("a", &[4], F32, 0), ("b", &[4], F32, 32)], 48);
    c.push(Case::new("offset + size at EOF", &r, Accept));
    let r = tensors_file(None, &[("a", &[16], F32, u64::MAX - 31)], 64);
    c.push(Case::new(
        "offset wraps around",
        &r,
        invalid("tensor[0].offset"),
    ));
    let r = tensors_file(None, &[("a", &[4], F32, 1 << 63)], 64);
    c.push(Case::new("offset 2^63", &r, invalid("tensor[0].offset")));
    let mut r = head(3, false, 1, 0);
    r.tensor(0, "a", &[4], F32, 0);
    c.push(Case::new(
        "tensors but file ends at infos",
        &r,
        invalid("tensor[0].offset"),
    ));
    let r = tensors_file(None, &[("a", &[4], F32, 0), ("b", &[4], F32, 4)], 64);
    c.push(Case::new(
        "offset not aligned",
        &r,
        invalid("tensor[1].offset"),
    ));
    let r = tensors_file(None, &[("a", &[4], F32, 0), ("b", &[4], F32, 0)], 32);
    c.push(Case::new(
        "tensors overlapping",
        &r,
        invalid("tensor[1].offset"),
    ));
    let r = tensors_file(Some(8), &[("a", &[8], F32, 0), ("b", &[2], F32, 8)], 32);
    c.push(Case::new(
        "tensor inside another",
        &r,
        invalid("tensor[1].offset"),
    ));

    // ---- tensor types: unknown, retired; ne[0] not whole blocks
    // Validation and decode errors name the field `type`, as the spec does.
    let past_the_table = GgmlType::iter().map(GgmlType::id).max().unwrap() + 1;
    for (what, id) in [
        ("unknown 99".to_owned(), 99),
        ("unknown 2^32-1".to_owned(), u32::MAX),
        ("retired 4".to_owned(), 4),
        ("retired 5".to_owned(), 5),
        ("retired 31".to_owned(), 31),
        ("retired 38".to_owned(), 38),
        (format!("unknown {past_the_table}"), past_the_table),
    ] {
        let r = tensors_file(None, &[("a", &[32], id, 0)], 256);
        let case = Case::new(format!("type {what}"), &r, invalid("tensor[0].type"))
            .at_mark("tensor[0].type", 0);
        c.push(case);
    }
    let r = tensors_file(None, &[("a", &[33], Q4_0, 0)], 64);
    c.push(Case::new(
        "q4_0 ne[0] 33",
        &r,
        invalid("tensor[0].dimensions"),
    ));
    let r = tensors_file(None, &[("a", &[255, 2], Q4_K, 0)], 512);
    c.push(Case::new(
        "q4_K ne[0] 255",
        &r,
        invalid("tensor[0].dimensions"),
    ));
    let r = tensors_file(None, &[("a", &[32, 2], Q4_0, 0)], 64);
    c.push(Case::new("q4_0 ne[0] 32", &r, Accept));

    // ---- tensor names: duplicate, 64 and 65 bytes
    let r = tensors_file(None, &[("w", &[4], F32, 0), ("w", &[4], F32, 32)], 48);
    c.push(Case::new(
        "duplicate tensor name",
        &r,
        invalid("tensor[1].name"),
    ));
    let n64 = "n".repeat(64);
    let r = tensors_file(None, &[(&n64, &[4], F32, 0)], 16);
    c.push(Case::new(
        "tensor name of 64 bytes (ggml: 63)",
        &r,
        ggml_only("tensor[0].name"),
    ));
    let n65 = "n".repeat(65);
    let r = tensors_file(None, &[(&n65, &[4], F32, 0)], 16);
    c.push(Case::new(
        "tensor name of 65 bytes",
        &r,
        invalid("tensor[0].name"),
    ));
    let r = tensors_file(None, &[("", &[4], F32, 0)], 16);
    c.push(Case::new("empty tensor name", &r, Accept));

    // ---- ggml: tensor data contiguous in declaration order
    let r = tensors_file(None, &[("a", &[4], F32, 0), ("b", &[4], F32, 64)], 80);
    c.push(Case::new(
        "gap between tensors (ggml: not contiguous)",
        &r,
        ggml_only("tensor[1].offset"),
    ));
    let r = tensors_file(None, &[("a", &[4], F32, 32), ("b", &[4], F32, 0)], 48);
    c.push(Case::new(
        "tensors out of order (ggml: not contiguous)",
        &r,
        ggml_only("tensor[0].offset"),
    ));

    // ---- mixed byte orders within one file
    let mut r = Raw::new(3, true);
    r.big = false;
    r.counts(1, 0);
    r.tensor(0, "a", &[4], F32, 0).raw(&pad);
    c.push(Case::new("BE version, LE counts", &r, reject("tensor_count")).at(8));
    let mut r = Raw::new(3, false);
    r.big = true;
    r.counts(0, 1);
    r.big = false;
    r.kv(0, "general.name", ty::STRING).string("x").raw(&pad);
    c.push(Case::new("LE version, BE counts", &r, reject("metadata_kv_count")).at(16));
    let mut r = head(3, true, 0, 1);
    r.big = false;
    r.kv(0, "general.name", ty::STRING).string("x").raw(&pad);
    c.push(Case::new("BE file, LE key length", &r, reject("kv[0].key")));
    let mut r = head(3, true, 0, 1);
    r.mark("kv[0].key").string("general.name");
    r.big = false;
    r.mark("kv[0].value.type").u32(ty::STRING);
    r.big = true;
    r.string("x").raw(&pad);
    c.push(
        Case::new("BE file, LE value type", &r, reject("kv[0].value.type"))
            .at_mark("kv[0].value.type", 0),
    );
    let mut r = head(3, true, 1, 0);
    r.mark("tensor[0].name").string("a");
    r.big = false;
    r.mark("tensor[0].n_dimensions").u32(1);
    r.raw(&pad);
    c.push(
        Case::new("BE file, LE n_dims", &r, reject("tensor[0].n_dimensions"))
            .at_mark("tensor[0].n_dimensions", 0),
    );
    let mut r = head(3, true, 1, 0);
    r.mark("tensor[0].name").string("a");
    r.mark("tensor[0].n_dimensions").u32(1);
    r.mark("tensor[0].dimensions").u64(4);
    r.big = false;
    r.mark("tensor[0].type").u32(F16);
    r.big = true;
    r.mark("tensor[0].offset").u64(0);
    r.pad(32).raw(&[0; 8]);
    c.push(Case::new(
        "BE file, LE tensor type",
        &r,
        invalid("tensor[0].type"),
    ));

    // ---- padding and trailing bytes are kept as found
    let mut r = small_file(3, false);
    let p = field_start(&r.fields, "padding");
    r.bytes[p] = 0xee;
    c.push(Case::new("non-zero padding", &r, Accept));
    let mut r = small_file(3, false);
    r.raw(b"trailing");
    c.push(Case::new("trailing bytes", &r, Accept));
    let mut r = head(3, false, 0, 1);
    r.kv(0, "general.name", ty::STRING)
        .string("m")
        .raw(&[0xab; 5]);
    c.push(Case::new("no tensors, cut inside padding", &r, Accept));

    c
}

/// Everything a decodable file must survive: round trip, both profiles, data access, dumps.
fn exercise(file: &Gguf<&[u8]>, bytes: &[u8], problems: &mut Vec<String>) {
    match file.to_bytes() {
        Ok(out) if out == bytes => {}
        Ok(out) => problems.push(format!(
            "wrote back {} bytes that differ from the {} read",
            out.len(),
            bytes.len()
        )),
        Err(e) => problems.push(format!("cannot write back: {e}")),
    }
    for profile in [Profile::Spec, Profile::Ggml] {
        for f in validate(file, profile) {
            if !f.to_string().contains(" @ 0x") {
                problems.push(format!("finding without an offset: {f}"));
            }
        }
    }
    let (header, layout) = match ggufrw::read_header(&mut Cursor::new(bytes)) {
        Ok(h) => h,
        Err(e) => {
            problems.push(format!("read_header fails where from_bytes succeeds: {e}"));
            return;
        }
    };
    if &header != file.header() || &layout != file.layout() {
        problems.push("read_header and from_bytes disagree".into());
    }
    for i in 0..file.header().tensor_infos.len() {
        let sliced = file.tensor_data(i);
        let read = ggufrw::read_tensor_data(&mut Cursor::new(bytes), &header, &layout, i);
        match (&sliced, &read) {
            (Ok(a), Ok(b)) if a == &b.as_slice() => {}
            (Err(_), Err(_)) => {}
            _ => problems.push(format!(
                "tensor {i}: tensor_data and read_tensor_data disagree"
            )),
        }
    }
    let _ = ggufrw::dump::dump_json(file).to_string();
    let _ = ggufrw::dump::dump_text(file);
}

fn errors(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

/// Checks one case; returns what is wrong with the outcome, if anything.
fn check(case: &Case) -> Vec<String> {
    let mut problems = Vec::new();
    let bytes = &case.bytes[..];
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut problems = Vec::new();
        let decoded = Gguf::from_bytes(bytes);
        if let Ok(file) = &decoded {
            exercise(file, bytes, &mut problems);
        }
        view_agrees(&decoded, bytes, &mut problems);
        (
            decoded.map(|f| (validate(&f, Profile::Spec), validate(&f, Profile::Ggml))),
            problems,
        )
    }));
    let (decoded, more) = match outcome {
        Ok(r) => r,
        Err(_) => return vec!["PANICKED".into()],
    };
    problems.extend(more);
    match (decoded, case.expect) {
        (Err(ggufrw::Error::Decode(e)), expect) => {
            check_decode_error(&e, case, &mut problems);
            match expect {
                Reject { path_prefix } if has_prefix(&e.path, path_prefix) => {}
                Reject { path_prefix } => {
                    problems.push(format!("rejected at {e}, expected path {path_prefix}"))
                }
                _ => problems.push(format!("rejected ({e}), expected {expect:?}")),
            }
        }
        (Err(e), _) => problems.push(format!("failed with a non-decode error: {e}")),
        (Ok(_), Reject { path_prefix }) => {
            problems.push(format!("accepted, expected a reject at {path_prefix}"))
        }
        (Ok((spec, ggml)), expect) => {
            let (spec, ggml) = (errors(&spec), errors(&ggml));
            let must_be_clean = matches!(expect, Accept | GgmlOnly { .. });
            if must_be_clean && !spec.is_empty() {
                problems.push(format!("spec errors: {spec:?}"));
            }
            if matches!(expect, SpecOnly { .. }) && !ggml.is_empty() {
                problems.push(format!("ggml errors: {ggml:?}"));
            }
            let wanted = match expect {
                Invalid {
                    profile: Profile::Spec,
                    path_prefix,
                }
                | SpecOnly { path_prefix } => Some((&spec, path_prefix)),
                Invalid {
                    profile: Profile::Ggml,
                    path_prefix,
                }
                | GgmlOnly { path_prefix } => Some((&ggml, path_prefix)),
                _ => None,
            };
            if let Some((found, prefix)) = wanted {
                let hit = found.iter().find(|f| has_prefix(&f.path, prefix));
                match (hit, case.at) {
                    (None, _) => problems.push(format!(
                        "no error at {prefix}; errors: {:?}",
                        found.iter().map(|f| f.to_string()).collect::<Vec<_>>()
                    )),
                    (Some(f), Some(at)) if f.offset != at => problems.push(format!(
                        "finding at 0x{:x}, expected 0x{at:x}: {f}",
                        f.offset
                    )),
                    _ => {}
                }
            }
        }
    }
    problems
}

/// What every decode error must satisfy: printable with its offset, inside the file, at or
/// after the start of the field it names.
fn check_decode_error(e: &DecodeError, case: &Case, problems: &mut Vec<String>) {
    let shown = ggufrw::Error::Decode(e.clone()).to_string();
    if !shown.contains("@ 0x") || !e.to_string().contains("@ 0x") {
        problems.push(format!("error does not show its offset: {shown}"));
    }
    if e.path.is_empty() {
        problems.push(format!("error without a path: {e}"));
    }
    if e.offset > case.bytes.len() as u64 {
        problems.push(format!(
            "offset past the end of the {}-byte file: {e}",
            case.bytes.len()
        ));
    }
    if let Some(at) = case.at {
        if e.offset != at {
            problems.push(format!("error at 0x{:x}, expected 0x{at:x}: {e}", e.offset));
        }
    }
    let named = (case.fields.iter())
        .filter(|(mark, _)| has_prefix(&e.path, mark))
        .max_by_key(|(mark, _)| mark.len());
    if let Some((mark, start)) = named {
        if e.offset < *start as u64 {
            problems.push(format!(
                "error at 0x{:x} is before its field {mark} (0x{start:x}): {e}",
                e.offset
            ));
        }
    }
}

#[test]
fn hostile_corpus_has_the_expected_outcomes() {
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        let problems = check(case);
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_names_are_unique() {
    let cases = cases();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len());
}

#[test]
fn sizes_are_computed_exactly_where_the_vulnerable_formula_wraps() {
    let ne0 = wrapping_q4_0_dim();
    let r = tensors_file(None, &[("w", &[ne0], Q4_0, 0)], 32);
    let file = Gguf::from_bytes(&r.bytes[..]).unwrap();
    let t = file.tensors().next().unwrap();
    assert_eq!(t.byte_size().unwrap(), ne0 / 32 * 18);
    assert!(file.tensor_data(0).is_err());
    let r = tensors_file(None, &[("a", &[16], F32, u64::MAX - 31)], 64);
    let file = Gguf::from_bytes(&r.bytes[..]).unwrap();
    assert!(file.tensor_data(0).is_err());
    assert_eq!(file.tensors().next().unwrap().file_offset, u64::MAX);
}

/// Bytes a count, length or dimension takes in `version`.
fn width(version: u32) -> u64 {
    if version == 1 {
        4
    } else {
        8
    }
}

/// The field a byte belongs to: the last mark at or before it.
fn field_at(fields: &[(String, usize)], at: usize) -> (&str, usize) {
    // Marks are in writing order: of several at one offset, the last written.
    let (path, start) = fields.iter().rev().find(|(_, s)| *s <= at).unwrap();
    (path, *start)
}

/// The path prefix an error inside field `mark` must have (a pair's `value.type` mark
/// covers the value after it).
fn expected_prefix(mark: &str) -> &str {
    mark.strip_suffix(".type")
        .filter(|m| m.ends_with(".value"))
        .unwrap_or(mark)
}

#[test]
fn every_truncation_fails_at_the_field_it_cuts() {
    for (version, order) in ggufrw_conform::strategy::combinations() {
        let big = order == ggufrw::ByteOrder::Big;
        let r = small_file(version, big);
        let bytes = r.bytes.clone();
        let padding = field_start(&r.fields, "padding");
        for cut in 0..bytes.len() {
            let prefix = &bytes[..cut];
            let label = format!("v{version} big={big} cut at {cut} (0x{cut:x})");
            let (field, start) = field_at(&r.fields, cut);
            let mut problems = Vec::new();
            view_agrees(&Gguf::from_bytes(prefix), prefix, &mut problems);
            assert!(problems.is_empty(), "{label}: {problems:?}");
            let decoded = catch_unwind(|| Gguf::from_bytes(prefix).map(|f| f.to_bytes().ok()));
            match decoded {
                Err(_) => panic!("{label}: panicked"),
                Ok(Ok(out)) => {
                    assert!(cut >= padding, "{label}: decoded a file cut inside {field}");
                    assert_eq!(
                        out.as_deref(),
                        Some(prefix),
                        "{label}: not written back as read"
                    );
                }
                Ok(Err(ggufrw::Error::Decode(e))) => {
                    assert!(cut < padding, "{label}: a complete header is refused: {e}");
                    assert!(!e.path.is_empty(), "{label}: no path: {e}");
                    assert!(e.to_string().contains("@ 0x"), "{label}: {e}");
                    assert!(e.offset <= cut as u64, "{label}: error after the end: {e}");
                    if e.offset >= start as u64 {
                        let want = expected_prefix(field);
                        assert!(
                            has_prefix(&e.path, want),
                            "{label}: cut inside {field}, error at {e}"
                        );
                    } else {
                        // Only a count whose items cannot fit in what is left fails before
                        // the cut: that is the allocation bound doing its job.
                        let DecodeErrorKind::CountTooLarge {
                            count,
                            item_size,
                            left,
                        } = e.kind
                        else {
                            panic!(
                                "{label}: cut inside {field} (0x{start:x}), error earlier at {e}"
                            );
                        };
                        assert_eq!(
                            left,
                            (cut as u64).saturating_sub(e.offset + width(version)),
                            "{label}: {e}"
                        );
                        assert!(
                            !matches!(count.checked_mul(item_size), Some(n) if n <= left),
                            "{label}: {e}"
                        );
                        let (counted, counted_start) = field_at(&r.fields, e.offset as usize);
                        assert_eq!(counted_start as u64, e.offset, "{label}: {e}");
                        assert!(
                            has_prefix(&e.path, expected_prefix(counted)),
                            "{label}: {e} at {counted}"
                        );
                    }
                }
                Ok(Err(other)) => panic!("{label}: not a decode error: {other}"),
            }
        }
    }
}

/// Address space the command may use (it passes at 16 MiB, fails at 4): every corpus file is
/// under a few MiB, so an allocation sized from a hostile count (up to 2^64) fails the run
/// instead of passing unnoticed.
const ADDRESS_SPACE_KIB: u32 = 64 * 1024;

/// Runs `ggufrw ARGS` under [`ADDRESS_SPACE_KIB`], returning exit code, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .args(args)
        .output()
        .expect("the binary runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Whether `out` has a line `FILE: PATH… @ 0x…` with a path starting with `prefix`.
fn has_line(out: &str, file: &str, prefix: &str) -> bool {
    out.lines().any(|line| {
        let Some(rest) = line.strip_prefix(file).and_then(|l| l.strip_prefix(": ")) else {
            return false;
        };
        let Some((path, _)) = rest.split_once(" @ 0x") else {
            return false;
        };
        has_prefix(path, prefix)
    })
}

#[test]
fn check_command_reports_every_hostile_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    for (i, case) in cases().iter().enumerate() {
        let path = write(&format!("case{i:03}.gguf"), &case.bytes);
        let file = s(&path);
        let (code, out, err) = run(&["check", &file]);
        let (ggml_code, ggml_out, ggml_err) = run(&["check", "--profile", "ggml", &file]);
        let ok = match case.expect {
            Accept => code == 0,
            Reject { path_prefix } => {
                code == 1 && has_line(&out, &file, path_prefix) && ggml_code == 1
            }
            Invalid {
                profile: Profile::Spec,
                path_prefix,
            } => code == 1 && has_line(&out, &file, path_prefix),
            Invalid {
                profile: Profile::Ggml,
                path_prefix,
            } => ggml_code == 1 && has_line(&ggml_out, &file, path_prefix),
            GgmlOnly { path_prefix } => {
                code == 0 && ggml_code == 1 && has_line(&ggml_out, &file, path_prefix)
            }
            SpecOnly { path_prefix } => {
                code == 1 && ggml_code == 0 && has_line(&out, &file, path_prefix)
            }
        };
        if !ok {
            let (name, expect) = (&case.name, case.expect);
            failures.push(format!(
                "{name} ({expect:?}): spec exit {code}: {out}{err}\n  \
                 ggml exit {ggml_code}: {ggml_out}{ggml_err}"
            ));
        }
    }
    // One cut inside every field of a small file: the command says what the library says.
    let r = small_file(3, false);
    let padding = field_start(&r.fields, "padding");
    let starts: Vec<usize> = r.fields.iter().map(|(_, s)| *s).collect();
    for (field, start) in r.fields.iter().filter(|(_, s)| *s < padding) {
        let next = starts.iter().copied().filter(|s| s > start).min().unwrap();
        let cut = if next - start > 1 { start + 1 } else { *start };
        let e = match Gguf::from_bytes(&r.bytes[..cut]) {
            Err(ggufrw::Error::Decode(e)) => e,
            _ => panic!("cut at {cut} inside {field} decodes"),
        };
        let path = write(&format!("cut-{cut}.gguf"), &r.bytes[..cut]);
        let file = s(&path);
        let (code, out, err) = run(&["check", &file]);
        let line = format!("{file}: {} @ 0x{:x}: error: ", e.path, e.offset);
        if code != 1 || !out.contains(&line) {
            failures.push(format!(
                "cut inside {field}: exit {code}, expected {line:?}, got {out}{err}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Bounds, measured: heap per decoded byte, time at scale, stack under deep nesting.

/// Counts this thread's heap: bytes live now and the most live at once since the last reset.
struct CountingAlloc;

thread_local! {
    static LIVE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: defers every allocation to the system allocator unchanged; only counts sizes.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let ptr = unsafe { std::alloc::System.alloc(layout) };
        if !ptr.is_null() {
            let _ = LIVE.try_with(|live| {
                live.set(live.get() + layout.size());
                let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
            });
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) };
        let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(layout.size())));
    }
}

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Peak heap bytes (above what was live before) while `f` runs on this thread.
fn peak_heap<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(|p| p.get()) - base)
}

/// Heap allowed for decoding and validating a file of `len` bytes: a fixed multiple of the
/// file plus a constant.
fn heap_bound(len: usize) -> usize {
    8 * len + (64 << 10)
}

#[test]
fn heap_stays_within_a_multiple_of_the_file_size() {
    let mut worst = (0.0f64, String::new());
    for case in cases() {
        let len = case.bytes.len();
        let (_, peak) = peak_heap(|| {
            if let Ok(file) = Gguf::from_bytes(&case.bytes[..]) {
                let _ = validate(&file, Profile::Spec);
                let _ = validate(&file, Profile::Ggml);
            }
        });
        assert!(
            peak <= heap_bound(len),
            "{}: {peak} bytes of heap for a {len}-byte file",
            case.name
        );
        let ratio = peak as f64 / (len as f64 + 1.0);
        if ratio > worst.0 {
            worst = (ratio, case.name.clone());
        }
    }
    eprintln!("worst heap per file byte: {:.1} ({})", worst.0, worst.1);
}

/// A v3 file with `kvs` uint8 pairs and `tensors` F32 tensors of one element each.
fn wide_file(kvs: usize, tensors: usize) -> Vec<u8> {
    let mut r = head(3, false, tensors as u64, kvs as u64);
    for i in 0..kvs {
        r.string(&format!("k.{i}")).u32(ty::UINT8).u8(1);
    }
    for i in 0..tensors {
        r.string(&format!("t.{i}"))
            .u32(1)
            .u64(1)
            .u32(F32)
            .u64(32 * i as u64);
    }
    r.pad(32);
    r.raw(&vec![0; 32 * tensors]);
    r.done()
}

#[test]
fn a_million_keys_and_100000_tensors_decode_and_validate_in_bounded_heap() {
    // (Their name comparisons are bounded by the unit test of the same name in validate.rs.)
    // Small first: a quadratic step fails there in seconds instead of running for hours.
    for (kvs, tensors) in [
        (20_000, 0),
        (1_000_000, 0),
        (0, 100_000),
        (100_000, 100_000),
    ] {
        let bytes = wide_file(kvs, tensors);
        let (file, peak) = peak_heap(|| Gguf::from_bytes(&bytes[..]).unwrap());
        let (findings, validate_peak) = peak_heap(|| validate(&file, Profile::Ggml));
        assert!(
            errors(&findings).is_empty(),
            "{:?}",
            &findings[..findings.len().min(3)]
        );
        assert!(
            peak <= heap_bound(bytes.len()) && validate_peak <= heap_bound(bytes.len()),
            "{peak} and {validate_peak} bytes of heap for {}",
            bytes.len()
        );
        eprintln!(
            "{kvs} keys, {tensors} tensors ({} bytes): peak heap {peak} decoding, {validate_peak} validating",
            bytes.len()
        );
    }
}

#[test]
fn deep_nesting_is_refused_on_a_small_stack() {
    // 100,000 levels in the file; the decoder never recurses past MAX_ARRAY_DEPTH, so 256 KiB
    // of stack is plenty.
    let bytes = nested(100_000).done();
    let at_limit = nested(MAX_ARRAY_DEPTH as usize).done();
    let outcome = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let deep = Gguf::from_bytes(&bytes[..])
                .map(|_| ())
                .map_err(|e| e.to_string());
            let ok = Gguf::from_bytes(&at_limit[..]).map(|f| f.to_bytes().unwrap() == at_limit);
            (deep, ok.map_err(|e| e.to_string()))
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    let (deep, at_limit) = outcome;
    assert!(deep.unwrap_err().contains("nested deeper than"));
    assert_eq!(at_limit, Ok(true));
}

#[test]
fn padding_of_a_huge_alignment_is_streamed_not_held() {
    // general.alignment may be anything up to 2^32-1; the padding it calls for is written as
    // zeros in pieces, so writing or editing such a file holds a few MiB whatever it asks.
    const ALIGNMENT: u32 = 1 << 30;
    let bound = 16 << 20;
    let (written, peak) = peak_heap(|| {
        ggufrw::Builder::new()
            .alignment(ALIGNMENT)
            .tensor("t", ggufrw::GgmlType::F32, &[1], vec![0u8; 4])
            .unwrap()
            .write_to(std::io::sink())
            .unwrap()
    });
    // The header's padding, the tensor's 4 bytes, and zeros to the next alignment after them.
    assert_eq!(written, 2 * u64::from(ALIGNMENT));
    assert!(
        peak <= bound,
        "{peak} bytes of heap to write 2 GiB of padding"
    );

    // A file with that alignment and one tensor, whose data lies 64 MiB in, edited to a new
    // file and in place: the padding is streamed and read back as a length.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.gguf");
    let mut r = head(3, false, 1, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(64 << 20);
    r.tensor(0, "t", &[1], F32, 0);
    let mut bytes = r.done();
    bytes.resize(64 << 20, 0);
    bytes.extend_from_slice(&1.5f32.to_le_bytes());
    std::fs::write(&input, &bytes).unwrap();
    let edit = ggufrw::edit::Edit {
        set: vec![("a".into(), ggufrw::Value::Uint8(1))],
        ..Default::default()
    };
    let output = dir.path().join("out.gguf");
    let (report, peak) = peak_heap(|| ggufrw::edit::edit_file(&input, &output, &edit).unwrap());
    assert_eq!((report.header_bytes, report.data_bytes), (64 << 20, 4));
    assert!(peak <= bound, "{peak} bytes of heap to edit to a new file");
    let (report, peak) = peak_heap(|| ggufrw::edit::edit_in_place(&input, &edit).unwrap());
    assert_eq!(report.header_bytes, 64 << 20);
    assert!(peak <= bound, "{peak} bytes of heap to edit in place");
    assert_eq!(
        std::fs::read(&input).unwrap(),
        std::fs::read(&output).unwrap()
    );
    // Zero padding decodes to a length, not to bytes.
    let (file, peak) = peak_heap(|| Gguf::open(&output).unwrap());
    assert_eq!(
        file.header().padding.len(),
        (64 << 20) - file.layout().tensor_infos_end
    );
    assert!(
        peak <= bound,
        "{peak} bytes of heap to decode 64 MiB of padding"
    );
    assert_eq!(
        std::fs::read(&input).unwrap(),
        std::fs::read(&output).unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// The corpus as files, for other tools (`ggufrw check tests/hostile/*.gguf`, fuzzer seeds).

/// A case's file name: its name in lower case, runs of other characters as one `-`.
fn file_name(case: &Case) -> String {
    let mut slug = String::new();
    for c in case.name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    format!("{}.gguf", slug.trim_matches('-'))
}

/// One line of `EXPECTED.tsv`: file, outcome, field path prefix, pinned offset.
fn expected_line(case: &Case) -> String {
    let (outcome, prefix) = match case.expect {
        Accept => ("accept", ""),
        Reject { path_prefix } => ("reject", path_prefix),
        Invalid {
            profile: Profile::Spec,
            path_prefix,
        } => ("invalid-spec", path_prefix),
        Invalid {
            profile: Profile::Ggml,
            path_prefix,
        } => ("invalid-ggml", path_prefix),
        GgmlOnly { path_prefix } => ("ggml-only", path_prefix),
        SpecOnly { path_prefix } => ("spec-only", path_prefix),
    };
    let at = case.at.map(|a| format!("0x{a:x}")).unwrap_or_default();
    format!(
        "{}\t{outcome}\t{prefix}\t{at}\t{}\n",
        file_name(case),
        case.name
    )
}

/// `tests/hostile/` holds exactly what [`cases`] generates: regenerate it with
/// `GGUFRW_BLESS=1 cargo test --test hostile corpus_files`.
#[test]
fn corpus_files_are_what_the_cases_generate() {
    let dir = common::root().join("tests/hostile");
    let cases = cases();
    let mut table = String::from(
        "# Generated by tests/hostile.rs (GGUFRW_BLESS=1 cargo test --test hostile corpus_files).\n\
         # file\toutcome\tfield path prefix\tpinned offset\tcase\n\
         # outcome: accept = decodes, no spec error; reject = decoding fails at that field;\n\
         # invalid-spec / invalid-ggml = decodes, that profile reports an error there;\n\
         # ggml-only = no spec error, the ggml profile reports one there.\n",
    );
    let mut wanted = std::collections::BTreeMap::new();
    for case in &cases {
        table.push_str(&expected_line(case));
        assert!(
            wanted.insert(file_name(case), &case.bytes[..]).is_none(),
            "two cases share the file name {}",
            file_name(case)
        );
    }
    wanted.insert("EXPECTED.tsv".into(), table.as_bytes());
    if std::env::var_os("GGUFRW_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &wanted {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}; bless the corpus", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(
        found,
        wanted.keys().cloned().collect::<Vec<_>>(),
        "tests/hostile/ holds other files than the cases generate; if the change is meant, bless \
         it: GGUFRW_BLESS=1 cargo test --test hostile corpus_files"
    );
    for (name, bytes) in &wanted {
        let on_disk = std::fs::read(dir.join(name)).unwrap();
        assert!(
            on_disk == *bytes,
            "tests/hostile/{name} differs from its case; if the change is meant, bless it: \
             GGUFRW_BLESS=1 cargo test --test hostile corpus_files"
        );
    }
}
