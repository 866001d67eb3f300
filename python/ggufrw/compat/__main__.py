"""Runs a script written for gguf-py on ggufrw alone: `import gguf` gives ggufrw.compat.

    python -m ggufrw.compat SCRIPT.py [ARGS...]
    python -m ggufrw.compat -m MODULE [ARGS...]

As `python SCRIPT.py` and `python -m MODULE` run them (`sys.argv`, `sys.path[0]`, `__main__`),
with gguf-py's module names resolved to ggufrw.compat's before anything else is imported; an
installed gguf-py, or a gguf-py directory the script adds to `sys.path`, is never loaded.
"""

from __future__ import annotations

import os
import runpy
import sys

from ._install import install

USAGE = "usage: python -m ggufrw.compat SCRIPT.py [ARGS...] | -m MODULE [ARGS...]"

# gguf-py's own dependencies (its pyproject), which scripts written for it import: the module
# name and the package that brings it.
GGUF_PY_DEPENDENCIES = {"numpy": "numpy", "tqdm": "tqdm", "yaml": "pyyaml", "requests": "requests"}


def main(argv: list[str]) -> None:
    try:
        run(argv)
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top not in GGUF_PY_DEPENDENCIES:
            raise
        raise SystemExit(
            f"python -m ggufrw.compat: the script needs {top!r} ({GGUF_PY_DEPENDENCIES[top]}), one "
            "of gguf-py's own dependencies, which ggufrw does not need: "
            "pip install 'ggufrw[compat]' brings them all"
        ) from None


def run(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(2 if not argv else 0)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(USAGE)
        sys.argv = [argv[1], *argv[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    if not os.path.exists(script):
        raise SystemExit(f"python -m ggufrw.compat: can't open file {script!r}: no such file")
    sys.argv = [script, *argv[1:]]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
