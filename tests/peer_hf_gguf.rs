//! Differential property against @huggingface/gguf 0.4.6 (npm, read only), the parser behind
//! Hugging Face's model pages, through conform/peers/hf_gguf_peer.mjs. Needs `GGUFRW_HF_GGUF`
//! (scripts/test.sh sets it from scripts/peers-node.sh); without it, the test says SKIPPED.

use crate::common;

use common::peers::{hf_gguf, run_plan};

/// ggufrw writes every version and byte order it reads (v1–v3, both orders, any layout,
/// arrays nested up to its depth of 4); @huggingface/gguf reads the same content (inner
/// arrays compared without their element types, which it does not keep; no tensor sizes).
#[test]
fn hf_gguf_reads_what_ggufrw_writes() {
    let Some(peer) = hf_gguf() else {
        return;
    };
    let done = run_plan(peer, "peer_hf_gguf", 500);
    assert_eq!(done.len(), 5, "{done:?}");
    assert!(done.iter().all(|(c, ..)| c == "peer reads"));
    assert!(done.iter().all(|(.., n)| *n >= 500));
}
