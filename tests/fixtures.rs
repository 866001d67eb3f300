//! Fixtures written byte by byte (tests/common), decoded to the values they hold and
//! re-encoded byte-identically.

use crate::common;

use common::structural;

use common::{small_file, ty, Raw};
use ggufrw::{ArrayValues, ByteOrder, GgmlType, Gguf, Magic, Value};

/// Decodes, checks the round trip, and hands the file over for value checks.
fn decode(bytes: &[u8]) -> Gguf<&[u8]> {
    let file = Gguf::from_bytes(bytes).unwrap_or_else(|e| panic!("fixture must decode: {e}"));
    assert_eq!(
        file.to_bytes().unwrap(),
        bytes,
        "re-encoding must give the same bytes"
    );
    file
}

fn check_small(version: u32, big: bool) {
    let bytes = small_file(version, big).done();
    let file = decode(&bytes);
    let h = file.header();
    assert_eq!(h.version, version);
    let order = if big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    assert_eq!(h.byte_order, order);
    assert_eq!(h.magic, Magic::Gguf);
    assert_eq!(
        file.get("general.architecture"),
        Some(&Value::from("llama"))
    );
    assert_eq!(file.get("general.alignment"), Some(&Value::Uint32(32)));
    match file.get("tokenizer.ggml.scores") {
        Some(Value::Array(a)) => assert_eq!(a.values, ArrayValues::Float32(vec![0.5, -1.0])),
        other => panic!("scores: {other:?}"),
    }
    let names: Vec<_> = file.tensors().map(|t| t.name().to_string()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(file.tensor("b").unwrap().info.dimensions, [2, 2]);
    assert_eq!(file.tensor_data(0).unwrap(), &[1; 16]);
    assert_eq!(file.tensor_data(1).unwrap(), &[2; 16]);
    assert_eq!(file.layout().data_offset % 32, 0);
    assert_eq!(
        file.tensor("b").unwrap().file_offset,
        file.layout().data_offset + 32
    );
}

#[test]
fn little_endian_v3() {
    check_small(3, false);
}

#[test]
fn big_endian_v3() {
    check_small(3, true);
}

#[test]
fn big_endian_v2() {
    check_small(2, true);
}

#[test]
fn version_2() {
    check_small(2, false);
}

#[test]
fn version_1_has_32_bit_counts() {
    let bytes = small_file(1, false).done();
    // magic, version, then two u32 counts: the first key's length sits at 16.
    assert_eq!(&bytes[8..16], &[2, 0, 0, 0, 3, 0, 0, 0]);
    check_small(1, false);
}

#[test]
fn alignment_64() {
    let mut r = Raw::new(3, false);
    r.counts(2, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(64);
    r.tensor(0, "x", &[8], GgmlType::F32.id(), 0);
    r.tensor(1, "y", &[1], GgmlType::F32.id(), 64);
    r.pad(64);
    r.raw(&[9; 32]).raw(&[0; 32]).raw(&[8; 4]).raw(&[0; 60]);
    let bytes = r.done();
    let file = decode(&bytes);
    assert_eq!(file.layout().alignment, 64);
    assert_eq!(file.layout().data_offset, 128);
    assert_eq!(file.tensor_data(1).unwrap(), &[8; 4]);
    assert!(structural(&ggufrw::validate::validate(
        &file,
        ggufrw::validate::Profile::Ggml
    ))
    .is_empty());
}

#[test]
fn zero_tensors_with_and_without_padding() {
    for padded in [false, true] {
        let mut r = Raw::new(3, false);
        r.counts(0, 1);
        r.kv(0, "general.name", ty::STRING).string("x");
        if padded {
            r.pad(32);
        }
        let bytes = r.done();
        let file = decode(&bytes);
        assert_eq!(file.tensors().len(), 0);
        let infos_end = 24 + (8 + 12) + 4 + (8 + 1);
        assert_eq!(file.layout().tensor_infos_end, infos_end as u64);
        assert_eq!(
            file.header().padding.len(),
            if padded { 64 - infos_end } else { 0 } as u64
        );
    }
}

#[test]
fn zero_keys_zero_tensors() {
    let bytes = Raw::new(3, false).counts(0, 0).done();
    let file = decode(&bytes);
    assert!(file.header().metadata.is_empty());
}

#[test]
fn every_value_type() {
    for big in [false, true] {
        let mut r = Raw::new(3, big);
        r.counts(0, 16);
        r.kv(0, "u8", ty::UINT8).u8(255);
        r.kv(1, "i8", ty::INT8).u8(0x80);
        r.kv(2, "u16", ty::UINT16).u16(65535);
        r.kv(3, "i16", ty::INT16).u16(0x8000);
        r.kv(4, "u32", ty::UINT32).u32(u32::MAX);
        r.kv(5, "i32", ty::INT32).u32(0x8000_0000);
        r.kv(6, "f32", ty::FLOAT32).u32(0x7fc0_0001); // a NaN with a payload
        r.kv(7, "bool", ty::BOOL).u8(1);
        r.kv(8, "str", ty::STRING).string("héllo\0");
        r.kv(9, "u64", ty::UINT64).u64(u64::MAX);
        r.kv(10, "i64", ty::INT64).u64(1 << 63);
        r.kv(11, "f64", ty::FLOAT64).f64(-0.0);
        r.kv(12, "empty", ty::STRING).string("");
        r.kv(13, "arr.empty", ty::ARRAY).u32(ty::UINT8).word(0);
        r.kv(14, "arr.str", ty::ARRAY)
            .u32(ty::STRING)
            .word(2)
            .string("a")
            .string("");
        r.kv(15, "arr.nested", ty::ARRAY).u32(ty::ARRAY).word(2);
        r.u32(ty::BOOL).word(1).u8(0);
        r.u32(ty::INT16).word(0);
        r.pad(32);
        let bytes = r.done();
        let file = decode(&bytes);
        let get = |k: &str| file.get(k).unwrap().clone();
        assert_eq!(get("u8"), Value::Uint8(255));
        assert_eq!(get("i8"), Value::Int8(i8::MIN));
        assert_eq!(get("u16"), Value::Uint16(u16::MAX));
        assert_eq!(get("i16"), Value::Int16(i16::MIN));
        assert_eq!(get("u32"), Value::Uint32(u32::MAX));
        assert_eq!(get("i32"), Value::Int32(i32::MIN));
        match get("f32") {
            Value::Float32(f) => assert_eq!(f.to_bits(), 0x7fc0_0001),
            other => panic!("{other:?}"),
        }
        assert_eq!(get("bool"), Value::from(true));
        assert_eq!(get("str"), Value::from("héllo\0"));
        assert_eq!(get("u64"), Value::Uint64(u64::MAX));
        assert_eq!(get("i64"), Value::Int64(i64::MIN));
        match get("f64") {
            Value::Float64(f) => assert_eq!(f.to_bits(), (-0.0f64).to_bits()),
            other => panic!("{other:?}"),
        }
        assert_eq!(get("empty"), Value::from(""));
        match get("arr.empty") {
            Value::Array(a) => assert_eq!(a.values, ArrayValues::Uint8(vec![])),
            other => panic!("{other:?}"),
        }
        match get("arr.str") {
            Value::Array(a) => {
                assert_eq!(
                    a.values,
                    ArrayValues::String(["a", ""].into_iter().collect())
                )
            }
            other => panic!("{other:?}"),
        }
        match get("arr.nested") {
            Value::Array(a) => match &a.values {
                ArrayValues::Array(inner) => {
                    assert_eq!(inner[0].values, ArrayValues::from(vec![false]));
                    assert_eq!(inner[1].values, ArrayValues::Int16(vec![]));
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn quantized_tensor_with_padding() {
    // q4_K: 256 elements per 144-byte block; 512 x 2 elements = 4 blocks = 576 bytes.
    let mut r = Raw::new(3, false);
    r.counts(2, 1);
    r.kv(0, "general.quantization_version", ty::UINT32).u32(2);
    r.tensor(0, "blk.0.attn_q.weight", &[512, 2], GgmlType::Q4_K.id(), 0);
    r.tensor(1, "blk.0.ffn.weight", &[32], GgmlType::Q8_0.id(), 576);
    r.pad(32);
    let data_start = r.bytes.len();
    let q4k: Vec<u8> = (0..576).map(|i| i as u8).collect();
    r.raw(&q4k);
    r.raw(&[0x5a; 34]).raw(&[0; 30]);
    let bytes = r.done();
    let file = decode(&bytes);
    assert_eq!(file.layout().data_offset as usize, data_start);
    let t = file.tensor("blk.0.attn_q.weight").unwrap();
    assert_eq!(
        (t.ggml_type, t.byte_size().unwrap()),
        (Some(GgmlType::Q4_K), 576)
    );
    assert_eq!(file.tensor_data(0).unwrap(), &q4k[..]);
    assert_eq!(file.tensor_data(1).unwrap(), &[0x5a; 34]);
    assert!(structural(&ggufrw::validate::validate(
        &file,
        ggufrw::validate::Profile::Ggml
    ))
    .is_empty());
}

#[test]
fn byte_reversed_magic_is_kept() {
    let mut bytes = small_file(3, true).done();
    bytes[..4].copy_from_slice(b"FUGG");
    let file = decode(&bytes);
    assert_eq!(file.header().magic, Magic::Fugg);
}

#[test]
fn nonzero_padding_and_trailing_bytes_survive() {
    let mut r = small_file(3, false);
    r.raw(b"trailing");
    let mut bytes = r.done();
    let pad = r.fields.iter().find(|(f, _)| f == "padding").unwrap().1;
    bytes[pad] = 0xee;
    let file = decode(&bytes);
    assert_eq!(file.header().padding.nonzero_bytes().unwrap()[0], 0xee);
}
