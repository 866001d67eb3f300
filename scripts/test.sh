#!/usr/bin/env bash
# The whole test suite: prepares the Python peer (gguf-py, pinned) and runs every Rust test.
set -euo pipefail
cd "$(dirname "$0")/.."
GGUFRW_PYTHON="$(scripts/peers.sh --with-model)"
export GGUFRW_PYTHON
cargo test --workspace "$@"
