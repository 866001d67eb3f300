#!/usr/bin/env bash
# Every speed benchmark in one run, each measuring its own floor side by side:
#   benches/speed.py  header parse (zero-copy view, owned), check, header write, against read()
#                     of the header + one pass and against gguf-py's GGUFReader, on a
#                     256,000-token header, a 20,000-tensor header and the real Gemma 3 file;
#   benches/copy.py   a 2 GiB file written by the streaming writer and by `edit`, against cp and
#                     a plain write of the same bytes.
# Usage: scripts/bench.sh [--runs N]   (criterion micro-benchmarks: cargo bench --bench header)
set -euo pipefail
cd "$(dirname "$0")/.."
GGUFRW_PYTHON="$(scripts/peers.sh --with-model)"
export GGUFRW_PYTHON
runs=9
if [[ "${1:-}" == "--runs" ]]; then runs=$2; fi
python3 benches/speed.py --runs "$runs"
python3 benches/copy.py --size-mib 2048 --runs 3
