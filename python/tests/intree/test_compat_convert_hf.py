"""The pinned convert_hf_to_gguf.py itself, run on ggufrw.compat (torch installed, gguf-py not):
every case of the `convert-hf` comparison (tests/convert_hf/reference.py: the fixtures made with
transformers' own classes, each outtype, vocab-only, splits, dry runs, big-endian) gives the same
files, byte for byte, the same exit status and the same warnings as its run on the tree's gguf-py.

GGUFRW_CONVERT_SET=full runs every case (the default is the fast subset)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "tests" / "convert_hf" / "reference.py"


def unlocated(warning: str) -> str:
    return re.sub(r"^\S+\.py:\d+: ", "", warning)


def convert(tree: Path, work: Path, on: str) -> tuple[list[dict], float]:
    """Runs every case on one side; its results and the seconds its conversions took. The
    reference's own run (on gguf-py) is read from `work` where the Rust comparison
    (tests/convert_hf.rs) made it there, of the same set (scripts/test.sh:
    GGUFRW_CONVERT_WORK)."""
    run = work / "run.json"
    if on == "gguf-py" and run.is_file() and (work / "cases.json").is_file():
        made = json.loads(run.read_text())
        if made.get("set") == os.environ.get("GGUFRW_CONVERT_SET", "fast"):
            return json.loads((work / "cases.json").read_text()), float(made["conversions"])
    proc = subprocess.run(
        [sys.executable, str(REFERENCE), "--llama-cpp", str(tree), "--work", str(work),
         "--set", os.environ.get("GGUFRW_CONVERT_SET", "fast"), "--gguf", on],
        capture_output=True, text=True, timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    seconds = float(re.search(r"conversions ([0-9.]+) s", proc.stdout)[1])
    name = "cases.json" if on == "gguf-py" else "cases-ggufrw.json"
    return json.loads((work / name).read_text()), seconds


@pytest.fixture(scope="module")
def reference_run(tree, tmp_path_factory):
    """The fixtures and the reference's run of every case on the tree's gguf-py."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    shared = os.environ.get("GGUFRW_CONVERT_WORK")
    work = Path(shared) if shared else tmp_path_factory.mktemp("convert_hf")
    work.mkdir(parents=True, exist_ok=True)
    theirs, seconds = convert(tree, work, "gguf-py")
    return work, theirs, seconds


def test_convert_hf_to_gguf_runs_on_ggufrw_with_the_same_output(tree, timings, reference_run):
    work, theirs, t_theirs = reference_run
    ours, t_ours = convert(tree, work, "ggufrw")
    assert [c["case"] for c in ours] == [c["case"] for c in theirs]
    identical = 0
    for a, b in zip(ours, theirs):
        name = a["case"]
        for key in ("status", "error", "outputs"):
            assert a[key] == b[key], (name, key, a[key], b[key])
        # a Python warning's text starts with the file and line that raised it, which are ours
        assert list(map(unlocated, a["warnings"])) == list(map(unlocated, b["warnings"])), name
        for rel in b["outputs"]:
            x = (work / "ref-ggufrw" / name / rel).read_bytes()
            y = (work / "ref" / name / rel).read_bytes()
            assert x == y, (name, rel, len(x), len(y))
        identical += bool(b["outputs"])
    assert identical >= 10
    timings.append((f"convert_hf_to_gguf.py, {len(theirs)} cases (conversion time)", t_theirs, t_ours,
                    f"{identical} cases' files byte-identical"))


@pytest.mark.parametrize("outtype", ["f32", "f16", "q8_0"])
def test_convert_legacy_llama_runs_on_ggufrw_with_the_same_output(tree, timings, reference_run, tmp_path, outtype):
    # examples/convert_legacy_llama.py: its own loader and lazy tensors, gguf-py's writer, vocab
    # classes, name maps and (for q8_0) quants, on a Llama checkpoint of the fixtures
    work = reference_run[0]
    # where reference.py built the fixtures (scripts/test.sh shares them between the comparisons)
    model = Path(os.environ.get("GGUFRW_CONVERT_FIXTURES") or work / "fixtures") / "TinyLlama-Test-v0.1"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "gguf-py"), os.environ.get("PYTHONPATH", "")]))
    results = {}
    for which, prefix in (("gguf-py", []), ("ggufrw", ["-m", "ggufrw.compat"])):
        out = tmp_path / f"{which}.gguf"
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, *prefix, str(tree / "examples" / "convert_legacy_llama.py"), str(model),
                               "--outtype", outtype, "--outfile", str(out)],
                              capture_output=True, text=True, env=env, timeout=900)
        results[which] = (proc, time.perf_counter() - started, out)
    (theirs, t_theirs, a), (ours, t_ours, b) = results["gguf-py"], results["ggufrw"]
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == theirs.stdout
    assert b.read_bytes() == a.read_bytes()
    timings.append((f"convert_legacy_llama.py --outtype {outtype}", t_theirs, t_ours, "same file"))
