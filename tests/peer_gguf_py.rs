//! Differential properties against gguf-py 0.19.0, the reference Python implementation.
//! Needs `GGUFRW_PYTHON` (scripts/test.sh sets it); without it these tests fail, saying how to
//! get it.

use ggufrw::conform::peer::{
    check_peer_reads, check_peer_writes, peer_readable, peer_writable, python_from_env, GgufPy,
};
use ggufrw::conform::strategy::{file_with, Sample};
use ggufrw::ByteOrder;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use std::cell::RefCell;

fn gguf_py() -> GgufPy {
    let python = python_from_env().unwrap_or_else(|e| panic!("{e}"));
    GgufPy::start(&python).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `check` over `cases` samples from `strategy`, keeping failures in
/// proptest-regressions/.
fn run(
    name: &'static str,
    cases: u32,
    strategy: BoxedStrategy<Sample>,
    check: fn(&mut GgufPy, &Sample) -> Result<u64, String>,
) -> u64 {
    let py = RefCell::new(gguf_py());
    let config = ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(name))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config.clone(),
        proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm),
    );
    let ran = std::cell::Cell::new(0u64);
    let result = runner.run(&strategy, |sample| {
        check(&mut py.borrow_mut(), &sample).map_err(TestCaseError::fail)?;
        ran.set(ran.get() + 1);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("{name}: {} cases", ran.get());
    ran.get()
}

/// a + c: gguf-py writes; ggufrw reads the same content, re-encodes byte-identically, and
/// writes the same content to the same bytes.
#[test]
fn gguf_py_writes_ggufrw_reads_and_matches_bytes() {
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let n = run(
            "proptest-regressions/peer_gguf_py_writes.txt",
            2000,
            file_with(peer_writable(order)),
            check_peer_writes,
        );
        assert!(n >= 2000);
    }
}

/// b: ggufrw writes (v2 and v3, both byte orders, any layout); gguf-py reads the same content.
#[test]
fn ggufrw_writes_gguf_py_reads() {
    for version in [2, 3] {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let n = run(
                "proptest-regressions/peer_gguf_py_reads.txt",
                1000,
                file_with(peer_readable(version, order)),
                check_peer_reads,
            );
            assert!(n >= 1000);
        }
    }
}

/// Without the peer the tests say how to get it.
#[test]
fn missing_peer_is_explained() {
    let err = GgufPy::start(std::path::Path::new("/nonexistent/python"))
        .err()
        .unwrap();
    assert!(err.contains("cannot run /nonexistent/python"), "{err}");
}

/// `ggufrw conform --peer gguf-py` runs the same harness from the command line.
#[test]
fn conform_peer_from_the_command_line() {
    let python = python_from_env().unwrap_or_else(|e| panic!("{e}"));
    let run = |python: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .args([
                "conform", "--peer", "gguf-py", "--cases", "60", "--python", python,
            ])
            .output()
            .unwrap()
    };
    let out = run(python.to_str().unwrap());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for row in [
        "gguf-py writes  3        little",
        "gguf-py reads   2        big",
    ] {
        assert!(text.contains(row), "{text}");
    }
    let out = run("/nonexistent/python");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/python"));
}
