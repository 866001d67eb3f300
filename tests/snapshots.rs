//! What the commands print, checked in: `dump --json` and `check --json` (both profiles) over
//! every file of the hostile corpus and over small valid files of every version and byte
//! order. A change in what a command prints is then a reviewed diff of `tests/snapshots/`;
//! `GGUFRW_BLESS=1 cargo test --test integration snapshots::` rewrites them.

use crate::common;

use common::small_file;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `ggufrw ARGS` in `dir`: one JSON line with the exit code, stdout (as JSON where it is)
/// and stderr.
fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<serde_json::Value> = (stdout.lines())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| serde_json::Value::from(l)))
        .collect();
    serde_json::json!({
        "args": args,
        "exit": out.status.code(),
        "stdout": lines,
        "stderr": String::from_utf8_lossy(&out.stderr),
    })
    .to_string()
}

/// The snapshot `name`, blessed by this file's command.
fn snapshot(name: &str, text: &str) {
    common::snapshot(name, text, "cargo test --test integration snapshots::");
}

/// Every command's output on every file of `dir` named by `files`, one line per run.
fn outputs(dir: &Path, files: &[String]) -> String {
    let mut out = String::new();
    for file in files {
        for args in [
            vec!["dump", "--json", file],
            vec!["check", "--json", file],
            vec!["check", "--json", "--profile", "ggml", file],
        ] {
            out.push_str(&run(dir, &args));
            out.push('\n');
        }
    }
    out
}

#[test]
fn hostile_corpus_outputs_are_the_checked_in_ones() {
    let dir = common::root().join("tests/hostile");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".gguf"))
        .collect();
    files.sort();
    assert!(files.len() > 100, "the corpus is in tests/hostile/");
    snapshot("hostile.jsonl", &outputs(&dir, &files));
}

#[test]
fn fixture_outputs_are_the_checked_in_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (version, big) in ggufrw_conform::strategy::combinations()
        .into_iter()
        .map(|(v, o)| (v, o == ggufrw::ByteOrder::Big))
    {
        let name = format!(
            "small-v{version}-{}.gguf",
            if big { "big" } else { "little" }
        );
        let path: PathBuf = dir.path().join(&name);
        std::fs::write(&path, small_file(version, big).done()).unwrap();
        files.push(name);
    }
    snapshot("fixtures.jsonl", &outputs(dir.path(), &files));
}
