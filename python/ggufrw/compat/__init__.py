"""gguf-py compatibility: `GGUFReader`, `GGUFWriter`, `quants` and the constants they use, with
the names, attributes and behaviour of gguf-py 0.19 (PyPI `gguf`), on ggufrw's native decoder,
encoder and (de)quantizers.

    from ggufrw.compat import GGUFReader, GGUFWriter, GGUFValueType, GGMLQuantizationType
    from ggufrw.compat import quants

Code written for gguf-py's reader and writer runs unchanged; numpy is required, as gguf-py
requires it. The reader validates the file before making any view (so a malformed file raises
instead of hanging) and builds each field's `parts`/`data` only when they are first read, so
opening a file and reading every field's `contents()` is much faster than with gguf-py.

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
- The writer reports a tensor whose data size does not match its info with a `ValueError`
  (gguf-py: an `assert`).

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

from . import constants, quants
from .constants import (
    GGML_QUANT_SIZES,
    GGML_QUANT_VERSION,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGUF_VERSION,
    QK_K,
    READER_SUPPORTED_VERSIONS,
    GGMLQuantizationType,
    GGUFEndian,
    GGUFValueType,
)
from .reader import DecodeError, GGUFReader, ReaderField, ReaderTensor
from .writer import GGUFValue, GGUFWriter, TensorInfo, WriterState
from .quants import QuantError, quant_shape_from_byte_shape, quant_shape_to_byte_shape

__all__ = [
    "GGUFReader",
    "ReaderField",
    "ReaderTensor",
    "GGUFWriter",
    "GGUFValue",
    "TensorInfo",
    "WriterState",
    "GGUFValueType",
    "GGMLQuantizationType",
    "GGUFEndian",
    "GGML_QUANT_SIZES",
    "GGML_QUANT_VERSION",
    "GGUF_DEFAULT_ALIGNMENT",
    "GGUF_MAGIC",
    "GGUF_VERSION",
    "QK_K",
    "READER_SUPPORTED_VERSIONS",
    "DecodeError",
    "QuantError",
    "quant_shape_from_byte_shape",
    "quant_shape_to_byte_shape",
    "quants",
    "constants",
]
