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
    def __init__(self) -> None:
        # our modules' own specs, which the import system replaces by the alias spec between
        # create_module and exec_module
        self._specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname in MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == "gguf")
        return None

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        module = importlib.import_module(MODULES[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Give our module back its own spec, so that it keeps its real name (reload, pickling,
        # tracebacks).
        alias = module.__spec__.name  # type: ignore[union-attr]
        module.__spec__ = self._specs.pop(alias)


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
