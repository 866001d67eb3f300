"""What the checks of third-party gguf-py clients share (scripts/gguf-clone-check.py,
scripts/ggufpacker-check.py): a pinned install kept in a cache folder, logged tool runs, and
the one error type that ends a check with its log's tail."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class Failure(Exception):
    """A step that did not complete: reported with its log's tail, exit status 1."""


def tail(log: Path) -> str:
    return "".join(log.read_text(errors="replace").splitlines(True)[-30:])


def run(cmd: list, log: Path, **kw) -> float:
    """Runs cmd with its output to log; returns its wall time, raises Failure on error."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                            **kw).returncode
    if rc != 0:
        raise Failure(f"{' '.join(map(str, cmd))}\nexited {rc} (log {log}), last lines:\n{tail(log)}")
    return time.monotonic() - t0


def install_pinned(site: Path, marker: str, pins: list[str]) -> str | None:
    """Installs `pins` (without their dependencies) into `site` once, `marker` (a dist-info
    folder) telling a finished install. Returns a reason to skip when PyPI cannot be reached;
    any other pip failure is a Failure."""
    if (site / marker).is_dir():
        return None
    site.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=site.name + ".", dir=site.parent))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                        "--no-deps", "--target", str(tmp), *pins], capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        said = (r.stdout + r.stderr).strip()
        if re.search(r"NewConnectionError|Failed to establish|name resolution|ConnectTimeout"
                     r"|ProxyError|Network is unreachable|SSLError", said):
            return f"pip cannot reach PyPI to install {' '.join(pins)}"
        raise Failure(f"pip install {' '.join(pins)} exited {r.returncode}:\n{said[-1500:]}")
    try:
        tmp.rename(site)  # in one step: a half-done install is never taken for a finished one
    except OSError:  # another run finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return None


def ready(paths: list[Path], probe: str, site: Path, marker: str, pins: list[str],
          modules: str) -> int | None:
    """The prerequisites: `paths` exist, `probe` imports here, the pinned packages are installed
    into `site` and `modules` import from it. None when all are there; otherwise the exit status,
    after printing why (SKIPPED, 0, only when PyPI cannot be reached)."""
    missing = [str(p) for p in paths if not p.exists()]
    if subprocess.run([sys.executable, "-c", f"import {probe}"], capture_output=True).returncode:
        missing.append(f"{probe} (run with scripts/convert-ref.sh's Python)")
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        return 1
    try:
        reason = install_pinned(site, marker, pins)
        if reason is None:
            r = subprocess.run([sys.executable, "-c", f"import {modules}"], text=True,
                               capture_output=True, env=dict(os.environ, PYTHONPATH=str(site)))
            if r.returncode:
                raise Failure(f"{modules} in {site} does not import: {r.stderr.strip()[-500:]}")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    if reason:
        print(f"SKIPPED: {reason}")
        return 0
    return None


def conclude(work: Path | None, prefix: str, check) -> int:
    """Runs check(folder) in `work` or a fresh temporary folder (removed again when the outputs
    are identical); prints the verdict and returns the exit status."""
    folder = (work or Path(tempfile.mkdtemp(prefix=prefix))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    print(f"work: {folder}", flush=True)
    try:
        ok = check(folder)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    if ok and work is None:
        shutil.rmtree(folder, ignore_errors=True)
    print("identical" if ok else "FAIL: the outputs differ")
    return 0 if ok else 1
