//! Files nobody here wrote: the real Gemma 3 270M Q4_K_M model from PyPI, and big-endian files
//! made by gguf-py's writer and by its `gguf-convert-endian` script. Needs `GGUFRW_PYTHON`
//! with gguf-py and the model package (scripts/test.sh installs both).

use crate::common;

use common::{gemma, ggufrw, sha256, GEMMA_SHA256};
use ggufrw::dump::{dump_json, metadata_json};
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::{read_header, ByteOrder, Gguf};
use ggufrw_conform::peer::{as_readers_report, json_difference, Peer};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn real_gemma_model() {
    let Some(path) = gemma() else {
        return;
    };
    let p = path.to_str().unwrap();

    let file = Gguf::open(&path).expect("the real model decodes");
    let layout = file.layout();
    eprintln!(
        "gemma: {} bytes of header, {} keys, {} tensors",
        layout.data_offset,
        file.header().metadata.len(),
        file.header().tensor_infos.len()
    );
    assert_eq!(file.get("general.architecture"), Some(&"gemma3".into()));

    let errors: Vec<_> = (validate(&file, Profile::Ggml).into_iter())
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        ggufrw(&["check", "--profile", "ggml", p]).status.code(),
        Some(0)
    );

    // Every key, type, value, tensor name, type, shape and offset as gguf-py reads them.
    let Some(python) = common::python() else {
        return;
    };
    let mut py = Peer::gguf_py(&python).unwrap();
    let theirs = py.read_accepted(&path).unwrap();
    assert_eq!(
        json_difference(&as_readers_report(dump_json(&file)), &theirs, ""),
        None
    );

    // rewrite: byte-identical.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("gemma.gguf");
    assert_eq!(
        ggufrw(&["rewrite", p, copy.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(sha256(&copy), GEMMA_SHA256);

    // Reading the header reads nothing of the tensor data.
    let mut fenced = common::Fence {
        inner: std::fs::File::open(&path).unwrap(),
        pos: 0,
        limit: layout.data_offset,
    };
    let (header, _) =
        read_header(&mut fenced).expect("the header reads without crossing the fence");
    assert_eq!(&header, file.header());
    fenced.limit = layout.data_offset - 1;
    assert!(
        read_header(&mut fenced).is_err(),
        "the fence must be able to fail"
    );
}

/// Writes a file with gguf-py from a description.
fn gguf_py_write(py: &mut Peer, desc: &serde_json::Value, out: &Path) {
    py.write(desc, out).unwrap_or_else(|e| panic!("{e}"));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Tensors whose byte order gguf-convert-endian knows: F32, F16, Q8_0 and Q4_K.
fn convertible_tensors() -> (serde_json::Value, Vec<Vec<u8>>) {
    let f32s: Vec<u8> = [1.0f32, -2.5, 3.25, 1e-3]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    let f16s: Vec<u8> = [0x3c00u16, 0xc000, 0x7bff, 0x0001]
        .iter()
        .flat_map(|h| h.to_le_bytes())
        .collect();
    let q8_0: Vec<u8> = (0..34u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(3))
        .collect();
    let q4_k: Vec<u8> = (0..144u32).map(|i| (i * 13 % 251) as u8).collect();
    let data = vec![f32s, f16s, q8_0, q4_k];
    let tensors = json!([
        {"name": "f32", "type": "f32", "shape": [4], "data_hex": hex(&data[0])},
        {"name": "f16", "type": "f16", "shape": [4], "data_hex": hex(&data[1])},
        {"name": "q8_0", "type": "q8_0", "shape": [32], "data_hex": hex(&data[2])},
        {"name": "q4_K", "type": "q4_K", "shape": [256], "data_hex": hex(&data[3])},
    ]);
    (tensors, data)
}

fn metadata() -> serde_json::Value {
    json!([
        {"key": "general.architecture", "type": "string", "value": "llama"},
        {"key": "general.quantization_version", "type": "uint32", "value": 2},
        {"key": "llama.context_length", "type": "uint32", "value": 4096},
        {"key": "x.i64", "type": "int64", "value": -5_000_000_000i64},
        {"key": "x.f64", "type": "float64", "value": 0.1},
        {"key": "x.u16s", "type": "array", "element_type": "uint16", "value": [1, 65535]},
        {"key": "tokenizer.ggml.scores", "type": "array", "element_type": "float32", "value": [0.5, -1.0]},
    ])
}

/// Each element of `little` byte-swapped as gguf-convert-endian swaps it: whole elements for
/// plain types; the f16 scales at the start of each block for Q8_0 (d) and Q4_K (d, dmin).
fn swapped(ty: &str, little: &[u8]) -> Vec<u8> {
    let mut out = little.to_vec();
    let swap = |chunk: &mut [u8]| chunk.reverse();
    match ty {
        "f32" => out.chunks_mut(4).for_each(swap),
        "f16" => out.chunks_mut(2).for_each(swap),
        "q8_0" => out.chunks_mut(34).for_each(|b| b[..2].reverse()),
        "q4_K" => out.chunks_mut(144).for_each(|b| {
            b[..2].reverse();
            b[2..4].reverse();
        }),
        other => panic!("{other}"),
    }
    out
}

#[test]
fn big_endian_files_from_gguf_py_and_its_converter() {
    let Some(python) = common::python() else {
        return;
    };
    let mut py = Peer::gguf_py(&python).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tensors, little_data) = convertible_tensors();

    // The little-endian original.
    let little = dir.path().join("little.gguf");
    let desc =
        json!({"version": 3, "byte_order": "little", "metadata": metadata(), "tensors": tensors});
    gguf_py_write(&mut py, &desc, &little);
    let original = Gguf::open(&little).unwrap();
    assert_eq!(metadata_json(&original.header().metadata), metadata());

    // gguf-py's own converter, in place on a copy.
    let converted = dir.path().join("converted.gguf");
    std::fs::copy(&little, &converted).unwrap();
    let script = python.parent().unwrap().join("gguf-convert-endian");
    let mut child = Command::new(&script)
        .args([converted.to_str().unwrap(), "big"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"YES\n").unwrap();
    assert!(child.wait().unwrap().success());

    // gguf-py's writer, big-endian, from the swapped bytes.
    let written = dir.path().join("written.gguf");
    let mut big_tensors = tensors_with_data(&desc["tensors"], &little_data, true);
    gguf_py_write(
        &mut py,
        &json!({"version": 3, "byte_order": "big", "metadata": metadata(), "tensors": big_tensors.take()}),
        &written,
    );

    for path in [&converted, &written] {
        let file = Gguf::open(path).unwrap();
        assert_eq!(
            file.header().byte_order,
            ByteOrder::Big,
            "{}",
            path.display()
        );
        assert_eq!(metadata_json(&file.header().metadata), metadata());
        for (i, t) in file.tensors().enumerate() {
            let expected = swapped(t.name().as_str().unwrap(), &little_data[i]);
            assert_eq!(
                file.tensor_data(i).unwrap(),
                &expected[..],
                "{} in {}",
                t.name(),
                path.display()
            );
        }
        let f32s: Vec<f32> = (file.tensor_data(0).unwrap().chunks(4))
            .map(|c| f32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(f32s, [1.0, -2.5, 3.25, 1e-3]);
        assert_eq!(file.to_bytes().unwrap(), std::fs::read(path).unwrap());
        assert_eq!(validate(&file, Profile::Spec), vec![]);
    }
    // The converter and the writer agree with each other, byte for byte.
    assert_eq!(
        std::fs::read(&converted).unwrap(),
        std::fs::read(&written).unwrap()
    );
    // And ggufrw's converter, from its block declarations, gives the same bytes; back again,
    // the original's.
    let ours = dir.path().join("ours.gguf");
    let run = ggufrw(&[
        "convert-endian",
        little.to_str().unwrap(),
        "-o",
        ours.to_str().unwrap(),
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&converted).unwrap()
    );
    let back = dir.path().join("back.gguf");
    let run = ggufrw(&[
        "convert-endian",
        ours.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0));
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&little).unwrap()
    );
}

/// The real model converted to big-endian dequantizes to exactly the same values, tensor by
/// tensor, and converts back to the original bytes; in place too.
#[test]
fn gemma_converted_to_big_endian_and_back() {
    let Some(path) = gemma() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.gguf");
    let run = ggufrw(&[
        "convert-endian",
        path.to_str().unwrap(),
        "-o",
        big.to_str().unwrap(),
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let original = Gguf::open(&path).unwrap();
    let converted = Gguf::open(&big).unwrap();
    assert_eq!(converted.header().byte_order, ByteOrder::Big);
    assert_eq!(converted.layout(), original.layout());
    let view = ggufrw::view::GgufView::new(converted.bytes()).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for t in original.tensors() {
        let a = bits(&original.dequantize(t.index).unwrap());
        let b = bits(&converted.dequantize(t.index).unwrap());
        assert!(
            a == b,
            "{} ({}) dequantizes differently big-endian",
            t.name(),
            t.type_name()
        );
        // The zero-copy view and a caller's buffer give the same.
        assert!(
            bits(&view.dequantize(t.index).unwrap()) == a,
            "{}",
            t.name()
        );
        let mut into = vec![f32::NAN; a.len()];
        view.dequantize_into(t.index, &mut into).unwrap();
        assert!(bits(&into) == a, "{}", t.name());
    }
    let run = ggufrw(&["convert-endian", big.to_str().unwrap(), "--in-place"]);
    assert_eq!(run.status.code(), Some(0));
    assert_eq!(sha256(&big), GEMMA_SHA256);
}

/// The description's tensors with data swapped to big-endian when `big`.
fn tensors_with_data(
    tensors: &serde_json::Value,
    little: &[Vec<u8>],
    big: bool,
) -> Option<serde_json::Value> {
    let mut tensors = tensors.clone();
    for (t, data) in tensors.as_array_mut()?.iter_mut().zip(little) {
        let ty = t["type"].as_str()?.to_owned();
        let bytes = if big {
            swapped(&ty, data)
        } else {
            data.clone()
        };
        t["data_hex"] = json!(hex(&bytes));
    }
    Some(tensors)
}
