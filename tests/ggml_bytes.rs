//! Files ggml reads and the spec refuses: keys, strings and tensor names that are not UTF-8,
//! bools stored as bytes other than 0 and 1. Read, written back byte for byte, judged by the
//! profiles at the byte, shown by every consumer in a form that rebuilds them, repairable.

use ggufrw::edit::{edit_file, Edit};
use ggufrw::tools::lossless;
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::view::GgufView;
use ggufrw::{ByteOrder, GgmlType, Gguf, GgufString, Header, KeyValue, TensorInfo, Value};
use ggufrw_schema::{Array, ArrayValues, GgufBool, StrList};
use std::process::Command;

/// Every kind of such byte, each with a marker that finds it in the encoded file: a key, a
/// string value, an element of a string array, an element of a string array inside an array
/// (spec only: ggml reads no nested arrays), a bool scalar and a bool in an array, and a
/// tensor name.
fn spoilt(version: u32, order: ByteOrder, nested: bool) -> Header {
    let mut strings = StrList::new();
    strings.push("fine");
    strings.push_bytes(b"tok\xc3(");
    let mut metadata = vec![
        KeyValue::new("general.architecture", "llama"),
        KeyValue::new(GgufString::from_bytes(b"key\xffone".to_vec()), 1u8),
        KeyValue::new("general.name", GgufString::from_bytes(b"val\xfe".to_vec())),
        KeyValue::new(
            "x.tokens",
            Value::Array(Array::new(ArrayValues::String(strings))),
        ),
        KeyValue::new("x.flag", GgufBool::from_byte(42)),
        KeyValue::new(
            "x.flags",
            vec![GgufBool::TRUE, GgufBool::FALSE, GgufBool::from_byte(0x99)],
        ),
    ];
    if nested {
        let mut inner = StrList::new();
        inner.push_bytes(b"deep\xed\xa0\x80");
        let inner = Array::new(ArrayValues::String(inner));
        metadata.push(KeyValue::new(
            "x.nested",
            Value::Array(Array::new(ArrayValues::Array(vec![inner]))),
        ));
    }
    let mut header = Header {
        metadata,
        ..Header::empty(version, order)
    };
    header.tensor_infos.push(TensorInfo {
        name: GgufString::from_bytes(b"blk.0.w\x80".to_vec()),
        dimensions: vec![4],
        ggml_type: GgmlType::F32.id(),
        offset: 0,
    });
    header.pad().unwrap();
    header
}

fn encode(header: &Header) -> Vec<u8> {
    let mut bytes = header.encode(true).unwrap();
    bytes.extend_from_slice(&[0u8; 16]);
    bytes
}

/// Where `marker` ends in `bytes`: the first occurrence of `marker` followed by `then`.
fn at(bytes: &[u8], marker: &[u8], then: &[u8]) -> u64 {
    let whole = [marker, then].concat();
    let start = (bytes.windows(whole.len()).position(|w| w == whole))
        .unwrap_or_else(|| panic!("{whole:?} not in the file"));
    (start + marker.len()) as u64
}

/// The bad bytes of [`spoilt`], each as (offset, path).
fn expected(bytes: &[u8], version: u32, nested: bool) -> Vec<(u64, &'static str)> {
    let width = if version == 1 { 4 } else { 8 };
    let mut all = vec![
        (at(bytes, b"key", b"\xff"), "kv[1].key"),
        (at(bytes, b"val", b"\xfe"), "kv[2].value"),
        (at(bytes, b"tok", b"\xc3"), "kv[3].value[1]"),
        // The key, the value type, then the byte.
        (at(bytes, b"x.flag", b"") + 4, "kv[4].value"),
        // The key, the value type, the element type, the count, then the third byte.
        (
            at(bytes, b"x.flags", b"") + 4 + 4 + width + 2,
            "kv[5].value[2]",
        ),
        (at(bytes, b"blk.0.w", b"\x80"), "tensor[0].name"),
    ];
    if nested {
        all.push((at(bytes, b"deep", b"\xed"), "kv[6].value[0][0]"));
    }
    all.sort();
    all
}

#[test]
fn every_such_byte_is_read_written_back_and_judged_where_it_is() {
    for (version, order) in ggufrw_conform::strategy::combinations() {
        for nested in [false, true] {
            let header = spoilt(version, order, nested);
            let bytes = encode(&header);
            let context = format!("v{version} {order:?} nested {nested}");
            // Read, owned and in place, and written back byte for byte.
            let file = Gguf::from_bytes(&bytes[..]).unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(file.to_bytes().unwrap(), bytes, "{context}");
            assert_eq!(file.header(), &header, "{context}");
            let view = GgufView::new(&bytes[..]).unwrap();
            assert_eq!(view.to_owned_header().unwrap(), header, "{context}");
            // The checked forms refuse; the raw forms hand out what is stored.
            let (key, _) = view.metadata().nth(1).unwrap();
            assert!(key.as_str().is_err(), "{context}");
            assert_eq!(key.as_bytes(), b"key\xffone");
            let name = view.get("general.name").unwrap();
            assert_eq!(name.as_str(), None, "{context}");
            assert_eq!(name.as_text().unwrap().as_bytes(), b"val\xfe");
            let flag = view.get("x.flag").unwrap();
            assert_eq!(flag.as_bool(), None, "{context}");
            assert_eq!(flag.get::<GgufBool>().map(GgufBool::byte), Some(42));
            assert!(flag.get::<GgufBool>().unwrap().is_nonzero());
            let tokens = view.get("x.tokens").unwrap().as_array().unwrap();
            let tokens: Vec<_> = tokens.strings().unwrap().collect();
            assert_eq!(tokens[0].as_str(), Ok("fine"));
            assert_eq!(tokens[1].as_str().unwrap_err().valid_up_to, 3);
            assert_eq!(
                view.tensors().next().unwrap().name.as_bytes(),
                b"blk.0.w\x80"
            );
            assert_eq!(file.tensor(b"blk.0.w\x80").map(|t| t.index), Some(0));

            let expected = expected(&bytes, version, nested);
            for (profile, severity) in [
                (Profile::Spec, Severity::Error),
                (Profile::Ggml, Severity::Warning),
            ] {
                let mut found: Vec<(u64, &str)> = (validate(&file, profile).iter())
                    .filter(|f| {
                        f.message.contains("not UTF-8") || f.message.contains("bool stored as")
                    })
                    .inspect(|f| assert_eq!(f.severity, severity, "{context} {profile}: {f}"))
                    .map(|f| {
                        let path = expected.iter().find(|(_, p)| *p == f.path).map(|(_, p)| *p);
                        (f.offset, path.unwrap_or("?"))
                    })
                    .collect();
                found.sort();
                assert_eq!(found, expected, "{context} {profile}");
            }
            let ggml_errors: Vec<_> = (validate(&file, Profile::Ggml).into_iter())
                .filter(|f| f.severity == Severity::Error && f.message.contains("UTF-8"))
                .collect();
            assert!(ggml_errors.is_empty(), "{context}: {ggml_errors:?}");
        }
    }
}

/// The typed getters hand out what the spec allows, and say what they do not hand out.
#[test]
fn typed_getters_refuse_such_bytes_by_name() {
    let metadata = vec![
        KeyValue::new("general.architecture", "llama"),
        KeyValue::new("tokenizer.ggml.add_bos_token", GgufBool::from_byte(7)),
        KeyValue::new("general.name", GgufString::from_bytes(b"m\xff".to_vec())),
        KeyValue::new("tokenizer.ggml.add_eos_token", true),
    ];
    let meta = ggufrw::keys::Meta::new(&metadata);
    let bos = meta.tokenizer().add_bos_token().unwrap_err().to_string();
    assert_eq!(
        bos,
        "tokenizer.ggml.add_bos_token holds a bool stored as 7, which the spec does not allow"
    );
    let name = meta.general().name().unwrap_err().to_string();
    assert!(name.contains("not UTF-8"), "{name}");
    assert_eq!(meta.tokenizer().add_eos_token(), Ok(Some(true)));
    assert_eq!(
        meta.value("tokenizer.ggml.add_bos_token"),
        Some(&Value::from(GgufBool::from_byte(7)))
    );
}

#[test]
fn dump_and_lossless_json_rebuild_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (version, order) in ggufrw_conform::strategy::combinations() {
        let bytes = encode(&spoilt(version, order, true));
        let input = dir.path().join("in.gguf");
        std::fs::write(&input, &bytes).unwrap();
        let file = Gguf::open(&input).unwrap();
        let dump = ggufrw::dump::dump_json(&file);
        let key = &dump["metadata"][1]["key"];
        assert_eq!(key, &serde_json::json!({"hex": "6b6579ff6f6e65"}));
        assert_eq!(dump["metadata"][4]["value"], serde_json::json!(42));
        assert_eq!(
            dump["metadata"][5]["value"],
            serde_json::json!([true, false, 0x99])
        );
        assert_eq!(
            dump["tensors"][0]["name"],
            serde_json::json!({"hex": "626c6b2e302e7780"})
        );
        // Lossless JSON, as text and back: the same file, byte for byte.
        let text = serde_json::to_string(&lossless::to_json(&file)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let output = dir.path().join("out.gguf");
        lossless::build(&json, &input, &output, &()).unwrap();
        assert_eq!(
            std::fs::read(&output).unwrap(),
            bytes,
            "v{version} {order:?}"
        );
        // The text dump shows each byte escaped.
        let text = ggufrw::dump::dump_text(&file);
        assert!(text.contains("key\\xffone"), "{text}");
        assert!(text.contains("b\"val\\xfe\""), "{text}");
        assert!(text.contains("x.flag (bool) = 42"), "{text}");
    }
}

#[test]
fn diff_sees_a_bool_byte_and_a_string_byte() {
    let header = spoilt(3, ByteOrder::Little, false);
    let a = Gguf::from_bytes(encode(&header)).unwrap();
    let mut other = header.clone();
    other.metadata[4].value = GgufBool::from_byte(43).into();
    other.metadata[2].value = Value::String(GgufString::from_bytes(b"val\xfd".to_vec()));
    let b = Gguf::from_bytes(encode(&other)).unwrap();
    let changed: Vec<String> = (ggufrw::tools::diff::diff(&a, &b, false).iter())
        .map(|c| c.text())
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert!(changed.iter().any(|c| c.contains("x.flag")), "{changed:?}");
    assert!(
        changed.iter().any(|c| c.contains("general.name")),
        "{changed:?}"
    );
}

/// Setting valid values over the invalid ones, deleting the bad key and renaming the bad
/// tensor by their bytes leaves a file the spec accepts; the data is untouched.
#[test]
fn edit_repairs_such_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    let bytes = encode(&spoilt(3, ByteOrder::Little, false));
    std::fs::write(&input, &bytes).unwrap();
    let edit = Edit {
        set: vec![
            ("general.name".into(), Value::from("val")),
            ("x.flag".into(), Value::from(true)),
            ("x.flags".into(), Value::from(vec![true, false, true])),
            ("x.tokens".into(), Value::from(vec!["fine", "tok"])),
        ],
        delete: vec![GgufString::from_bytes(b"key\xffone".to_vec())],
        rename_tensors: vec![(
            GgufString::from_bytes(b"blk.0.w\x80".to_vec()),
            "blk.0.w".into(),
        )],
        ..Edit::default()
    };
    let before = validate(&Gguf::open(&input).unwrap(), Profile::Spec);
    assert_eq!(
        before
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count(),
        6
    );
    edit_file(&input, &output, &edit).unwrap();
    let repaired = Gguf::open(&output).unwrap();
    let errors: Vec<_> = (validate(&repaired, Profile::Spec).into_iter())
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(repaired.get("x.flag"), Some(&Value::from(true)));
    assert_eq!(repaired.tensor_data(0).unwrap(), &[0u8; 16]);
    assert_eq!(
        std::fs::read(&input).unwrap(),
        bytes,
        "the input is untouched"
    );
}

/// `--set` writes only what the spec allows: a bool is `true` or `false`, not a byte.
#[test]
fn set_refuses_a_bool_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    std::fs::write(&input, encode(&spoilt(3, ByteOrder::Little, false))).unwrap();
    let set = |value: &str| {
        let (input, output) = (input.to_str().unwrap(), output.to_str().unwrap());
        Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .args(["edit", input, "-o", output, "--force", "--set"])
            .arg(format!("x.flag={value}"))
            .output()
            .unwrap()
    };
    for value in ["bool:42", "bool:2", "array[bool]:[true,3]"] {
        let out = set(value);
        assert_eq!(out.status.code(), Some(2), "{value}: {out:?}");
        assert!(!output.exists(), "{value}");
    }
    let out = set("bool:true");
    assert!(out.status.success(), "{out:?}");
    let file = Gguf::open(&output).unwrap();
    assert_eq!(file.get("x.flag"), Some(&Value::from(true)));
}
