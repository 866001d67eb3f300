"""gguf-py's constants, as the pinned llama.cpp tree's gguf-py has them: `Keys`, `MODEL_ARCH`,
`MODEL_ARCH_NAMES`, `MODEL_TENSOR`, `TENSOR_NAMES`, `MODEL_TENSORS`, `MODEL_TENSOR_SKIP`, the
value, ggml and file types, `GGML_QUANT_SIZES` and the `KEY_*` aliases.

The data is generated from the tree by scripts/gen_compat_tables.py into `_tables`; nothing here
is typed again. Those tables give Q8_1 ggml's 36-byte blocks and know Q2_0, where the PyPI
release gguf-py 0.19 has 40 bytes and no Q2_0.
"""

from __future__ import annotations

from ._tables import *  # noqa: F401,F403
from ._tables import GGUF_VERSION
from ._tables import __all__ as _generated

# gguf-py keeps this in its reader; ggufrw.compat has always offered it here too.
READER_SUPPORTED_VERSIONS = [2, GGUF_VERSION]

__all__ = [*_generated, "READER_SUPPORTED_VERSIONS"]
