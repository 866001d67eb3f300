//! Writes the seed corpus: `SAMPLES` valid files drawn from `ggufrw_conform::strategy::any_file()` with a
//! fixed seed (every version and byte order, every value type, tensors of every ggml type,
//! gaps, padding, trailing bytes), and the hostile corpus of `tests/hostile/` (files up to the
//! fuzzers' 16 KiB input limit), into `DIR/<target>/` for every target (default DIR:
//! `fuzz/corpus`).
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --features seeds --bin seeds [DIR]
//! ```

use ggufrw_conform::strategy::any_file;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::PathBuf;

/// The fuzzers' `-max_len`.
const MAX_LEN: usize = 16384;
/// How many generated files.
const SAMPLES: usize = 200;
/// The generator's seed: the same corpus every time.
const SEED: [u8; 32] = *b"ggufrw fuzz seed corpus, fixed.\0";
/// Every fuzz target (each gets the same seeds; libFuzzer adds its own finds to the folder).
const TARGETS: [&str; 5] = ["decode", "roundtrip", "validate", "mmap_tensors", "edit"];

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

    for target in TARGETS {
        let out = dir.join(target);
        std::fs::create_dir_all(&out).expect("create the corpus folder");
        for (name, bytes) in &seeds {
            std::fs::write(out.join(name), bytes).expect("write a seed");
        }
    }
    let total: usize = seeds.iter().map(|(_, b)| b.len()).sum();
    let largest = seeds.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
    println!(
        "{} seeds ({total} bytes, largest {largest}) in each of {}/{{{}}}",
        seeds.len(),
        dir.display(),
        TARGETS.join(",")
    );
}
