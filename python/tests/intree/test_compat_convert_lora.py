"""The pinned convert_lora_to_gguf.py itself, run on ggufrw.compat (torch and peft installed,
gguf-py not): every case of the `convert-lora` comparison (tests/convert_hf/lora.py: adapters
made by peft on convert-hf's fixtures, each outtype) gives the same files, byte for byte, and the
same exit status as its run on the tree's gguf-py; and `ggufrw.convert_lora` writes those bytes
too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LORA = ROOT / "tests" / "convert_hf" / "lora.py"


def convert(tree: Path, work: Path, on: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, str(LORA), "--llama-cpp", str(tree), "--work", str(work), "--gguf", on],
        capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    name = "lora-cases.json" if on == "gguf-py" else "lora-cases-ggufrw.json"
    return json.loads((work / name).read_text())


@pytest.fixture(scope="module")
def reference_run(tree, tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    work = tmp_path_factory.mktemp("convert_lora")
    return work, convert(tree, work, "gguf-py")


def test_convert_lora_to_gguf_runs_on_ggufrw_with_the_same_output(tree, reference_run):
    work, theirs = reference_run
    ours = convert(tree, work, "ggufrw")
    assert [c["case"] for c in ours] == [c["case"] for c in theirs]
    identical = 0
    for a, b in zip(ours, theirs):
        for key in ("status", "error", "outputs"):
            assert a[key] == b[key], (a["case"], key, a[key], b[key])
        for rel in b["outputs"]:
            x = (work / "lora-ref-ggufrw" / a["case"] / rel).read_bytes()
            y = (work / "lora-ref" / a["case"] / rel).read_bytes()
            assert x == y, (a["case"], rel, len(x), len(y))
            identical += 1
    assert identical >= 20


def test_ggufrw_convert_lora_writes_the_references_bytes(reference_run, tmp_path):
    import ggufrw

    work, theirs = reference_run
    compared = 0
    for case in theirs:
        args = case["args"]
        outtype = args[args.index("--outtype") + 1]
        outfile = args[args.index("--outfile") + 1]
        if not outfile.endswith(".gguf") or "{" in outfile or "--bigendian" in args:
            continue
        out = tmp_path / outfile
        if case["status"] != 0:
            with pytest.raises(ggufrw.Error):
                ggufrw.convert_lora(case["adapter"], case["base"], out, outtype=outtype)
            assert not out.exists()
            continue
        result = ggufrw.convert_lora(case["adapter"], case["base"], out, outtype=outtype)
        assert result.output == str(out) and result.tensors > 0
        assert out.read_bytes() == (work / "lora-ref" / case["case"] / outfile).read_bytes(), case["case"]
        if case["case"].startswith("tinyllama-rslora"):
            assert any("use_rslora" in w for w in result.warnings), result.warnings
        compared += 1
    assert compared >= 20
