//! Starting the peers the tests compare with, and running the differential properties each
//! declares it can take, with failures kept in `proptest-regressions/`.

use super::peer_or_skip;
use ggufrw_conform::peer::{
    check_peer_reads, check_peer_writes, ggml_from_env, hf_gguf_from_env, plan, python_from_env,
    Peer,
};
use ggufrw_conform::strategy::file_with;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use std::cell::RefCell;

/// gguf-py, from `GGUFRW_PYTHON` (scripts/test.sh sets it); `None` after saying SKIPPED where
/// it is unset. A peer that is named but does not start fails the test.
pub fn gguf_py() -> Option<Peer> {
    let python = peer_or_skip(python_from_env())?;
    Some(Peer::gguf_py(&python).unwrap_or_else(|e| panic!("{e}")))
}

/// ggml, from `GGUFRW_GGML` (scripts/test.sh sets it); `None` after saying SKIPPED where unset.
pub fn ggml() -> Option<Peer> {
    let adapter = peer_or_skip(ggml_from_env())?;
    Some(Peer::ggml(&adapter).unwrap_or_else(|e| panic!("{e}")))
}

/// @huggingface/gguf, from `GGUFRW_HF_GGUF` (scripts/test.sh sets it where Node.js is); `None`
/// after saying SKIPPED where unset.
pub fn hf_gguf() -> Option<Peer> {
    let (node, dir) = peer_or_skip(hf_gguf_from_env())?;
    Some(Peer::hf_gguf(&node, &dir).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs every property the peer's capabilities allow (it writes, ggufrw reads; ggufrw writes,
/// it reads; in each version and byte order both have), `cases` each, keeping failures in
/// `proptest-regressions/{regressions}.txt`. Returns (check, version, order, cases run).
pub fn run_plan(peer: Peer, regressions: &str, cases: u32) -> Vec<(String, u32, String, u32)> {
    let entries = plan(&peer);
    assert!(
        !entries.is_empty(),
        "{} declares nothing to check",
        peer.name()
    );
    let peer = RefCell::new(peer);
    let mut done = Vec::new();
    for (check, options) in entries {
        let (version, order) = (options.version, options.byte_order.name().to_owned());
        let config = Config {
            cases,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(Box::leak(
                format!(
                    "{}/../proptest-regressions/{regressions}.txt",
                    env!("CARGO_MANIFEST_DIR")
                )
                .into_boxed_str(),
            )))),
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(
            config.clone(),
            proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm),
        );
        let ran = std::cell::Cell::new(0u32);
        let result = runner.run(&file_with(options), |sample| {
            let peer = &mut peer.borrow_mut();
            let outcome = if check == "peer writes" {
                check_peer_writes(peer, &sample)
            } else {
                check_peer_reads(peer, &sample)
            };
            outcome.map_err(TestCaseError::fail)?;
            ran.set(ran.get() + 1);
            Ok(())
        });
        if let Err(e) = result {
            panic!("{check} v{version} {order}: {e}");
        }
        eprintln!("{check} v{version} {order}: {} cases", ran.get());
        done.push((check.to_owned(), version, order, ran.get()));
    }
    done
}

/// [`run_plan`], which must have run exactly the checks `expected` (`"CHECK vVERSION ORDER"`):
/// what it returned.
pub fn expect_plan(
    peer: Peer,
    regressions: &str,
    cases: u32,
    expected: &[&str],
) -> Vec<(String, u32, String, u32)> {
    let done = run_plan(peer, regressions, cases);
    let checks: Vec<_> = (done.iter())
        .map(|(c, v, o, _)| format!("{c} v{v} {o}"))
        .collect();
    assert_eq!(checks, expected);
    done
}
