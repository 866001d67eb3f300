"""Runs one of gguf-py's scripts, as is or with `gguf` replaced by a module that is gguf-py with
its reader, writer, types and quants swapped for ggufrw.compat's.

    python shim.py gguf|compat gguf.scripts.gguf_dump [script arguments...]
"""

from __future__ import annotations

import importlib
import sys
import types

SWAPPED = [
    "GGUFReader",
    "GGUFWriter",
    "ReaderField",
    "ReaderTensor",
    "GGUFValueType",
    "GGMLQuantizationType",
    "GGUFEndian",
    "GGML_QUANT_SIZES",
    "quant_shape_to_byte_shape",
    "quant_shape_from_byte_shape",
]


def install() -> types.ModuleType:
    """Makes `import gguf` give gguf-py with ggufrw.compat's classes in place of its own."""
    import gguf
    from ggufrw import compat

    shim = types.ModuleType("gguf")
    shim.__dict__.update(gguf.__dict__)
    for name in SWAPPED:
        setattr(shim, name, getattr(compat, name))
    shim.quants = compat.quants
    shim.__ggufrw_compat__ = True
    sys.modules["gguf"] = shim
    return shim


def main() -> None:
    which, script, *args = sys.argv[1:]
    if which == "compat":
        install()
    module = importlib.import_module(script)
    if which == "compat":
        # the script got ours
        assert module.__dict__.get("GGUFReader", sys.modules["gguf"].GGUFReader).__module__.startswith("ggufrw")
    sys.argv = [script, *args]
    module.main()


if __name__ == "__main__":
    main()
