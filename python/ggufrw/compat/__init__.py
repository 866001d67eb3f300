"""gguf-py compatibility: gguf-py's public API with its names, attributes and behaviour, on
ggufrw's native decoder, encoder and (de)quantizers.

    from ggufrw.compat import GGUFReader, GGUFWriter, GGUFValueType, GGMLQuantizationType
    from ggufrw.compat import quants, Keys, MODEL_ARCH, TensorNameMap, SpecialVocab, Metadata

The reader and writer are gguf-py 0.19's (PyPI `gguf`); the rest (constants, tensor name maps,
typed setters, vocab classes, `Metadata`, `utility`, lazy tensors, `quants`) is the pinned
llama.cpp tree's gguf-py, its tables generated from the tree by scripts/gen_compat_tables.py.
`python -m ggufrw.compat SCRIPT.py [ARGS...]` runs a script written for gguf-py with `import
gguf` resolved to this package (`install()` does it from code); loggers have gguf-py's names.

Code written for gguf-py runs unchanged; numpy is required, as gguf-py requires it. The reader
validates the file before making any view (so a malformed file raises instead of hanging) and
builds each field's `parts`/`data` only when they are first read, so opening a file and reading
every field's `contents()` is much faster than with gguf-py.

Differences from gguf-py 0.19, kept on purpose because gguf-py is wrong there:

- Q8_1 blocks are 36 bytes (ggml's `block_q8_1`: f16 d, f16 s, 32 int8), not 40:
  `GGML_QUANT_SIZES`, `ReaderTensor.n_bytes`/`.data` and the writer's byte-shape conversion use 36.
- `GGMLQuantizationType` has Q2_0 (id 42), which gguf-py 0.19 does not know; such tensors read.
- A malformed file raises `DecodeError` (a `ValueError`) instead of hanging or reading out of
  bounds (gguf-py loops on some crafted counts).
- `quants.dequantize`/`quants.quantize` handle every type the native layer can (K-quants, IQ
  types, Q8_1, ...), not only the ones gguf-py has numpy code for.
- Files gguf-py misreads are refused: a string running past the end of the file, tensor offsets
  that wrap around, arrays nested past the native decoder's depth limit.
- The writer refuses a tensor whose data size does not match its shape and type when it is added,
  naming it, so no partial file is left (gguf-py writes such a file).

Everything else (field parts and data indices, `contents()`, the tensor views, `byte_order`,
`endianess`, `alignment`, `data_offset`, writes through `parts` in mode `'r+'`, the writer's stages,
padding and file handling) is as gguf-py 0.19 has it.
"""

from __future__ import annotations

try:
    import numpy as _numpy  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised in a subprocess without numpy
    raise ImportError(
        "ggufrw.compat needs numpy, as gguf-py does: pip install numpy (or ggufrw[numpy])"
    ) from e

# As gguf-py's package: every module's public names at the top level.
from . import constants, lazy, metadata, quants, tensor_mapping, utility, vocab
from .constants import *  # noqa: F401,F403
from .reader import *  # noqa: F401,F403
from .writer import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .quants import *  # noqa: F401,F403
from .tensor_mapping import *  # noqa: F401,F403
from .vocab import *  # noqa: F401,F403
from .utility import *  # noqa: F401,F403
from .metadata import *  # noqa: F401,F403
from ._install import install

__all__ = [
    *constants.__all__,
    *reader.__all__,  # noqa: F405
    *writer.__all__,  # noqa: F405
    *tensor_mapping.__all__,
    *vocab.__all__,
    *utility.__all__,
    *metadata.__all__,
    *lazy.__all__,
    *quants.__all__,
    "lazy",
    "quants",
    "constants",
    "tensor_mapping",
    "vocab",
    "utility",
    "metadata",
]
