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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "tests" / "convert_hf" / "reference.py"


def convert(tree: Path, work: Path, on: str) -> tuple[list[dict], float]:
    """Runs every case on one side; its results and the seconds its conversions took."""
    proc = subprocess.run(
        [sys.executable, str(REFERENCE), "--llama-cpp", str(tree), "--work", str(work),
         "--set", os.environ.get("GGUFRW_CONVERT_SET", "fast"), "--gguf", on],
        capture_output=True, text=True, timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    seconds = float(re.search(r"conversions ([0-9.]+) s", proc.stdout)[1])
    name = "cases.json" if on == "gguf-py" else "cases-ggufrw.json"
    return json.loads((work / name).read_text()), seconds


def test_convert_hf_to_gguf_runs_on_ggufrw_with_the_same_output(tree, timings, tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    work = tmp_path_factory.mktemp("convert_hf")
    theirs, t_theirs = convert(tree, work, "gguf-py")
    ours, t_ours = convert(tree, work, "ggufrw")
    assert [c["case"] for c in ours] == [c["case"] for c in theirs]
    identical = 0
    for a, b in zip(ours, theirs):
        name = a["case"]
        for key in ("status", "error", "warnings", "outputs"):
            assert a[key] == b[key], (name, key, a[key], b[key])
        for rel in b["outputs"]:
            x = (work / "ref-ggufrw" / name / rel).read_bytes()
            y = (work / "ref" / name / rel).read_bytes()
            assert x == y, (name, rel, len(x), len(y))
        identical += bool(b["outputs"])
    assert identical >= 10
    timings.append((f"convert_hf_to_gguf.py, {len(theirs)} cases (conversion time)", t_theirs, t_ours,
                    f"{identical} cases' files byte-identical"))
