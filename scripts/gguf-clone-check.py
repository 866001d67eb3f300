#!/usr/bin/env python3
"""gguf-clone (PyPI, 0.1.3) on the llama.cpp tree's gguf-py and on ggufrw.compat: same bytes.

Usage:
    PY scripts/gguf-clone-check.py --llama-cpp TREE --llama-tools BIN [--work DIR]

PY and TREE are the two lines scripts/convert-ref.sh prints: its Python (torch,
transformers, the ggufrw wheel with ggufrw.compat; no gguf-py installed) and the pinned
llama.cpp tree (convert_hf_to_gguf.py, gguf-py/). BIN is the folder `scripts/ggml.sh --tools`
prints (llama-imatrix, llama-quantize, llama-gguf-split). DIR defaults to a fresh temporary
folder, removed again when the outputs are identical (kept, and printed, otherwise).

1. Installs gguf-clone 0.1.3 and the pydantic packages PY lacks, pinned, with
   `pip install --no-deps --target ~/.cache/ggufrw/gguf-clone-0.1.3` (reused when present).
2. Builds the convert-hf fixture Llama-3.2-Tiny-Instruct (tests/convert_hf/reference.py)
   and a template from it: the tree's convert_hf_to_gguf.py to f32, llama-imatrix on a fixed
   calibration text, `llama-quantize --imatrix` to Q4_K_M. Both are put in a local Hugging
   Face cache, so that gguf-clone runs offline (HF_HUB_OFFLINE=1; in `unshare -n`, no
   network at all, where that works).
3. Runs `gguf-clone run config.yml` twice, in fresh folders, on the same config:
   C  with the tree's gguf-py (GGUF_CLONE_LLAMA_CPP=TREE), in process and in its
      convert_hf_to_gguf.py subprocess;
   D  with `import gguf` resolved to ggufrw.compat: `python -m ggufrw.compat`, and
      GGUF_CLONE_LLAMA_CPP naming a folder whose convert_hf_to_gguf.py runs the tree's
      script through ggufrw.compat.
4. Compares every file the two runs wrote, byte for byte (the same set of files too).

Prints one line per file (path, sha256 prefix of C and of D, same or DIFFER) and the two
wall times with their ratio. Exit status: 0 when every file is identical, 1 on any
difference or failure (with the tail of the failing run's log); "SKIPPED: reason" and 0
only when gguf-clone is not installed yet and pip cannot reach PyPI to install it.
"""
from __future__ import annotations

import argparse
import filecmp
import hashlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # importing the shared helpers writes nothing into the repository
from client_check import Failure, conclude, ready, run

REPO = Path(__file__).resolve().parent.parent
FIXTURE = "Llama-3.2-Tiny-Instruct"
PINS = ["gguf-clone==0.1.3", "pydantic==2.13.4", "pydantic-core==2.46.4",
        "annotated-types==0.7.0", "typing-inspection==0.4.2"]
SITE = Path.home() / ".cache" / "ggufrw" / "gguf-clone-0.1.3"
REV = "0123456789abcdef0123456789abcdef01234567"  # any 40 hex digits: the fake commit
TEMPLATE_REPO, TARGET_REPO = f"local/{FIXTURE}-GGUF", f"local/{FIXTURE}"
CONFIG = f"""template:
  repo: {TEMPLATE_REPO}
  imatrix: "*imatrix*"
  ggufs: "*Q4_K_M*.gguf"
  copy_metadata:
    - general.name
    - llama.rope.freq_base
    - tokenizer.ggml.merges
target:
  repo: {TARGET_REPO}
output:
  prefix: clone
"""
# gguf-clone's entry point; at exit it reports which `gguf` the process had loaded, so that
# a run on the wrong gguf cannot pass as a comparison.
DRIVER = """import atexit, sys
atexit.register(lambda: print("gguf module:", getattr(sys.modules.get("gguf"), "__name__", None),
                              getattr(sys.modules.get("gguf"), "__file__", None), file=sys.stderr))
from gguf_clone.cli import main
main()
"""
WRAPPER = """import sys
from ggufrw.compat.__main__ import main
main([{script!r}, *sys.argv[1:]])
"""


def hf_repo(cache: Path, repo_id: str, files: list[Path]) -> None:
    """A repository in the layout of huggingface_hub's cache, which it reads when offline."""
    d = cache / ("models--" + repo_id.replace("/", "--"))
    (d / "snapshots" / REV).mkdir(parents=True)
    (d / "refs").mkdir()
    (d / "refs" / "main").write_text(REV)  # what an offline snapshot_download resolves
    for f in files:
        shutil.copy2(f, d / "snapshots" / REV / f.name)


def build_inputs(tree: Path, tools: Path, work: Path, hf_cache: Path) -> None:
    """The fixture (target) and its imatrix Q4_K_M (template), in the local HF cache."""
    sys.path[:0] = [str(tree / "gguf-py"), str(tree), str(REPO / "tests" / "convert_hf")]
    import reference  # tests/convert_hf/reference.py, the project's fixture builder

    reference.LLAMA_CPP = tree
    wanted = [fx for fx in reference.FIXTURES if fx.name == FIXTURE]
    fixture = reference.ensure_fixtures(work, wanted)[FIXTURE]
    tpl = work / "template"
    tpl.mkdir(exist_ok=True)
    f32, q4 = tpl / f"{FIXTURE}-f32.gguf", tpl / f"{FIXTURE}-Q4_K_M.gguf"
    imatrix = tpl / f"imatrix-{FIXTURE}.gguf"
    run([sys.executable, tree / "convert_hf_to_gguf.py", "--outtype", "f32", "--outfile", f32,
         fixture], tpl / "convert.log", env=dict(os.environ, PYTHONPATH=str(tree / "gguf-py")))
    rng = random.Random(0)  # a fixed calibration text
    words = ("the quick brown fox jumps over lazy dog model quantize tensor layer weight cat "
             "house river mountain").split()
    (tpl / "calib.txt").write_text(" ".join(rng.choice(words) for _ in range(3000)) + "\n")
    run([tools / "llama-imatrix", "-m", f32, "-f", tpl / "calib.txt", "-o", imatrix,
         "-c", "128", "--chunks", "4", "-t", "2"], tpl / "imatrix.log")
    run([tools / "llama-quantize", "--imatrix", imatrix, f32, q4, "Q4_K_M", "2"], tpl / "quantize.log")
    hf_repo(hf_cache, TEMPLATE_REPO, [q4, imatrix])
    hf_repo(hf_cache, TARGET_REPO, sorted(p for p in fixture.iterdir() if not p.name.startswith(".")))


def outputs(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "config.yml"}


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def check(tree: Path, tools: Path, work: Path) -> bool:
    hf_cache = work / "hf-cache"
    for stale in ("hf-cache", "template", "run-C", "run-D", "wrapper"):
        shutil.rmtree(work / stale, ignore_errors=True)
    build_inputs(tree, tools, work, hf_cache)
    (work / "gguf_clone_main.py").write_text(DRIVER)
    (work / "wrapper").mkdir()
    (work / "wrapper" / "convert_hf_to_gguf.py").write_text(
        WRAPPER.format(script=str(tree / "convert_hf_to_gguf.py")))
    # `unshare -n`: a new network namespace with no interface up, where it can be made
    nonet = ["unshare", "-n"] if shutil.which("unshare") and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0 else []
    env = dict(os.environ, PYTHONPATH=str(SITE), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HUB_CACHE=str(hf_cache), HF_HOME=str(work / "hf-home"),
               HF_HUB_DISABLE_TELEMETRY="1", OMP_NUM_THREADS="2",
               # neither TREE nor the wrapper folder holds llama tools: both runs take BIN's
               PATH=os.pathsep.join([str(tools), os.environ.get("PATH", "")]))
    sides = {"C": (tree, []), "D": (work / "wrapper", ["-m", "ggufrw.compat"])}
    walls, files = {}, {}
    for side, (llama_cpp, pre) in sides.items():
        wd = work / f"run-{side}"
        wd.mkdir()
        (wd / "config.yml").write_text(CONFIG)
        log = work / f"run-{side}.log"
        walls[side] = run([*nonet, sys.executable, *pre, work / "gguf_clone_main.py", "run",
                           "config.yml", "--verbose", "--overwrite"], log, cwd=wd,
                          env=dict(env, GGUF_CLONE_LLAMA_CPP=str(llama_cpp)))
        loaded = [ln for ln in log.read_text(errors="replace").splitlines()
                  if ln.startswith("gguf module:")]
        expect = "ggufrw.compat" if side == "D" else str(tree / "gguf-py")
        if not loaded or expect not in loaded[-1]:
            raise Failure(f"run {side} did not load gguf from {expect}: "
                          f"{loaded[-1] if loaded else 'no report'} (log {log})")
        files[side] = outputs(wd)
    names = sorted(set(files["C"]) | set(files["D"]))
    width = max(len(n) for n in names) if names else 4
    print(f"{'file':<{width}}  {'C (gguf-py)':<12}  {'D (ggufrw)':<12}")
    same = bool(names)
    for name in names:
        c, d = (sha256(files[s][name]) if name in files[s] else None for s in "CD")
        ok = c is not None and c == d and filecmp.cmp(files["C"][name], files["D"][name],
                                                       shallow=False)
        same &= ok
        print(f"{name:<{width}}  {(c or 'missing')[:12]:<12}  {(d or 'missing')[:12]:<12}  "
              f"{'same' if ok else 'DIFFER'}")
    print(f"wall: C {walls['C']:.1f} s, D {walls['D']:.1f} s, C/D {walls['C'] / walls['D']:.1f}x"
          f"{'' if nonet else ' (network not cut: unshare -n unavailable)'}")
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path,
                    help="llama.cpp tree (convert_hf_to_gguf.py, gguf-py/)")
    ap.add_argument("--llama-tools", required=True, type=Path,
                    help="folder with llama-imatrix, llama-quantize, llama-gguf-split")
    ap.add_argument("--work", type=Path, help="working folder (default: a fresh temporary one)")
    opts = ap.parse_args()
    tree, tools = opts.llama_cpp.resolve(), opts.llama_tools.resolve()
    needed = [tree / "convert_hf_to_gguf.py", tree / "gguf-py",
              *(tools / t for t in ("llama-imatrix", "llama-quantize", "llama-gguf-split"))]
    status = ready(needed, "torch, transformers, ggufrw.compat", SITE, "gguf_clone-0.1.3.dist-info",
                   PINS, "gguf_clone.cli, pydantic")
    if status is not None:
        return status
    return conclude(opts.work, "gguf-clone-check-", lambda work: check(tree, tools, work))

if __name__ == "__main__":
    sys.exit(main())
