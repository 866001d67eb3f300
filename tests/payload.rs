//! The commands on tensor data: convert-endian (every type, generated files, both ways),
//! extract (NumPy reads what it writes), stats, convert (ggml's quantization of the same rows).

use crate::common;

use common::peers::ggml;
use ggufrw::{quant, Builder, ByteOrder, GgmlType, Gguf};
use ggufrw_conform::strategy::{file_with, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use std::path::Path;
use std::process::Command;

fn ggufrw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ggufrw"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Generated files of v2 and v3, both byte orders, every tensor type, gaps, padding and
/// trailing bytes: converted to the other byte order, each tensor's bytes are its blocks
/// swapped by the declaration, everything else is the same; converted back, the same bytes.
#[test]
fn convert_endian_round_trips_every_type_and_layout() {
    let dir = tempfile::tempdir().unwrap();
    let (input, there, back) = (
        dir.path().join("in.gguf"),
        dir.path().join("there.gguf"),
        dir.path().join("back.gguf"),
    );
    for version in [2, 3] {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let config = Config {
                cases: 150,
                failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../proptest-regressions/payload_endian.txt"
                )))),
                ..Config::default()
            };
            let mut runner = TestRunner::new(config);
            let other = match order {
                ByteOrder::Little => ByteOrder::Big,
                ByteOrder::Big => ByteOrder::Little,
            };
            let result = runner.run(&file_with(Options::all(version, order)), |sample| {
                let bytes = sample.encode().unwrap();
                std::fs::write(&input, &bytes).unwrap();
                ggufrw::tools::endian::convert_endian(&input, &there, other, &())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let converted = Gguf::open(&there).unwrap();
                prop_assert_eq!(converted.header().byte_order, other);
                // The same header in the other order (compared encoded: NaN is not equal to itself).
                let mut header = converted.header().clone();
                header.byte_order = order;
                prop_assert_eq!(
                    header.encode(false).unwrap(),
                    sample.header.encode(false).unwrap()
                );
                for (i, extent) in sample.extents.iter().enumerate() {
                    let ty = GgmlType::from_id(sample.header.tensor_infos[i].ggml_type).unwrap();
                    let mut expected = sample.data[extent.clone()].to_vec();
                    quant::swap_in_place(ty, &mut expected).unwrap();
                    prop_assert_eq!(converted.tensor_data(i).unwrap(), &expected[..]);
                }
                ggufrw::tools::endian::convert_endian(&there, &back, order, &())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(std::fs::read(&back).unwrap(), bytes);
                Ok(())
            });
            if let Err(e) = result {
                panic!("v{version} {order:?}: {e}");
            }
        }
    }
}

#[test]
fn convert_endian_refuses_what_it_cannot_convert() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("v1.gguf");
    Builder::new().version(1).write_file(&v1).unwrap();
    let out = dir.path().join("out.gguf");
    let run = ggufrw(&["convert-endian", s(&v1), "-o", s(&out)]);
    assert_eq!(run.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&run.stderr).contains("version 1"));
    assert!(!out.exists());
    let run = ggufrw(&["convert-endian", s(&v1), "-o", s(&v1)]);
    assert_eq!(run.status.code(), Some(2));
}

/// A model of a few tensors: f32, q8_0, f16.
fn model(dir: &Path) -> (std::path::PathBuf, Vec<f32>) {
    let values: Vec<f32> = (0..256)
        .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
        .collect();
    let f32s: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let q8 = quant::quantize(GgmlType::Q8_0, &values, 64).unwrap();
    let f16 = quant::quantize(GgmlType::F16, &values[..64], 64).unwrap();
    let path = dir.join("model.gguf");
    Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("w.f32", GgmlType::F32, &[64, 4], f32s)
        .unwrap()
        .tensor("w.q8", GgmlType::Q8_0, &[64, 4], q8)
        .unwrap()
        .tensor("b.f16", GgmlType::F16, &[64], f16)
        .unwrap()
        .write_file(&path)
        .unwrap();
    (path, values)
}

#[test]
fn extract_writes_what_numpy_reads() {
    let Some(python) = common::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (path, values) = model(dir.path());
    let file = Gguf::open(&path).unwrap();
    for (tensor, dtype, expected) in [
        ("w.f32", "f32", values.clone()),
        ("w.q8", "f32", file.dequantize(1).unwrap()),
        ("b.f16", "raw", file.dequantize(2).unwrap()),
        ("w.q8", "f16", file.dequantize(1).unwrap()),
    ] {
        let out = dir.path().join(format!("{tensor}-{dtype}.npy"));
        let run = ggufrw(&["extract", s(&path), tensor, "-o", s(&out), "--dtype", dtype]);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let script = "import numpy, sys, json; a = numpy.load(sys.argv[1]); \
                      print(json.dumps({'shape': list(a.shape), 'values': a.astype('float64').ravel().tolist()}))";
        let read = common::succeed(Command::new(&python).args(["-c", script, s(&out)]));
        let j: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
        let shape: Vec<u64> = file
            .tensor(tensor)
            .unwrap()
            .info
            .dimensions
            .iter()
            .rev()
            .copied()
            .collect();
        assert_eq!(j["shape"], serde_json::json!(shape), "{tensor} {dtype}");
        let got: Vec<f64> = j["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let want: Vec<f64> = if dtype == "f16" {
            let halves = quant::quantize(GgmlType::F16, &expected, expected.len()).unwrap();
            let mut back = vec![0f32; expected.len()];
            quant::dequantize(GgmlType::F16, &halves, ByteOrder::Little, &mut back).unwrap();
            back.iter().map(|&v| f64::from(v)).collect()
        } else {
            expected.iter().map(|&v| f64::from(v)).collect()
        };
        assert_eq!(got, want, "{tensor} {dtype}");
    }
    // A quantized tensor, raw: its rows of blocks as bytes.
    let out = dir.path().join("raw.npy");
    assert_eq!(
        ggufrw(&["extract", s(&path), "w.q8", "-o", s(&out), "--dtype", "raw"])
            .status
            .code(),
        Some(0)
    );
    let read = Command::new(&python)
        .args([
            "-c",
            "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.dtype, a.shape)",
            s(&out),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&read.stdout).trim(),
        "uint8 (4, 68)"
    );
    let run = ggufrw(&["extract", s(&path), "nope", "-o", s(&out)]);
    assert_eq!(run.status.code(), Some(1));
}

#[test]
fn stats_are_the_values_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let (path, values) = model(dir.path());
    let run = ggufrw(&["stats", s(&path), "--json", "--tensor", "w.f32"]);
    assert_eq!(run.status.code(), Some(0));
    let line: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = values
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    assert_eq!(line["count"], 256);
    assert_eq!(line["min"], -5.0);
    assert_eq!(line["max"], 5.0);
    assert!((line["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((line["std"].as_f64().unwrap() - var.sqrt()).abs() < 1e-9);
    assert_eq!(line["zero"], values.iter().filter(|v| **v == 0.0).count());
}

/// convert to q8_0: the chosen tensors are ggml's quantization of their values, the others the
/// same bytes; general.file_type follows; tensors it cannot convert are named with why.
#[test]
fn convert_quantizes_as_ggml_does() {
    let Some(mut peer) = ggml() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (path, values) = model(dir.path());
    let out = dir.path().join("q.gguf");
    let run = ggufrw(&["convert", s(&path), "-o", s(&out), "--type", "q4_0"]);
    let text = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(text.contains("converted 2 tensors to q4_0"), "{text}");
    let file = Gguf::open(&out).unwrap();
    let w = file.tensor("w.f32").unwrap();
    assert_eq!(w.ggml_type, Some(GgmlType::Q4_0));
    let theirs = peer
        .quantize(GgmlType::Q4_0, &values, 64, false)
        .unwrap()
        .unwrap();
    assert_eq!(file.tensor_data(w.index).unwrap(), &theirs[..]);
    // q8_0 → q4_0 goes through the q8_0 values.
    let q8 = Gguf::open(&path).unwrap().dequantize(1).unwrap();
    let theirs = peer
        .quantize(GgmlType::Q4_0, &q8, 64, false)
        .unwrap()
        .unwrap();
    assert_eq!(
        file.tensor_data(file.tensor("w.q8").unwrap().index)
            .unwrap(),
        &theirs[..]
    );
    // The 1-D tensor is not chosen by default, and keeps its bytes.
    let original = Gguf::open(&path).unwrap();
    assert_eq!(
        file.tensor_data(2).unwrap(),
        original.tensor_data(2).unwrap()
    );
    assert_eq!(
        file.get("general.file_type"),
        Some(&ggufrw::Value::Uint32(2))
    );
    assert_eq!(
        ggufrw(&["check", "--profile", "ggml", s(&out)])
            .status
            .code(),
        Some(0)
    );
    // Asked for by name, none can be: their rows of 64 are not whole blocks of 256. A copy is
    // not what was asked for: nothing is written (the earlier output stays) and it exits 1.
    let before = std::fs::read(&out).unwrap();
    let run = ggufrw(&[
        "convert",
        s(&path),
        "-o",
        s(&out),
        "--type",
        "q4_K",
        "--tensor",
        "*",
    ]);
    let text = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(
        text.contains("no tensor converted to q4_K")
            && text.contains("b.f16: its rows of 64 are not whole q4_K blocks of 256"),
        "{text}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), before);
    let run = ggufrw(&["convert", s(&path), "-o", s(&out), "--type", "nosuch"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("q4_K"));
}

/// Every type either refuses (says it has no arithmetic, or why it cannot quantize) or does
/// something: dequantizing random blocks gives some non-zero value, and quantizing a varied row
/// gives non-zero bytes that dequantize to non-zero values. A type given a stub (zeros) while
/// claiming its arithmetic fails here, with or without ggml.
#[test]
fn every_type_refuses_or_computes() {
    use strum::IntoEnumIterator;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for ty in GgmlType::iter() {
        let blocks = 16;
        let bytes: Vec<u8> = (0..ty.type_size() as usize * blocks)
            .map(|_| next() as u8)
            .collect();
        let mut out = vec![0f32; ty.block_size() as usize * blocks];
        let dequantizes = match quant::dequantize(ty, &bytes, ByteOrder::Little, &mut out) {
            Ok(()) => {
                assert!(
                    out.iter().any(|&v| v != 0.0),
                    "{ty}: random blocks dequantize to zeros"
                );
                true
            }
            Err(quant::QuantError::Unsupported { .. }) => false,
            Err(e) => panic!("{ty}: {e}"),
        };
        let n_per_row = ty.block_size() as usize * 4;
        let row: Vec<f32> = (0..n_per_row * 2)
            .map(|i| ((next() % 2001) as f32 - 1000.0) / 250.0 + (i % 7) as f32)
            .collect();
        match quant::quantize(ty, &row, n_per_row) {
            Ok(q) => {
                assert!(q.iter().any(|&b| b != 0), "{ty}: quantized to zero bytes");
                if dequantizes {
                    let mut back = vec![0f32; row.len()];
                    quant::dequantize(ty, &q, ByteOrder::Little, &mut back).unwrap();
                    assert!(back.iter().any(|&v| v != 0.0), "{ty}: quantized to zeros");
                }
            }
            Err(quant::QuantError::Unsupported { .. }) => {}
            Err(e) => panic!("{ty}: {e}"),
        }
    }
}

/// `extract` (every dtype) and `stats` give the same output on 1, 2 and 3 threads, for
/// tensors large enough to be cut into pieces (the library's `dequantize_threads` under
/// them: each thread takes a run of whole blocks).
#[test]
fn extract_and_stats_are_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<f32> = (0..512 * 600)
        .map(|i: u64| ((i * 7919) % 1009) as f32 / 100.0 - 5.0)
        .collect();
    let path = dir.path().join("big.gguf");
    Builder::new()
        .tensor(
            "q4",
            GgmlType::Q4_K,
            &[512, 600],
            quant::quantize(GgmlType::Q4_K, &rows, 512).unwrap(),
        )
        .unwrap()
        .write_file(&path)
        .unwrap();
    let file = Gguf::open(&path).unwrap();
    assert_eq!(
        file.dequantize_threads(0, 3).unwrap(),
        file.dequantize(0).unwrap()
    );
    for dtype in ["f32", "f16", "raw"] {
        let outputs: Vec<Vec<u8>> = ["1", "2", "3"]
            .iter()
            .map(|threads| {
                let out = dir.path().join(format!("{dtype}-{threads}.npy"));
                let run = ggufrw(&[
                    "extract",
                    s(&path),
                    "q4",
                    "-o",
                    s(&out),
                    "--dtype",
                    dtype,
                    "--threads",
                    threads,
                ]);
                assert_eq!(
                    run.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&run.stderr)
                );
                std::fs::read(&out).unwrap()
            })
            .collect();
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{dtype}");
    }
    let stats: Vec<Vec<u8>> = ["1", "2", "3"]
        .iter()
        .map(|threads| ggufrw(&["stats", s(&path), "--json", "--threads", threads]).stdout)
        .collect();
    assert!(!stats[0].is_empty());
    assert!(stats.windows(2).all(|w| w[0] == w[1]));
}
