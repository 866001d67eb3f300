"""gguf-py 0.19's own scripts (gguf_dump, gguf_set_metadata, gguf_new_metadata) run on
ggufrw.compat (gguf-py with its reader and writer swapped for ours) print the same and write
the same files as on gguf-py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_support import files as F

SHIM = Path(__file__).resolve().parent / "compat_support" / "shim.py"
DUMP = "gguf.scripts.gguf_dump"
SET = "gguf.scripts.gguf_set_metadata"
NEW = "gguf.scripts.gguf_new_metadata"


def run(which: str, script: str, *args: Any, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_LOCAL_GGUF="1")
    return subprocess.run(
        [sys.executable, str(SHIM), which, script, *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=900,
    )


def same_run(script: str, *args: Any) -> subprocess.CompletedProcess[str]:
    """Runs the script on gguf-py and on ours; asserts equal stdout and exit status."""
    theirs = run("gguf", script, *args)
    ours = run("compat", script, *args)
    assert theirs.returncode == ours.returncode, (theirs.stderr[-2000:], ours.stderr[-2000:])
    assert ours.stdout == theirs.stdout
    return ours


def log_lines(stderr: str) -> list[str]:
    """The scripts' own log lines (not the writer's, whose logger names differ)."""
    return [line for line in stderr.splitlines() if line.startswith(("INFO:gguf-", "WARNING:gguf-", "ERROR:gguf-"))]


@pytest.fixture(scope="module")
def samples(gguf, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("samples")
    out = {}
    out["little"] = d / "little.gguf"
    F.gguf_py_sample(gguf, str(out["little"]))
    out["big"] = d / "big.gguf"
    F.gguf_py_sample(gguf, str(out["big"]), big=True, alignment=64)
    out["native"] = d / "native.gguf"
    F.encode_native(out["native"], 2, "little", F.native_metadata(alignment=16)
                    + [("tokenizer.ggml.tokens", F.ARR, ["<s>", "</s>", "a"], F.STR),
                       ("tokenizer.ggml.bos_token_id", F.U32, 0, None)],
                    F.sample_tensors([0, 1, 2, 8, 12, 14, 30]))
    # v2, without the empty and nested arrays gguf_new_metadata cannot copy
    out["v2"] = d / "v2.gguf"
    meta = [m for m in F.native_metadata(nested=False, alignment=16) if not (m[1] == F.ARR and not m[2])]
    meta.append(("tokenizer.ggml.tokens", F.ARR, ["<s>", "</s>", "a"], F.STR))
    F.encode_native(out["v2"], 2, "big", meta, F.sample_tensors([0, 1, 8, 12]))
    return out


def test_the_shim_swaps_in_ours():
    code = (
        f"import sys; sys.path.insert(0, {str(SHIM.parent)!r}); import shim; shim.install(); "
        "import gguf; print(gguf.GGUFReader.__module__, gguf.GGUFWriter.__module__, gguf.Keys.General.NAME)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["ggufrw.compat.reader", "ggufrw.compat.writer", "general.name"]


DUMP_MODES = [[], ["--no-tensors"], ["--json"], ["--json", "--json-array"], ["--markdown"],
              ["--data-offset"], ["--data-alignment"]]


@pytest.mark.parametrize("sample", ["little", "big", "native", "v2"])
@pytest.mark.parametrize("mode", DUMP_MODES, ids=lambda m: " ".join(m) or "plain")
def test_gguf_dump(samples, sample, mode):
    out = same_run(DUMP, samples[sample], *mode)
    assert out.stdout


# The other modes on Gemma are as on the samples; each run of gguf-py on Gemma takes seconds.
@pytest.mark.parametrize("mode", [[], ["--json", "--json-array"]],
                         ids=lambda m: " ".join(m) or "plain")
def test_gguf_dump_gemma(gemma, mode):
    out = same_run(DUMP, gemma, *mode)
    assert "tokenizer.ggml.tokens" in out.stdout


SET_CASES = [
    ["tokenizer.ggml.bos_token_id", "2", "--force"],
    ["llama.context_length", "8192", "--force"],
    ["llama.rope.freq_base", "500000.5", "--force"],
    ["t.i8", "-3", "--force"],
    ["t.bool.true", "", "--force"],
    ["t.u64", "12345678901234", "--force"],
    ["llama.context_length", "4096", "--force"],  # already set
    ["llama.context_length", "1", "--dry-run"],
    ["t.str", "x", "--force"],  # not a simple value: refused
    ["no.such.key", "1", "--force"],
]


@pytest.mark.parametrize("case", SET_CASES, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("sample", ["little", "big"])
def test_gguf_set_metadata(samples, tmp, sample, case):
    key, value, *flags = case
    results = {}
    for which in ("gguf", "compat"):
        path = tmp / f"{which}.gguf"
        shutil.copyfile(samples[sample], path)
        proc = run(which, SET, path, key, value, *flags)
        results[which] = (proc.returncode, proc.stdout, log_lines(proc.stderr).copy(), path.read_bytes())
    theirs, ours = results["gguf"], results["compat"]
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert [line.replace("compat.gguf", "gguf.gguf") for line in ours[2]] == theirs[2]
    assert ours[3] == theirs[3]
    changed = ours[3] != samples[sample].read_bytes()
    assert changed == (flags == ["--force"] and key not in ("t.str", "no.such.key") and value != "4096")


def test_gguf_set_metadata_asks_before_writing(samples, tmp):
    results = []
    for which in ("gguf", "compat"):
        path = tmp / f"{which}.gguf"
        shutil.copyfile(samples["little"], path)
        refused = run(which, SET, path, "llama.context_length", "7", stdin="no\n")
        agreed = run(which, SET, path, "llama.block_count", "9", stdin="YES\n")
        results.append((refused.returncode, agreed.returncode, path.read_bytes()))
    assert results[0] == results[1]


NEW_CASES = [
    ["--general-name", "Renamed model"],
    ["--general-description", "déscription ✓", "--pre-tokenizer", "llama-bpe"],
    ["--chat-template", "{{ messages }}"],
    ["--chat-template", '[{"name": "default", "template": "d"}, {"name": "tool_use", "template": "t"}]'],
    ["--special-token-by-id", "eos", "1", "--special-token", "bos", "</s>"],
    ["--remove-metadata", "t.str", "--remove-metadata", "a.f64", "--force"],
]


@pytest.mark.parametrize("case", NEW_CASES, ids=lambda c: " ".join(c)[:40])
@pytest.mark.parametrize("sample", ["little", "big", "native", "v2"])
def test_gguf_new_metadata(samples, tmp, sample, case):
    if sample in ("native", "v2") and "--special-token" in case:
        case = ["--special-token-by-id", "eos", "1"]
    outputs = {}
    for which in ("gguf", "compat"):
        out = tmp / f"{which}-out.gguf"
        proc = run(which, NEW, samples[sample], out, *case)
        last = proc.stderr.strip().splitlines()[-1] if proc.returncode else ""
        outputs[which] = (proc.returncode, proc.stdout, last, out.read_bytes() if out.exists() else None)
    assert outputs["compat"] == outputs["gguf"]
    # the native sample has empty arrays, which gguf-py's writer (and so ours) refuses
    assert (outputs["gguf"][0] != 0) == (sample == "native"), outputs["gguf"][2]


def test_gguf_new_metadata_gemma(gemma, tmp):
    sizes = {}
    for which in ("gguf", "compat"):
        out = tmp / f"{which}-gemma.gguf"
        proc = run(which, NEW, gemma, out, "--general-name", "Gemma renamed", "--special-token-by-id", "eos", "1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        sizes[which] = out.stat().st_size
    assert sizes["gguf"] == sizes["compat"]
    with open(tmp / "gguf-gemma.gguf", "rb") as a, open(tmp / "compat-gemma.gguf", "rb") as b:
        while True:
            x, y = a.read(1 << 22), b.read(1 << 22)
            assert x == y
            if not x:
                break


CONVERT = "gguf.scripts.gguf_convert_endian"
HASH = "gguf.scripts.gguf_hash"


@pytest.mark.parametrize("sample,order", [("little", "big"), ("big", "little"), ("little", "little")])
def test_gguf_convert_endian_writes_through_every_part(gguf, samples, tmp, sample, order):
    # the types gguf_convert_endian handles
    src = tmp / "src.gguf"
    F.gguf_py_sample(gguf, str(src), big=sample == "big", types=[0, 1, 30, 2, 8, 12, 14])
    results = {}
    for which in ("gguf", "compat"):
        path = tmp / f"{which}.gguf"
        shutil.copyfile(src, path)
        proc = run(which, CONVERT, path, order, stdin="YES\n")
        results[which] = (proc.returncode, proc.stdout, path.read_bytes())
    assert results["compat"] == results["gguf"]
    assert results["gguf"][0] == 0
    assert (results["gguf"][2] != src.read_bytes()) == ((sample == "big") != (order == "big"))


@pytest.mark.parametrize("sample", ["little", "big", "v2"])
def test_gguf_hash(samples, sample):
    out = same_run(HASH, samples[sample])
    assert out.stdout.count("\n") > 3


def test_a_missing_dependency_of_gguf_py_is_named(tmp_path):
    # gguf-py's scripts import its own dependencies (tqdm, yaml, ...), which ggufrw does not
    # bring: the runner says which one is missing and how to get them all.
    script = tmp_path / "needs_tqdm.py"
    script.write_text("import sys\nsys.modules['tqdm'] = None\nimport tqdm\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "ggufrw.compat", str(script)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "'tqdm'" in r.stderr and "pip install 'ggufrw[compat]'" in r.stderr, r.stderr
    # any other missing module is the script's own error, as Python reports it
    other = tmp_path / "needs_other.py"
    other.write_text("import no_such_module_here\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "ggufrw.compat", str(other)], capture_output=True, text=True)
    assert r.returncode == 1 and "ModuleNotFoundError" in r.stderr, r.stderr
