"""Fixtures of the tests against the pinned llama.cpp tree's own gguf-py (the reference of
`ggufrw.compat`'s API beyond the reader and writer).

These tests run in an environment *without* gguf-py installed (scripts/python.sh runs them with
the reference converter's venv of scripts/convert-ref.sh: torch, transformers, sentencepiece, no
gguf). The reference gguf-py is imported from the tree itself (`GGUFRW_LLAMA_CPP`, as
scripts/convert-ref.sh prints it), the way llama.cpp's own scripts import it; where the tree is
absent, the tests say SKIPPED.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

DEFAULT_TREE = (
    Path.home()
    / ".cache/ggufrw/ggml-llama-cpp-python-0.3.36/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
)


def llama_cpp_tree() -> Path | None:
    tree = Path(os.environ.get("GGUFRW_LLAMA_CPP", DEFAULT_TREE))
    return tree if (tree / "gguf-py" / "gguf" / "__init__.py").is_file() else None


@pytest.fixture(scope="session")
def tree() -> Path:
    """The pinned llama.cpp tree (convert_hf_to_gguf.py, gguf-py/, models/)."""
    found = llama_cpp_tree()
    if found is None:
        if os.environ.get("GGUFRW_REQUIRE_PEERS"):
            pytest.fail("the pinned llama.cpp tree is not here (GGUFRW_LLAMA_CPP)")
        pytest.skip("the pinned llama.cpp tree is not here (scripts/ggml.sh fetches it)")
    return found


@pytest.fixture(scope="session")
def ref(tree):
    """The tree's gguf-py, the reference, imported from the tree (never installed here)."""
    try:
        import importlib.metadata as md

        md.version("gguf")
    except Exception:
        pass
    else:
        pytest.fail("gguf-py is installed in this environment; these tests need one without it")
    sys.path.insert(0, str(tree / "gguf-py"))
    import gguf

    assert Path(gguf.__file__).resolve().is_relative_to((tree / "gguf-py").resolve())
    return gguf


@pytest.fixture(scope="session")
def compat():
    """ggufrw's gguf-py: the module under test."""
    from ggufrw import compat

    return compat


_TIMES: list[tuple[str, float, float, str]] = []


@pytest.fixture(scope="session")
def timings() -> list[tuple[str, float, float, str]]:
    """(client, seconds on gguf-py, seconds on ggufrw, outcome) rows, printed after the run."""
    return _TIMES


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not _TIMES:
        return
    terminalreporter.write_sep("-", "clients on the tree's gguf-py and on ggufrw.compat (wall seconds)")
    terminalreporter.write_line(f"{'client':60} {'gguf-py':>8} {'ggufrw':>8} {'ratio':>6}  outcome")
    for client, theirs, ours, outcome in _TIMES:
        terminalreporter.write_line(f"{client[:60]:60} {theirs:8.2f} {ours:8.2f} {theirs / ours:6.1f}  {outcome}")
