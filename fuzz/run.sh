#!/usr/bin/env bash
# Regenerates the seed corpus, replays the saved regressions, then fuzzes each target for
# SECONDS (default 60), one after another, on the stable toolchain (libFuzzer, no sanitizer).
# Exits non-zero if any target crashes, panics, leaks, times out or runs out of memory.
#
#   fuzz/run.sh [SECONDS]
#
# Everything runs under `nice -n 19` with one fuzzing process at a time. Crash inputs land in
# fuzz/artifacts/TARGET/; the log of each run in fuzz/target/fuzz-logs/TARGET.log.
set -uo pipefail

seconds=${1:-60}
targets=(decode roundtrip validate mmap_tensors edit payload quantize imatrix plan lossless_build
    merge remote safetensors tokenizer_files)
# The differential targets link ggml's own code, built from the pinned llama.cpp sources by
# scripts/ggml.sh (Python 3 and a C++ compiler); where it does not build they are skipped.
ggml_targets=(ggml_reader ggml_dequantize)
cd "$(dirname "$0")"

if ! cargo fuzz --version >/dev/null 2>&1; then
    nice -n 19 cargo install cargo-fuzz --version 0.13.2 --locked || exit 2
fi

# `-s none`: no sanitizer, so nothing needs a nightly compiler (safe Rust gains little from
# ASan; fuzz/src/lib.rs caps and measures allocations and checks for leaks instead).
# `-a`: debug assertions and overflow checks on, in an optimised build.
flags=(-s none -a)
mkdir -p target
if ggml=$(nice -n 19 ../scripts/ggml.sh --lib 2>target/ggml.log); then
    GGUFRW_GGML_LIB=$(sed -n 1p <<<"$ggml")
    GGUFRW_GGML_SRC=$(sed -n 2p <<<"$ggml")
    export GGUFRW_GGML_LIB GGUFRW_GGML_SRC
    flags+=(--features ggml)
    targets+=("${ggml_targets[@]}")
else
    echo "ggml's library did not build (fuzz/target/ggml.log): ${ggml_targets[*]} skipped"
fi
# The maximum input length is set so that larger files can grow from the seeds; `-timeout`
# turns anything slower than 10 s on one input into a failure (a hang).
libfuzzer=(-max_len=16384 -timeout=10 -rss_limit_mb=2048 -dict=gguf.dict -print_final_stats=1)

nice -n 19 cargo run --quiet --features seeds --bin seeds || exit 2
nice -n 19 cargo fuzz build "${flags[@]}" || exit 2

mkdir -p target/fuzz-logs
failed=()
for t in "${targets[@]}"; do
    if compgen -G "regressions/$t/*" >/dev/null; then
        echo "== $t: replaying regressions/$t"
        if ! nice -n 19 cargo fuzz run "${flags[@]}" "$t" regressions/"$t"/* \
            >"target/fuzz-logs/$t-regressions.log" 2>&1; then
            echo "$t: a saved regression fails again; see fuzz/target/fuzz-logs/$t-regressions.log"
            failed+=("$t (regression)")
        fi
    fi
    echo "== $t: fuzzing for ${seconds}s"
    mkdir -p "corpus/$t"
    if nice -n 19 cargo fuzz run "${flags[@]}" "$t" "corpus/$t" -- \
        "${libfuzzer[@]}" -max_total_time="$seconds" >"target/fuzz-logs/$t.log" 2>&1; then
        grep -E '^#[0-9]+ +DONE|stat::(number_of_executed_units|average_exec_per_sec)' \
            "target/fuzz-logs/$t.log"
    else
        tail -n 40 "target/fuzz-logs/$t.log"
        echo "$t: FAILED; the input is in fuzz/artifacts/$t/"
        failed+=("$t")
    fi
done

if ((${#failed[@]})); then
    echo "fuzzing failed: ${failed[*]}"
    exit 1
fi
echo "fuzzing passed: ${targets[*]} (${seconds}s each)"
