#!/usr/bin/env bash
# Builds the Python package (python/: the wheel, abi3, with maturin) and installs it into the
# peers' virtual environment (scripts/peers.sh: gguf-py 0.19 and the Gemma model, which the
# Python tests compare with), with pytest. With --test, also runs the Python tests.
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
    GGUFRW_PYTHON="$py" "$py" -m pytest python/tests -q -p no:cacheprovider "$@"
fi
echo "$py" >&3
