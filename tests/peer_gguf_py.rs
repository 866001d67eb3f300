//! Differential properties against gguf-py 0.19.0, the reference Python implementation,
//! through its adapter (conform/peers/gguf_py_peer.py). Needs `GGUFRW_PYTHON` (scripts/test.sh
//! sets it); without it these tests fail, saying how to get it.

use crate::common;

use common::peers::{expect_plan, gguf_py};
use ggufrw_conform::peer::Peer;

/// gguf-py writes (v3, both byte orders); ggufrw reads the same content, re-encodes
/// byte-identically, and writes the same content to the same bytes. ggufrw writes (v2 and v3,
/// both byte orders, any layout); gguf-py reads the same content.
#[test]
fn gguf_py_and_ggufrw_read_what_the_other_writes() {
    let Some(peer) = gguf_py() else {
        return;
    };
    let done = expect_plan(
        peer,
        "peer_gguf_py",
        1000,
        &[
            "peer writes v3 little",
            "peer writes v3 big",
            "peer reads v2 little",
            "peer reads v2 big",
            "peer reads v3 little",
            "peer reads v3 big",
        ],
    );
    assert!(done.iter().all(|(.., n)| *n >= 1000));
}

/// gguf-py's own table: its q8_1 is 40 bytes a block (ggml: 36), so its adapter does not
/// declare q8_1.
#[test]
fn gguf_py_leaves_out_what_it_sizes_wrong() {
    let Some(peer) = gguf_py() else {
        return;
    };
    let caps = peer.capabilities().read.as_ref().unwrap();
    assert!(!caps.tensor_types.contains(&ggufrw::GgmlType::Q8_1));
    assert!(!caps.tensor_types.contains(&ggufrw::GgmlType::Q2_0));
    assert!(caps.tensor_types.contains(&ggufrw::GgmlType::Q4_K));
}

/// Without the peer the tests say how to get it.
#[test]
fn missing_peer_is_explained() {
    let err = Peer::gguf_py(std::path::Path::new("/nonexistent/python"))
        .err()
        .unwrap();
    assert!(err.contains("cannot run /nonexistent/python"), "{err}");
    assert!(err.contains("pip install gguf==0.19.0"), "{err}");
}

/// `ggufrw conform --peer gguf-py` runs the same harness from the command line.
#[test]
fn conform_peer_from_the_command_line() {
    let Some(python) = common::python() else {
        return;
    };
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
        "peer writes     3        little",
        "peer reads      2        big",
    ] {
        assert!(text.contains(row), "{text}");
    }
    assert!(text.contains("against gguf-py"), "{text}");
    let out = run("/nonexistent/python");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/python"));
}
