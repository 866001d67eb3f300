//! `ggufrw export-hf`'s weights and config against transformers (`tests/export_hf/weights_check.py`,
//! one Python process for every case): the convert-hf fixtures converted by the pinned
//! `convert_hf_to_gguf.py` (f32, f16, q8_0) and quantized by `ggufrw quantize` (Q4_K_M, Q6_K),
//! Gemma 3 270M Q4_K_M and SmolLM2-135M-Instruct Q4_1. Every exported tensor must equal, bit for
//! bit, the one transformers' `from_pretrained(gguf_file=...)` loads; the folder must load with
//! no missing, unexpected or mismatched tensor and give transformers' logits; each f32 file must
//! give back its checkpoint's tensors and logits, and its export converted again (by the
//! reference and by `convert-hf`, the same bytes) the same file but for what a GGUF does not
//! hold. `GGUFRW_EXPORT_SET=full` runs every fixture and file (the default: the f32 and Q4_K_M
//! files of one fixture per undo step). `GGUFRW_CONVERT_REF` names
//! the Python with torch and transformers, `GGUFRW_LLAMA_CPP` the tree; without them the test
//! says SKIPPED.

use crate::common;
use std::process::Command;

/// One fixture per family and undo step: Llama's q/k permutation (grouped heads, Llama 3 rope
/// factors), Gemma's norm offset, Qwen 3's q/k norms, Phi-3's fused gate/up and
/// long-rope factors, and the experts split again (Qwen 1.5 MoE, with its shared expert; Qwen 3
/// MoE is in the full set only: transformers takes minutes to load each of its files); and
/// Qwen 2.5 for the model card's provenance keys, which must come back from the README.
const FAST: &str = "Llama-3.1-Tiny-Rope,gemma-3-tiny-it,Qwen3-Tiny,Phi-3-tiny-4k-instruct,\
                    Qwen1.5-MoE-Tiny-A1B,Qwen2.5-Tiny-Instruct";

#[test]
fn exported_weights_equal_transformers() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let Some(gemma) = common::gemma() else {
        return;
    };
    let (fixtures, types) = match std::env::var("GGUFRW_EXPORT_SET").as_deref() {
        Ok("full") => ("all".to_owned(), "f32,f16,q8_0,Q4_K_M,Q6_K"),
        // The f32 file (tensors, logits and both round trips) and one K-quant preset.
        _ => (FAST.to_owned(), "f32,Q4_K_M"),
    };
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(py)
        .arg(common::root().join("tests/export_hf/weights_check.py"))
        .arg("--llama-cpp")
        .arg(&tree)
        .arg("--ggufrw")
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .arg("--work")
        .arg(work.path())
        .args(["--fixtures", &fixtures, "--types", types, "--with-smollm2"])
        .arg(&gemma)
        .output()
        .expect("the weights check starts");
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        out.status.success(),
        "an exported folder differs from transformers' or its checkpoint's:\n{table}\n{}",
        lines[lines.len().saturating_sub(30)..].join("\n")
    );
    // Every fixture asked for and both real models were checked, none only skipped.
    let checked = table.lines().filter(|l| l.starts_with("ok ")).count();
    let wanted = if fixtures == "all" {
        0
    } else {
        fixtures.split(',').count() * types.split(',').count() + 2
    };
    assert!(
        checked >= wanted,
        "{checked} file(s) checked, at least {wanted} expected:\n{table}"
    );
}

/// The files of an exported folder, name and bytes, sorted.
fn folder(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// A split model exports to the same folder as the whole file (the README apart, which names
/// each shard), and a shard that is not the first, or a set with a shard missing, is refused
/// with nothing left behind.
#[test]
fn a_split_model_exports_as_the_whole_file() {
    let Some(gemma) = common::gemma() else {
        return;
    };
    let gemma = gemma.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = |p: &str| tmp.path().join(p).to_str().unwrap().to_owned();
    common::assert_ok(
        &common::ggufrw(&["split", "--max-tensors", "100", gemma, &path("g")]),
        "split",
    );
    for (input, out) in [
        (gemma.to_owned(), "whole"),
        (path("g-00001-of-00003.gguf"), "split"),
    ] {
        let args = ["export-hf", &input, "-o", &path(out), "--dtype", "f16"];
        common::assert_ok(&common::ggufrw(&args), &format!("{args:?}"));
    }
    let without_readme = |d: &str| {
        let mut f = folder(&tmp.path().join(d));
        f.retain(|(n, _)| n != "README.md");
        f
    };
    let (whole, split) = (without_readme("whole"), without_readme("split"));
    assert_eq!(
        whole.iter().map(|f| &f.0).collect::<Vec<_>>(),
        split.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (a, b) in whole.iter().zip(&split) {
        assert!(
            a.1 == b.1,
            "{} differs between the whole and the split export",
            a.0
        );
    }
    let readme = std::fs::read_to_string(tmp.path().join("split/README.md")).unwrap();
    assert_eq!(readme.matches("sha256").count(), 3, "{readme}");

    let refused = |input: &str, why: &str| {
        let out = common::ggufrw(&["export-hf", input, "-o", &path("refused")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{input}: {err}");
        assert!(
            !tmp.path().join("refused").exists(),
            "{input}: output left behind"
        );
        let stray: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("tmp"))
            .collect();
        assert!(stray.is_empty(), "{input}: staging left behind: {stray:?}");
    };
    refused(&path("g-00002-of-00003.gguf"), "split.no");
    std::fs::remove_file(path("g-00003-of-00003.gguf")).unwrap();
    refused(
        &path("g-00001-of-00003.gguf"),
        "g-00003-of-00003.gguf is missing",
    );
}

/// An output folder that holds anything is refused and left as it was.
#[test]
fn a_folder_in_use_is_not_written_into() {
    let Some(gemma) = common::gemma() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("mine.txt"), b"keep").unwrap();
    let out = common::ggufrw(&[
        "export-hf",
        gemma.to_str().unwrap(),
        "-o",
        tmp.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert_eq!(
        folder(tmp.path()),
        vec![("mine.txt".to_owned(), b"keep".to_vec())]
    );
}
