//! The everyday jobs, as properties over generated files: lossless JSON back to the same
//! bytes, diff of a file with itself empty and of an edited copy naming exactly the edit,
//! split then merge giving the file back.

use ggufrw::edit::{edit_file, Edit};
use ggufrw::schema::version::VERSIONS;
use ggufrw::schema::{FixedField, Header};
use ggufrw::tools::diff::{diff, Change};
use ggufrw::tools::{lossless, split};
use ggufrw::{Builder, ByteOrder, Gguf, Value};
use ggufrw_conform::strategy::{any_file, file_with, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use std::path::Path;

fn runner(cases: u32, file: &'static str) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..Config::default()
    })
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Every generated file (every version, byte order, value type, layout, padding): its
/// lossless JSON, printed and read back, builds the same bytes from the file's data.
#[test]
fn lossless_json_builds_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    let mut runner = runner(
        1500,
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/tools_lossless.txt"
        ),
    );
    let result = runner.run(&any_file(), |sample| {
        let bytes = sample.encode().unwrap();
        std::fs::write(&input, &bytes).unwrap();
        let file = Gguf::open(&input).unwrap();
        let text = lossless::to_json(&file).to_string();
        let json: serde_json::Value = serde_json::from_str(&text).map_err(fail)?;
        let header = lossless::header_from_json(&json).map_err(fail)?;
        prop_assert_eq!(
            header.encode(false).unwrap(),
            file.header().encode(false).unwrap()
        );
        lossless::build(&json, &input, &output, &()).map_err(fail)?;
        prop_assert_eq!(std::fs::read(&output).unwrap(), bytes);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Edited JSON (a key changed, a tensor renamed, one dropped) builds a valid file whose
/// tensors hold the data of the tensors they came from.
#[test]
fn edited_lossless_json_builds_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    // What ggml reads: its layout, its value types, no arrays in arrays.
    let options = Options {
        ggml_layout: true,
        max_array_depth: 1,
        alignments: ggufrw_conform::strategy::Alignments::PowersOfTwo,
        value_types: ggufrw::validate::ggml_value_types(),
        ..Options::all(3, ByteOrder::Little)
    };
    let mut runner = runner(
        400,
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/tools_lossless_edit.txt"
        ),
    );
    let result = runner.run(&file_with(options), |sample| {
        prop_assume!(sample.header.tensor_infos.len() >= 2);
        std::fs::write(&input, sample.encode().unwrap()).unwrap();
        let file = Gguf::open(&input).unwrap();
        let mut json = lossless::to_json(&file);
        json["metadata"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"key": "x.edited", "type": "string", "value": "yes"}));
        let tensors = json["tensors"].as_array_mut().unwrap();
        tensors.remove(0);
        let kept = ggufrw::dump::text_from_json(&tensors[0]["name"]).unwrap();
        lossless::build(&json, &input, &output, &()).map_err(fail)?;
        let built = Gguf::open(&output).map_err(fail)?;
        prop_assert_eq!(built.get("x.edited"), Some(&Value::from("yes")));
        prop_assert_eq!(
            built.header().tensor_infos.len(),
            sample.header.tensor_infos.len() - 1
        );
        let t = built.tensor(&kept).unwrap();
        prop_assert_eq!(
            built.tensor_data(t.index).unwrap(),
            file.tensor_data(file.tensor(&kept).unwrap().index).unwrap()
        );
        let findings = ggufrw::validate::validate(&built, ggufrw::validate::Profile::Ggml);
        prop_assert!(
            findings.iter().all(|f| !f.is_structural_error()),
            "{:?}",
            findings
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// JSON that drops every tensor builds the header alone, with the padding it gives: a huge
/// alignment does not fill the output with zeros (found by the `lossless_build` fuzz target:
/// 2 GiB written for a 179-byte JSON).
#[test]
fn json_without_tensors_builds_the_header_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.gguf"), dir.path().join("out.gguf"));
    let file = Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("w", ggufrw::GgmlType::F32, &[8], vec![0u8; 32])
        .unwrap()
        .build()
        .unwrap();
    std::fs::write(&input, file.to_bytes().unwrap()).unwrap();
    let json: serde_json::Value = serde_json::from_str(
        r#"{"ggufrw_lossless":1,"magic":"GGUF","version":3,"byte_order":"little",
            "metadata":[{"key":"general.alignment","type":"uint32","value":2147483648}],
            "tensors":[],"padding":{"len":0}}"#,
    )
    .unwrap();
    let built = lossless::build(&json, &input, &output, &()).unwrap();
    assert_eq!(built, lossless::Built::LaidOutAgain);
    let header = lossless::header_from_json(&json).unwrap();
    assert_eq!(
        std::fs::read(&output).unwrap(),
        header.encode(false).unwrap()
    );
    assert!(std::fs::metadata(&output).unwrap().len() < 100);
    // Padding longer than the alignment calls for is refused, and leaves nothing.
    let mut long = json.clone();
    long["metadata"][0]["value"] = 32.into();
    long["padding"]["len"] = 64.into();
    std::fs::remove_file(&output).unwrap();
    assert!(lossless::build(&long, &input, &output, &()).is_err());
    assert!(!output.exists());
}

/// A file compared with itself: no change. With one key set and one tensor deleted by `edit`:
/// exactly those.
#[test]
fn diff_names_exactly_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    let (input, edited) = (dir.path().join("in.gguf"), dir.path().join("edited.gguf"));
    let mut runner = runner(
        400,
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/tools_diff.txt"
        ),
    );
    let options = Options {
        ggml_layout: true,
        ..Options::all(3, ByteOrder::Little)
    };
    let result = runner.run(&file_with(options), |sample| {
        std::fs::write(&input, sample.encode().unwrap()).unwrap();
        let file = Gguf::open(&input).unwrap();
        prop_assert_eq!(diff(&file, &file, true), vec![]);
        let deleted = sample.header.tensor_infos.last().map(|t| t.name.clone());
        let edit = Edit {
            set: vec![("x.diff".into(), Value::Uint8(7))],
            delete_tensors: deleted.clone().into_iter().collect(),
            ..Edit::default()
        };
        edit_file(&input, &edited, &edit).map_err(fail)?;
        let other = Gguf::open(&edited).unwrap();
        let changes = diff(&file, &other, true);
        let mut expected = vec![Change::KeyAdded {
            key: "x.diff".into(),
            value: Value::Uint8(7),
        }];
        if let Some(name) = deleted {
            expected.push(Change::TensorRemoved {
                name: name.to_string(),
            });
        }
        prop_assert_eq!(changes, expected);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A header rebuilt through `Builder::like` (as `convert`, `split`, `merge` and `build` rebuild
/// theirs) keeps every field of the fixed part but the counts: magic, version, the
/// version-gated fields. And two files that differ only in a gated field differ, for `diff`,
/// in exactly that field.
#[test]
fn rebuilt_headers_keep_the_fixed_fields_and_diff_sees_them() {
    let mut runner = runner(
        300,
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/tools_rebuild.txt"
        ),
    );
    let own = |h: &Header| -> Vec<FixedField> {
        (h.fixed_fields().into_iter())
            .filter(|f| !f.derived)
            .collect()
    };
    let result = runner.run(&any_file(), |sample| {
        let h = &sample.header;
        let rebuilt = Builder::new()
            .like(h)
            .with_metadata(h.metadata.clone())
            .build()
            .map_err(fail)?;
        prop_assert_eq!(own(rebuilt.header()), own(h));
        if let Some(&(field, value)) = h.gated.values().first() {
            let other = (Builder::new().like(h).with_metadata(h.metadata.clone()))
                .gated(field.name, value ^ 1)
                .map_err(fail)?
                .build()
                .map_err(fail)?;
            let changes = diff(&rebuilt, &other, false);
            prop_assert_eq!(
                changes,
                vec![Change::Header {
                    field: field.name,
                    a: value.to_string(),
                    b: (value ^ 1).to_string(),
                }]
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn shard_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("-of-"))
        .collect();
    v.sort();
    v
}

/// Split by tensor count or size, then merge: the same bytes, for files in ggml's layout of
/// both byte orders; every shard passes `check --profile ggml` when little-endian.
#[test]
fn split_then_merge_gives_the_file_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.gguf");
    let merged = dir.path().join("merged.gguf");
    let prefix = dir.path().join("part");
    // Version 3 little-endian (what ggml reads), and the newest big-endian version (whatever
    // the table adds is carried through both).
    let newest_big = (VERSIONS.iter().rev())
        .find(|v| v.byte_orders.contains(&ByteOrder::Big))
        .map_or(2, |v| v.version);
    for (version, order) in [(3, ByteOrder::Little), (newest_big, ByteOrder::Big)] {
        let options = Options {
            ggml_layout: true,
            max_array_depth: 1,
            alignments: ggufrw_conform::strategy::Alignments::PowersOfTwo,
            value_types: ggufrw::validate::ggml_value_types(),
            ..Options::all(version, order)
        };
        let mut runner = runner(
            200,
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../proptest-regressions/tools_split.txt"
            ),
        );
        let strategy = (
            file_with(options),
            1usize..4,
            proptest::bool::ANY,
            proptest::bool::ANY,
        );
        let result = runner.run(&strategy, |(sample, n, by_size, empty_first)| {
            for old in shard_files(dir.path()) {
                std::fs::remove_file(old).unwrap();
            }
            let bytes = sample.encode().unwrap();
            std::fs::write(&input, &bytes).unwrap();
            let by = if by_size {
                split::SplitBy::Bytes(n as u64 * 64)
            } else {
                split::SplitBy::Tensors(n)
            };
            let shards =
                split::split(&input, &prefix, by, empty_first, false, &()).map_err(fail)?;
            prop_assert_eq!(shard_files(dir.path()).len(), shards.len());
            if order == ByteOrder::Little {
                for s in &shards {
                    let shard = Gguf::open(&s.path).unwrap();
                    let findings =
                        ggufrw::validate::validate(&shard, ggufrw::validate::Profile::Ggml);
                    prop_assert!(
                        findings
                            .iter()
                            .all(|f| f.severity != ggufrw::validate::Severity::Error),
                        "{:?}",
                        findings
                    );
                }
            }
            split::merge(&shards[0].path, &merged, &()).map_err(fail)?;
            prop_assert_eq!(std::fs::read(&merged).unwrap(), bytes);
            Ok(())
        });
        if let Err(e) = result {
            panic!("v{version} {order:?}: {e}");
        }
    }
}

/// Merge checks every shard and names the shard and key when one is off.
/// A model of two F32 tensors, `a` (four zero bytes a value) and `b` (`b`'s bytes), split one
/// tensor a shard into `dir/m-*`.
fn two_shards(dir: &std::path::Path, b: Vec<u8>) -> Vec<split::Shard> {
    let input = dir.join("in.gguf");
    ggufrw::Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("a", ggufrw::GgmlType::F32, &[4], vec![0u8; 16])
        .unwrap()
        .tensor("b", ggufrw::GgmlType::F32, &[b.len() as u64 / 4], b)
        .unwrap()
        .write_file(&input)
        .unwrap();
    let prefix = dir.join("m");
    split::split(
        &input,
        &prefix,
        split::SplitBy::Tensors(1),
        false,
        false,
        &(),
    )
    .unwrap()
}

#[test]
fn merge_names_the_shard_and_key_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let shards = two_shards(dir.path(), vec![1u8; 16]);
    let second = &shards[1].path;
    edit_file(
        second,
        &dir.path().join("tmp.gguf"),
        &Edit {
            set: vec![("split.no".into(), Value::Uint16(5))],
            ..Edit::default()
        },
    )
    .unwrap();
    std::fs::rename(dir.path().join("tmp.gguf"), second).unwrap();
    let err = split::merge(&shards[0].path, &dir.path().join("out.gguf"), &())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("m-00002-of-00002.gguf") && err.contains("split.no"),
        "{err}"
    );
    std::fs::remove_file(second).unwrap();
    let err = split::merge(&shards[0].path, &dir.path().join("out.gguf"), &())
        .unwrap_err()
        .to_string();
    assert!(err.contains("m-00002-of-00002.gguf"), "{err}");
    assert!(!dir.path().join("out.gguf").exists());
}

/// A shard whose tensors are all empty, cut before its data section (its padding gone), is
/// refused naming it, as ggml and gguf-split refuse it: merged, the shard's declared layout
/// would have been taken as it stands (the `merge` fuzz target merged such a shard with a 64
/// MiB alignment into a 64 MiB file).
#[test]
fn merge_refuses_a_shard_cut_before_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let shards = two_shards(dir.path(), Vec::new());
    let second = &shards[1].path;
    let whole = Gguf::open(second).unwrap();
    let end = whole.layout().tensor_infos_end;
    assert!(end < whole.layout().data_offset);
    drop(whole);
    let bytes = std::fs::read(second).unwrap();
    std::fs::write(second, &bytes[..end as usize]).unwrap();
    assert!(Gguf::open(second).is_ok(), "the cut shard still decodes");
    let out = dir.path().join("out.gguf");
    let err = split::merge(&shards[0].path, &out, &())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("m-00002-of-00002.gguf") && err.contains("before the data section"),
        "{err}"
    );
    assert!(!out.exists());
    std::fs::write(second, &bytes).unwrap();
    split::merge(&shards[0].path, &out, &()).unwrap();
}

/// `stats` gives the same figures on every thread count: chunks are summarised alone and merged
/// in order, whatever thread summarised them; and the figures are the values' (counted
/// exactly, mean and deviation to rounding).
#[test]
fn stats_are_the_same_on_every_thread_count() {
    use ggufrw::tools::stats::tensor_stats_threads;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut value = |i: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match i % 1000 {
            7 => f32::NAN,
            8 => f32::INFINITY,
            9 => 0.0,
            _ => ((x >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 3.0,
        }
    };
    let values: Vec<f32> = (0..300_001).map(&mut value).collect();
    let f32_bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let rows: Vec<f32> = (0..256 * 1000).map(|i| value(i + 1)).collect();
    let q4k = ggufrw::quant::quantize(ggufrw::GgmlType::Q4_K, &rows, 256).unwrap();
    let file = Builder::new()
        .tensor("f", ggufrw::GgmlType::F32, &[300_001], f32_bytes)
        .unwrap()
        .tensor("q", ggufrw::GgmlType::Q4_K, &[256, 1000], q4k)
        .unwrap()
        .build()
        .unwrap();
    for index in 0..2 {
        let one = tensor_stats_threads(&file, index, 1).unwrap();
        for threads in [2, 3, 7] {
            let many = tensor_stats_threads(&file, index, threads).unwrap();
            let bits =
                |s: &ggufrw::tools::stats::Stats| [s.min, s.max, s.mean, s.std].map(f64::to_bits);
            assert_eq!(bits(&one), bits(&many), "tensor {index}, {threads} threads");
            assert_eq!(
                (one.count, one.nan, one.inf, one.zero),
                (many.count, many.nan, many.inf, many.zero)
            );
        }
        let all = file.dequantize(index).unwrap();
        let finite: Vec<f64> = all
            .iter()
            .filter(|v| v.is_finite())
            .map(|&v| f64::from(v))
            .collect();
        let n = finite.len() as f64;
        let mean = finite.iter().sum::<f64>() / n;
        let std = (finite.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert_eq!(one.count, all.len() as u64);
        assert_eq!(one.nan, all.iter().filter(|v| v.is_nan()).count() as u64);
        assert_eq!(one.zero, all.iter().filter(|&&v| v == 0.0).count() as u64);
        assert!(
            (one.mean - mean).abs() < 1e-9 && (one.std - std).abs() < 1e-9,
            "{one:?}"
        );
    }
}

/// `convert` writes the same bytes on every thread count: the pieces are whole rows, each
/// quantized by the single-threaded function, for tensors of several rows in both byte orders.
#[test]
fn convert_is_the_same_on_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((x >> 40) as f32 / (1u64 << 23) as f32 - 1.0).powi(3)
    };
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let mut b = Builder::new().byte_order(order);
        for (i, rows) in [(0, 37u64), (1, 300), (2, 1)] {
            let data: Vec<u8> = (0..rows * 512)
                .flat_map(|_| match order {
                    ByteOrder::Little => value().to_le_bytes(),
                    ByteOrder::Big => value().to_be_bytes(),
                })
                .collect();
            let name = format!("blk.{i}.weight");
            b = b
                .tensor(name, ggufrw::GgmlType::F32, &[512, rows], data)
                .unwrap();
        }
        let input = dir.path().join("in.gguf");
        b.write_file(&input).unwrap();
        for to in [ggufrw::GgmlType::Q4_K, ggufrw::GgmlType::Q8_0] {
            let outputs: Vec<Vec<u8>> = [1usize, 2, 3, 7]
                .iter()
                .map(|&threads| {
                    let out = dir.path().join(format!("out{threads}.gguf"));
                    ggufrw::tools::convert::convert(&input, &out, to, &[], threads, &()).unwrap();
                    std::fs::read(&out).unwrap()
                })
                .collect();
            for (k, o) in outputs.iter().enumerate().skip(1) {
                assert!(o == &outputs[0], "{order:?} {to}: output {k} differs");
            }
        }
    }
}
