//! Writes the seed corpus into `DIR/<target>/` (default DIR: `fuzz/corpus`). The header
//! targets get `SAMPLES` valid files drawn from `ggufrw_conform::strategy::any_file()` with a
//! fixed seed (every version and byte order, every value type, tensors of every ggml type,
//! gaps, padding, trailing bytes) and the hostile corpus of `tests/hostile/` (files up to the
//! fuzzers' 16 KiB input limit); the targets with inputs of their own get those files in their
//! shape (shard sets, lossless JSON, importance matrices, models to quantize, rows of floats,
//! blocks of every type).
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --features seeds --bin seeds [DIR]
//! ```

use ggufrw_conform::strategy::any_file;
use ggufrw_fuzz::seeds as own;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::PathBuf;

/// The fuzzers' `-max_len`.
const MAX_LEN: usize = 16384;
/// How many generated files.
const SAMPLES: usize = 200;
/// The generator's seed: the same corpus every time.
const SEED: [u8; 32] = *b"ggufrw fuzz seed corpus, fixed.\0";
/// The targets whose input is a file (each gets the same seeds; libFuzzer adds its own finds
/// to the folder).
const FILE_TARGETS: [&str; 5] = ["decode", "roundtrip", "validate", "mmap_tensors", "edit"];

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/corpus")));

    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &SEED);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = any_file();
    for i in 0..SAMPLES {
        let sample = strategy
            .new_tree(&mut runner)
            .expect("the strategy never rejects")
            .current();
        let bytes = sample.encode().expect("generated files are writable");
        seeds.push((format!("sample-{i:03}"), bytes));
    }
    let hostile = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/hostile"));
    let mut files: Vec<_> = std::fs::read_dir(&hostile)
        .expect("tests/hostile/ is there")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    files.sort();
    for path in files {
        let bytes = std::fs::read(&path).expect("a corpus file reads");
        if bytes.len() <= MAX_LEN {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            seeds.push((format!("hostile-{name}"), bytes));
        }
    }

    let mut corpora: Vec<(&str, Vec<(String, Vec<u8>)>)> =
        FILE_TARGETS.iter().map(|&t| (t, seeds.clone())).collect();
    corpora.extend([
        ("payload", own::payload()),
        ("quantize", own::quantize()),
        ("imatrix", own::imatrix()),
        ("plan", own::plan()),
        ("lossless_build", own::lossless(&seeds)),
        ("merge", own::merge(&seeds)),
        ("remote", own::remote(&seeds)),
    ]);
    for (target, seeds) in &corpora {
        let out = dir.join(target);
        std::fs::create_dir_all(&out).expect("create the corpus folder");
        let mut total = 0;
        for (name, bytes) in seeds.iter().filter(|(_, b)| b.len() <= MAX_LEN) {
            std::fs::write(out.join(name), bytes).expect("write a seed");
            total += bytes.len();
        }
        println!("{target}: {} seeds, {total} bytes", seeds.len());
    }
}
