#!/usr/bin/env bash
# The public surface of the library crates, one line per nameable item and per public method,
# from rustdoc's JSON (a stable toolchain with RUSTC_BOOTSTRAP=1 for `--output-format json`),
# compared with tests/snapshots/public-api/CRATE.txt so that a change to the surface shows in
# review. `scripts/public-api.sh --bless` rewrites the snapshots.
set -euo pipefail
cd "$(dirname "$0")/.."
bless=${1:-}
status=0
for crate in ggufrw ggufrw-schema ggufrw-quant ggufrw-hf; do
    lib=${crate//-/_}
    RUSTC_BOOTSTRAP=1 cargo rustdoc --quiet -p "${crate}" --all-features --lib -- \
        -Z unstable-options --output-format json
    snapshot="tests/snapshots/public-api/${crate}.txt"
    listing=$(python3 scripts/public_api.py "target/doc/${lib}.json")
    echo "${crate}: $(echo "${listing}" | grep -cv '^\(method\|variant\|trait-item\) ' || true) public items," \
        "$(echo "${listing}" | wc -l) with methods, variants and trait items"
    if [ "${bless}" = "--bless" ]; then
        mkdir -p "$(dirname "${snapshot}")"
        echo "${listing}" > "${snapshot}"
    elif ! diff -u "${snapshot}" <(echo "${listing}"); then
        echo "public-api.sh: ${crate}'s public surface changed; if it is meant, run scripts/public-api.sh --bless" >&2
        status=1
    fi
done
exit "${status}"
