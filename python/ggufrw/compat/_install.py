"""`import gguf` resolved to ggufrw.compat: a finder placed first on `sys.meta_path`, so that it
wins over an installed gguf-py and over a gguf-py directory a script puts on `sys.path`."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# gguf-py's module names and ours
MODULES = {
    "gguf": "ggufrw.compat",
    "gguf.constants": "ggufrw.compat.constants",
    "gguf.gguf_reader": "ggufrw.compat.reader",
    "gguf.gguf_writer": "ggufrw.compat.writer",
    "gguf.quants": "ggufrw.compat.quants",
    "gguf.lazy": "ggufrw.compat.lazy",
    "gguf.tensor_mapping": "ggufrw.compat.tensor_mapping",
    "gguf.vocab": "ggufrw.compat.vocab",
    "gguf.utility": "ggufrw.compat.utility",
    "gguf.metadata": "ggufrw.compat.metadata",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname in MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == "gguf")
        return None

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return importlib.import_module(MODULES[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just put the alias spec on our module: give it back its own, so
        # that the module keeps its real name (reload, pickling, tracebacks).
        module.__spec__ = importlib.machinery.PathFinder.find_spec(module.__name__, _parent_path(module.__name__))


def _parent_path(name: str):  # type: ignore[no-untyped-def]
    parent = name.rpartition(".")[0]
    return sys.modules[parent].__path__ if parent else None


def install() -> None:
    """Makes `import gguf` (and `import gguf.gguf_writer`, `from gguf.vocab import ...`, ...)
    give ggufrw.compat's modules from now on in this process.

    Raises RuntimeError if gguf-py was imported already (its objects would be mixed with ours).
    """
    present = sys.modules.get("gguf")
    if present is not None and present.__name__ != "ggufrw.compat":
        raise RuntimeError(f"gguf-py is already imported (from {getattr(present, '__file__', '?')}); "
                           "install ggufrw.compat before anything imports gguf")
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
