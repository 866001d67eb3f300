//! The command line: names, output shapes and exit codes that scripts depend on.

use crate::common;

use common::{ggufrw, small_file, ty, Raw};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn dump_json_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Raw::new(3, true);
    r.counts(1, 3);
    r.kv(0, "big", ty::UINT64).u64(u64::MAX);
    r.kv(1, "neg", ty::INT64).u64(i64::MIN as u64);
    r.kv(2, "list", ty::ARRAY)
        .u32(ty::FLOAT32)
        .word(2)
        .f32(0.5)
        .u32(0x7fc0_0000);
    r.tensor(0, "w", &[256, 2], 12, 0);
    r.pad(32);
    r.raw(&[0; 288]);
    let path = write(dir.path(), "big.gguf", &r.done());
    let out = ggufrw(&["dump", "--json", s(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let expected = concat!(
        r#"{"magic":"GGUF","version":3,"tensor_count":1,"metadata_kv_count":3,"#,
        r#""byte_order":"big","alignment":32,"data_offset":160,"metadata":["#,
        r#"{"key":"big","type":"uint64","value":18446744073709551615},"#,
        r#"{"key":"neg","type":"int64","value":-9223372036854775808},"#,
        r#"{"key":"list","type":"array","value":[0.5,"nan"],"element_type":"float32"}],"#,
        r#""tensors":[{"name":"w","type":"q4_K","shape":[256,2],"offset":0,"size":288}]}"#,
        "\n"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn dump_text_abbreviates_long_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Raw::new(3, false);
    r.counts(0, 1);
    r.kv(0, "tokenizer.ggml.token_type", ty::ARRAY)
        .u32(ty::INT32)
        .word(100);
    for i in 0..100 {
        r.u32(i);
    }
    let path = write(dir.path(), "a.gguf", &r.done());
    let out = ggufrw(&["dump", s(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "tokenizer.ggml.token_type (array[int32; 100]) = [0, 1, 2, 3, 4, 5, 6, 7, … 92 more]"
        ),
        "{text}"
    );
}

#[test]
fn dump_views_show_offsets_cut_arrays_and_group_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Raw::new(3, false);
    r.counts(3, 2);
    r.kv(0, "general.architecture", ty::STRING).string("toy");
    r.kv(1, "list|x", ty::ARRAY).u32(ty::UINT8).word(5);
    r.raw(&[1, 2, 3, 4, 5]);
    r.tensor(0, "token_embd.weight", &[32, 2], 0, 0);
    r.tensor(1, "blk.0.attn_q.weight", &[32], 8, 256);
    r.tensor(2, "blk.0.ffn_up.weight", &[64], 0, 288);
    r.pad(32);
    r.raw(&[0; 544]);
    let path = write(dir.path(), "v.gguf", &r.done());
    let file = ggufrw::Gguf::open(&path).unwrap();
    let layout = file.layout();

    let text =
        String::from_utf8_lossy(&ggufrw(&["dump", "--arrays", "2", s(&path)]).stdout).into_owned();
    let key_line = format!(
        "@0x{:x} list|x (array[uint8; 5]) = [1, 2, … 3 more]",
        layout.kv_offsets[1]
    );
    assert!(text.contains(&key_line), "{text}");
    let info_line = format!(
        "2 @0x{:x} blk.0.ffn_up.weight f32",
        layout.tensor_info_offsets[2]
    );
    assert!(text.contains(&info_line), "{text}");
    let text =
        String::from_utf8_lossy(&ggufrw(&["dump", "--no-tensors", s(&path)]).stdout).into_owned();
    assert!(
        !text.contains("tensors:") && text.contains("list|x"),
        "{text}"
    );

    let out = ggufrw(&["dump", "--json", "--no-tensors", "--arrays", "2", s(&path)]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json.get("tensors"), None);
    assert_eq!(json["metadata"][1]["value"], serde_json::json!([1, 2]));
    assert_eq!(json["metadata"][1]["count"], 5);
    assert_eq!(json["metadata"][0].get("count"), None);
    let pretty = ggufrw(&["dump", "--json", "--pretty", s(&path)]).stdout;
    let plain = ggufrw(&["dump", "--json", s(&path)]).stdout;
    assert!(pretty.len() > plain.len());
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&pretty).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&plain).unwrap()
    );

    let md =
        String::from_utf8_lossy(&ggufrw(&["dump", "--markdown", s(&path)]).stdout).into_owned();
    // The pipe in the key is escaped, so the row keeps its six cells.
    let row = format!(
        "| 2 | 0x{:x} | array[uint8] | 5 | list\\|x | [1, 2, 3, 4, 5] |",
        layout.kv_offsets[1]
    );
    assert!(md.contains(&row), "{md}");
    // Elements: 64 base, 32 + 64 in blk.0, of 160.
    assert!(md.contains("| base | 1 | 64 | 40.00% |"), "{md}");
    assert!(md.contains("| blk.0 | 2 | 96 | 60.00% |"), "{md}");
    // Q8_0 (type 8): 34 bytes per 32 elements.
    assert!(
        md.contains("| 1 | blk.0.attn_q.weight | q8_0 | 32 | 32 | "),
        "{md}"
    );
    assert!(md.contains("| 34 | 8.5000 |"), "{md}");
    assert!(
        ggufrw(&["dump", "--markdown", "--json", s(&path)])
            .status
            .code()
            == Some(2)
    );
}

#[test]
fn check_exit_codes_and_line_format() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.gguf", &small_file(3, false).done());
    let v1 = write(dir.path(), "v1.gguf", &small_file(1, false).done());
    let cut = write(dir.path(), "cut.gguf", &small_file(3, false).done()[..30]);

    let out = ggufrw(&["check", s(&good)]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));

    // v1 is fine under spec (an info line), an error under ggml.
    let out = ggufrw(&["check", s(&v1)]);
    assert_eq!(out.status.code(), Some(0));
    let out = ggufrw(&["check", "--profile", "ggml", s(&v1)]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("{}: version @ 0x4: error: ", s(&v1))),
        "{text}"
    );

    let out = ggufrw(&["check", s(&good), s(&cut)]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        format!("{}: tensor_count @ 0x8: error: count 2 needs more bytes than the 14 left in the file (each item takes at least 24)\n", s(&cut))
    );

    let out = ggufrw(&["check", "--json", s(&cut)]);
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["ok"], false);
    assert_eq!(line["findings"][0]["path"], "tensor_count");
    assert_eq!(line["findings"][0]["offset"], 8);

    let missing = dir.path().join("missing.gguf");
    assert_eq!(ggufrw(&["check", s(&missing)]).status.code(), Some(2));
    assert_eq!(
        ggufrw(&["check", "--profile", "nope", s(&good)])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(ggufrw(&["check"]).status.code(), Some(2));
}

#[test]
fn rewrite_is_byte_identical_and_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = small_file(3, true);
    r.raw(b"trailing bytes kept");
    let input = write(dir.path(), "in.gguf", &r.done());
    let output = dir.path().join("out.gguf");
    let out = ggufrw(&["rewrite", s(&input), s(&output)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&output).unwrap(),
        std::fs::read(&input).unwrap()
    );

    // A file that does not decode: exit 1, no output at all.
    let bad = write(dir.path(), "bad.gguf", b"GGUF\x09\0\0\0");
    let target = dir.path().join("never.gguf");
    assert_eq!(
        ggufrw(&["rewrite", s(&bad), s(&target)]).status.code(),
        Some(1)
    );
    assert!(!target.exists());

    // An output directory that does not exist: exit 2, nothing left behind.
    let nowhere = dir.path().join("no/such/dir/out.gguf");
    assert_eq!(
        ggufrw(&["rewrite", s(&input), s(&nowhere)]).status.code(),
        Some(2)
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[test]
fn conform_prints_a_row_per_version_and_byte_order() {
    let out = ggufrw(&["conform", "--cases", "50", "--seed", "3"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = (text.lines())
        .filter(|l| l.starts_with("round trip"))
        .map(|l| l.split_whitespace().skip(2).take(2).collect())
        .collect();
    let expected: Vec<Vec<String>> = (ggufrw_conform::strategy::combinations().into_iter())
        .map(|(v, o)| vec![v.to_string(), o.name().to_owned()])
        .collect();
    assert_eq!(rows, expected, "{text}");
    assert!(text.contains(" cases, seed 3"), "{text}");
}

#[test]
fn name_prints_the_conventional_name_and_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let build = |path: &Path| {
        ggufrw::Builder::new()
            .metadata("general.architecture", "llama")
            .metadata("general.basename", "Mixtral")
            .metadata("general.size_label", "8x7B")
            .metadata("general.version", "v0.1")
            .metadata("general.file_type", 2u32)
            .tensor("w", ggufrw::GgmlType::Q4_0, &[32], vec![0u8; 18])
            .unwrap()
            .write_file(path)
            .unwrap();
    };
    let right = dir.path().join("Mixtral-8x7B-v0.1-Q4_0.gguf");
    let wrong = dir.path().join("mixtral-q4.gguf");
    build(&right);
    build(&wrong);
    let out = ggufrw(&["name", s(&right)]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Mixtral-8x7B-v0.1-Q4_0.gguf\n"
    );
    assert_eq!(
        ggufrw(&["name", "--check", s(&right)]).status.code(),
        Some(0)
    );
    let out = ggufrw(&["name", "--check", s(&wrong)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 1);
}

/// Each kind of library error reaches the exit code through its type: 1 when the file or the
/// job is refused (it does not decode, a tensor cannot be converted, a shard set or a byte
/// order cannot be made), 2 when reading or writing fails; and a refusal leaves no output.
#[test]
fn exit_codes_follow_the_kind_of_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.gguf", &small_file(3, false).done());
    let v1 = write(dir.path(), "v1.gguf", &small_file(1, false).done());
    let cut = write(dir.path(), "cut.gguf", &small_file(3, false).done()[..40]);
    let out = dir.path().join("out.gguf");
    let missing = dir.path().join("missing.gguf");
    let unwritable = dir.path().join("no-such-dir/out.gguf");
    let cases: [(&str, Vec<&str>, i32); 8] = [
        ("decode", vec!["rewrite", s(&cut), s(&out)], 1),
        (
            "I/O: missing input",
            vec!["rewrite", s(&missing), s(&out)],
            2,
        ),
        (
            "I/O: unwritable output",
            vec!["rewrite", s(&good), s(&unwritable)],
            2,
        ),
        // Tensor `a` is 4 f32s: not whole Q8_0 blocks of 32.
        (
            "quant refusal",
            vec![
                "convert",
                s(&good),
                "-o",
                s(&out),
                "--type",
                "q8_0",
                "--tensor",
                "a",
            ],
            1,
        ),
        (
            "nothing chosen",
            vec!["convert", s(&good), "-o", s(&out), "--type", "q8_0"],
            1,
        ),
        (
            "endian refusal",
            vec!["convert-endian", s(&v1), "-o", s(&out)],
            1,
        ),
        ("split refusal", vec!["merge", s(&good), s(&out)], 1),
        (
            "edit refusal",
            vec!["edit", s(&good), "-o", s(&out), "--delete", "no.such.key"],
            1,
        ),
    ];
    for (kind, args, code) in cases {
        let got = ggufrw(&args);
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(code), "{kind}: {stderr}");
        assert!(
            !out.exists(),
            "{kind}: a refused job left {}",
            out.display()
        );
        assert!(
            stderr.contains(".gguf"),
            "{kind}: the error names no file: {stderr}"
        );
    }
}
