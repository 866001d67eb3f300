//! Compatibility with llama.cpp's own tools, `llama-gguf-split` and `llama-gguf-hash`, built
//! from the same pinned llama.cpp sources as the ggml peer (`scripts/ggml.sh --tools`;
//! `GGUFRW_LLAMA_TOOLS` names their directory). Where they could not be built, these tests say
//! so and check nothing.

use crate::common;

use common::{gemma, run};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The tools' directory (where llama-gguf-hash is; llama-gguf-split is built with it).
fn tools() -> Option<PathBuf> {
    let hash = common::llama_tool("llama-gguf-hash")?;
    hash.parent().map(Path::to_path_buf)
}

fn ours(args: &[&str], dir: &Path) -> Output {
    run(Path::new(env!("CARGO_BIN_EXE_ggufrw")), args, dir)
}

/// Some files to work on: the real model (where gguf-py's Python, which installs it, is set) and
/// a generated one with every plain type.
fn inputs(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(gemma) = gemma() {
        std::fs::copy(gemma, dir.join("gemma.gguf")).unwrap();
        names.push("gemma.gguf".to_owned());
    }
    let f32s: Vec<u8> = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    ggufrw::Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("a", ggufrw::GgmlType::F32, &[16, 4], f32s.clone())
        .unwrap()
        .tensor("b", ggufrw::GgmlType::Q8_0, &[32], vec![7u8; 34])
        .unwrap()
        .tensor("c", ggufrw::GgmlType::I8, &[3], vec![1, 2, 3])
        .unwrap()
        .write_file(&dir.join("small.gguf"))
        .unwrap();
    names.push("small.gguf".to_owned());
    names
}

/// `ggufrw hash` prints exactly llama-gguf-hash's lines, and checks its manifests.
#[test]
fn hash_lines_are_llama_gguf_hashs() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let hash = tools.join("llama-gguf-hash");
    for file in inputs(dir.path()) {
        for flags in [
            vec!["--sha256", "--sha1", "--xxh64", "--uuid"],
            vec!["--all", "--no-layer"],
            vec![],
        ] {
            let mut args = flags.clone();
            args.push(&file);
            let theirs = run(&hash, &args, dir.path());
            common::assert_ok(&theirs, "the llama.cpp tool");
            let mut mine = vec!["hash"];
            mine.extend(&args);
            let ours_out = ours(&mine, dir.path());
            assert_eq!(
                String::from_utf8_lossy(&ours_out.stdout),
                String::from_utf8_lossy(&theirs.stdout),
                "{file} {flags:?}"
            );
            // Their output is our manifest: all Ok.
            let manifest = dir.path().join("manifest.txt");
            std::fs::write(&manifest, &theirs.stdout).unwrap();
            let mut check = mine.clone();
            check.extend(["--check", "manifest.txt"]);
            let checked = ours(&check, dir.path());
            assert_eq!(
                checked.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&checked.stdout)
            );
        }
    }
    // A manifest line changed: exit 1 and the line says Mismatch.
    let theirs = run(&hash, &["--sha256", "small.gguf"], dir.path());
    let mut text = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let at = text.find("sha256    ").unwrap() + "sha256    ".len();
    let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
    text.replace_range(at..at + 1, flipped);
    std::fs::write(dir.path().join("bad.txt"), text).unwrap();
    let checked = ours(
        &["hash", "--sha256", "small.gguf", "--check", "bad.txt"],
        dir.path(),
    );
    assert_eq!(checked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&checked.stdout).contains("Mismatch"));
}

/// Shards: ours byte-identical to llama-gguf-split's (for files aligned to 32, which its
/// writer assumes); each merges the other's back to the original.
#[test]
fn split_and_merge_are_llama_gguf_splits() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let split = tools.join("llama-gguf-split");
    for file in inputs(dir.path()) {
        for (theirs_flags, ours_flags) in [
            (vec!["--split-max-tensors", "2"], vec!["--max-tensors", "2"]),
            (vec!["--split-max-size", "50M"], vec!["--max-size", "50M"]),
        ] {
            let _ = std::fs::remove_dir_all(dir.path().join("t"));
            let _ = std::fs::remove_dir_all(dir.path().join("o"));
            std::fs::create_dir_all(dir.path().join("t")).unwrap();
            std::fs::create_dir_all(dir.path().join("o")).unwrap();
            let mut args = theirs_flags.clone();
            args.extend([file.as_str(), "t/part"]);
            let theirs = run(&split, &args, dir.path());
            common::assert_ok(&theirs, "the llama.cpp tool");
            let mut mine = vec!["split", file.as_str(), "o/part"];
            mine.extend(&ours_flags);
            let out = ours(&mine, dir.path());
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut names: Vec<_> = std::fs::read_dir(dir.path().join("t"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            let mut our_names: Vec<_> = std::fs::read_dir(dir.path().join("o"))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            our_names.sort();
            assert_eq!(names, our_names, "{file} {ours_flags:?}");
            for name in &names {
                let a = std::fs::read(dir.path().join("t").join(name)).unwrap();
                let b = std::fs::read(dir.path().join("o").join(name)).unwrap();
                assert!(a == b, "{file} {ours_flags:?}: {name:?} differs");
            }
            let first = names[0].to_string_lossy().into_owned();
            let original = std::fs::read(dir.path().join(&file)).unwrap();
            // Ours merges theirs back to the original bytes.
            let merged = ours(&["merge", &format!("t/{first}"), "merged.gguf"], dir.path());
            assert_eq!(
                merged.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&merged.stderr)
            );
            assert!(std::fs::read(dir.path().join("merged.gguf")).unwrap() == original);
            std::fs::remove_file(dir.path().join("merged.gguf")).unwrap();
            // Theirs merges ours (keeping its split keys, as it does).
            let theirs = run(
                &split,
                &["--merge", &format!("o/{first}"), "merged.gguf"],
                dir.path(),
            );
            common::assert_ok(&theirs, "the llama.cpp tool");
            let d = ours(&["diff", "--data", &file, "merged.gguf"], dir.path());
            let text = String::from_utf8_lossy(&d.stdout);
            assert!(text.lines().all(|l| l.contains("key split.")), "{text}");
            std::fs::remove_file(dir.path().join("merged.gguf")).unwrap();
        }
    }
}
