#!/usr/bin/env bash
# Create or reuse a Python environment with transformers 5 on top of the reference
# converter's (scripts/convert-ref.sh): a venv whose own site-packages hold transformers 5
# and what it needs, in front of a .pth line naming the reference venv's site-packages, so
# that torch, numpy and sentencepiece are shared rather than installed again (~210 MB, not
# 4.9 GB). tests/convert_hf/reference.py builds with it the fixtures of the classes only
# transformers 5 has (Gemma 4, Ministral 3), saved as transformers 5 saves them; the
# reference itself always runs in the reference venv.
#
# Usage: scripts/convert-tf5.sh
#
# Environment:
#   GGUFRW_CONVERT_TF5_VENV  venv location (default: $HOME/.cache/ggufrw/convert-tf5-5.25.0)
#   (scripts/convert-ref.sh's own variables apply to the reference venv)
#
# Output: the venv's python path, one line on stdout; everything else on stderr.
set -euo pipefail

# transformers 5.25.0 and the versions pip resolved for it next to the reference venv.
PINS=(
    "transformers==5.25.0"
    "huggingface_hub==2.4.0"
    "tokenizers==0.23.3"
    "annotated-doc==0.0.7"
    "annotated-types==0.8.0"
    "anyio==4.16.0"
    "click==8.5.1"
    "h11==0.16.0"
    "httpcore2==2.17.0"
    "httpx2==2.17.0"
    "kernels==0.19.1"
    "markdown-it-py==4.3.0"
    "mdurl==0.1.2"
    "pydantic==2.14.4"
    "pydantic-core==2.50.5"
    "rich==15.0.0"
    "shellingham==1.5.4"
    "tomlkit==0.15.3"
    "truststore==0.10.5"
    "typer==0.29.2"
    "typing-inspection==0.4.5"
    # the image processors that write the vision fixtures' preprocessor_config.json
    "pillow==12.3.0"
)

. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
parse_args "scripts/convert-tf5.sh" 17 -- "$@"

here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
venv="${GGUFRW_CONVERT_TF5_VENV:-${HOME:?HOME is not set}/.cache/ggufrw/convert-tf5-5.25.0}"
py="$venv/bin/python"

exec 3>&1 1>&2

ref_lines="$("$here/convert-ref.sh")" || die "scripts/convert-ref.sh failed"
ref_py="$(printf '%s\n' "$ref_lines" | sed -n 1p)"
ref_site="$("$ref_py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    || die "cannot ask $ref_py for its site-packages"
# the interpreter the reference venv was made from
base_python="$(sed -n 's/^executable = //p' "$(dirname -- "$(dirname -- "$ref_py")")/pyvenv.cfg")"
[ -x "$base_python" ] || base_python="${PYTHON:-python3}"

# transformers 5 must shadow the reference's copy, and the reference's packages be found
have_pins() {
    pins_installed "$py" "${PINS[@]}" || return 1
    "$py" -c "import sys, torch, transformers
assert transformers.__file__.startswith(sys.prefix)
assert '$ref_site'.rstrip('/') in [p.rstrip('/') for p in sys.path]" >/dev/null 2>&1
}

if ! have_pins; then
    take_lock "$venv" || true
    if ! have_pins; then
        ensure_venv "$venv" "$base_python" GGUFRW_CONVERT_TF5_VENV
        site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        # last in the search path ("zz"): this venv's own packages come first
        printf '%s\n' "$ref_site" >"$site/zz-convert-ref.pth"
        note "installing transformers 5.25.0 into $venv (about 210 MB)"
        "$py" -m pip install --quiet --disable-pip-version-check --no-input --no-deps "${PINS[@]}" \
            || die "pip install ${PINS[*]} into $venv failed"
        have_pins || die "after the install, $py cannot import transformers 5 over the reference's torch"
    fi
fi

printf '%s\n' "$py" >&3
