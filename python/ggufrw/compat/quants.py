"""gguf-py's `quants` functions, computed by ggufrw's native (de)quantizers.

`dequantize(data, qtype)` and `quantize(data, qtype)` take and give numpy arrays shaped as
gguf-py's do: quantized data is `uint8` with rows of bytes (`quant_shape_to_byte_shape`),
dequantized data `float32` with rows of elements.

Differences from gguf-py 0.19 on purpose: every type the native layer dequantizes (or quantizes)
is handled, not only the ones gguf-py has numpy code for (K-quants and the IQ types quantize here;
Q8_1, Q8_K and Q2_0 dequantize); Q8_1 has ggml's 36-byte blocks; the work runs on all cores.
Lazy tensors (gguf-py's `LazyNumpyTensor`) are not handled: pass numpy arrays.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _native  # type: ignore[attr-defined]
from .constants import GGML_QUANT_SIZES, QK_K, GGMLQuantizationType

__all__ = [
    "QuantError",
    "quant_shape_to_byte_shape",
    "quant_shape_from_byte_shape",
    "quantize",
    "dequantize",
    "can_quantize",
    "can_dequantize",
    "QK_K",
]


class QuantError(Exception):
    """A tensor that cannot be quantized to the type asked for (its rows are not whole blocks)."""


def quant_shape_to_byte_shape(shape: Sequence[int], quant_type: GGMLQuantizationType) -> tuple[int, ...]:
    """The shape of the bytes of a tensor of `shape` elements in `quant_type`."""
    block_size, type_size = GGML_QUANT_SIZES[quant_type]
    if shape[-1] % block_size != 0:
        raise ValueError(
            f"Quantized tensor row size ({shape[-1]}) is not a multiple of "
            f"{quant_type.name} block size ({block_size})"
        )
    return (*shape[:-1], shape[-1] // block_size * type_size)


def quant_shape_from_byte_shape(shape: Sequence[int], quant_type: GGMLQuantizationType) -> tuple[int, ...]:
    """The shape in elements of a tensor whose bytes are shaped `shape`."""
    block_size, type_size = GGML_QUANT_SIZES[quant_type]
    if shape[-1] % type_size != 0:
        raise ValueError(
            f"Quantized tensor bytes per row ({shape[-1]}) is not a multiple of "
            f"{quant_type.name} type size ({type_size})"
        )
    return (*shape[:-1], shape[-1] // type_size * block_size)


def _abilities() -> dict[int, tuple[bool, bool]]:
    return {row[0]: (bool(row[4]), bool(row[5])) for row in _native.types()}


_ABILITIES = _abilities()


def can_dequantize(qtype: GGMLQuantizationType) -> bool:
    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return True
    return _ABILITIES.get(int(qtype), (False, False))[0]


def can_quantize(qtype: GGMLQuantizationType) -> bool:
    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return True
    return _ABILITIES.get(int(qtype), (False, False))[1]


def dequantize(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """`data` (bytes of `qtype`, rows of bytes last) as float32 (rows of elements last)."""
    qtype = GGMLQuantizationType(qtype)
    if qtype == GGMLQuantizationType.F32:
        return data.view(np.float32)
    if qtype == GGMLQuantizationType.F16:
        return data.view(np.float16).astype(np.float32)
    if not can_dequantize(qtype):
        raise NotImplementedError(f"Dequantization for {qtype.name} is not yet implemented")
    arr = np.asarray(data)
    oshape = quant_shape_from_byte_shape(arr.shape, qtype)
    raw = arr.view(np.uint8) if arr.dtype != np.uint8 else arr
    out = _native.dequantize(int(qtype), raw.tobytes())
    return np.frombuffer(out, dtype=np.float32).reshape(oshape)


def quantize(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """`data` (float, rows last) quantized to `qtype`: uint8, rows of bytes last."""
    qtype = GGMLQuantizationType(qtype)
    if qtype == GGMLQuantizationType.F32:
        return data.astype(np.float32, copy=False)
    if qtype == GGMLQuantizationType.F16:
        return data.astype(np.float16, copy=False)
    if not can_quantize(qtype):
        raise NotImplementedError(f"Quantization for {qtype.name} is not yet implemented")
    block_size, _type_size = GGML_QUANT_SIZES[qtype]
    arr = np.asarray(data)
    if arr.ndim == 0 or arr.shape[-1] % block_size != 0:
        raise QuantError(f"Can't quantize tensor with shape {arr.shape} to {qtype.name}")
    oshape = quant_shape_to_byte_shape(arr.shape, qtype)
    x = np.ascontiguousarray(arr, dtype=np.float32)
    n_per_row = int(arr.shape[-1])
    if x.size == 0:
        return np.zeros(oshape, dtype=np.uint8)
    out: Any = _native.quantize(int(qtype), x.tobytes(), n_per_row)
    return np.frombuffer(out, dtype=np.uint8).reshape(oshape).copy()
