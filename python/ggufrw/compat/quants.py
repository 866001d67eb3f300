"""gguf-py's `quants` module, computed by ggufrw's native (de)quantizers.

`quantize(data, qtype)` and `dequantize(data, qtype)` take and give arrays shaped as gguf-py's
do: quantized data is `uint8` with rows of bytes (`quant_shape_to_byte_shape`), dequantized data
`float32` with rows of elements. Given a `LazyNumpyTensor`, they give a lazy result (its meta
computed from the shape alone), as gguf-py does; llama.cpp's convert_hf_to_gguf.py quantizes so.
`_type_traits` maps each type gguf-py has code for to a class of gguf-py's name (`Q8_0`, `IQ2_XXS`,
...), with its class methods (`quantize_blocks`, `dequantize_blocks`, `quantize_rows`,
`dequantize_rows`, `quantize`, `dequantize`, `can_quantize`, `init_grid`) and attributes
(`block_size`, `type_size`, `grid`, `grid_shape`, `grid_map`, `grid_hex`, `ksigns`, `kvalues`,
...); the IQ grids are read out of the native dequantizers.

The results are gguf-py's bit for bit, NaN and infinity included: where a block holds values for
which gguf-py's numpy code and ggml's C part ways (NaN or infinity to quantize, NaN scales whose
sign or payload depends on the order of operations), that block is computed with numpy as gguf-py
computes it; elsewhere the native (de)quantizers (bit-exact with ggml's C, as gguf-py is) do the
work, on all cores.

Differences from gguf-py 0.19 on purpose: every type the native layer dequantizes (or quantizes)
is handled, not only the ones gguf-py has numpy code for: K-quants, NVFP4 and the IQ types that
ggml quantizes without an importance matrix quantize here (`quantize_blocks` included); Q8_1,
Q8_K, Q1_0, Q2_0 and the integer types dequantize (those have no class in `_type_traits`); Q8_1
has ggml's 36-byte blocks. `quantize` and `dequantize` also take the type as a plain `int`.
"""

from __future__ import annotations

import sys
from abc import ABC
from math import ceil, log2
from typing import Any, Callable, Sequence

import numpy as np

from .. import _native  # type: ignore[attr-defined]
from .constants import GGML_QUANT_SIZES, QK_K, GGMLQuantizationType
from .lazy import LazyChunkedTensor, LazyNumpyTensor

__all__ = [
    "QuantError",
    "quant_shape_to_byte_shape",
    "quant_shape_from_byte_shape",
    "np_roundf",
    "quantize",
    "dequantize",
    "can_quantize",
    "can_dequantize",
    "QK_K",
    "BF16",
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K",
    "Q4_K",
    "Q5_K",
    "Q6_K",
    "TQ1_0",
    "TQ2_0",
    "MXFP4",
    "NVFP4",
    "IQ2_XXS",
    "IQ2_XS",
    "IQ2_S",
    "IQ3_XXS",
    "IQ3_S",
    "IQ1_S",
    "IQ1_M",
    "IQ4_NL",
    "IQ4_XS",
]


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


def np_roundf(n: np.ndarray) -> np.ndarray:
    """Rounds half away from zero, as C's `roundf` (numpy's `round` rounds half to even)."""
    a = abs(n)
    whole = np.floor(a)
    # the fraction is >= 0.5 exactly when twice it is >= 1
    rounded = whole + np.floor(2 * (a - whole))
    return np.sign(n) * rounded


class QuantError(Exception):
    """A tensor that cannot be quantized to the type asked for (its rows are not whole blocks)."""


def _abilities() -> dict[int, tuple[bool, bool]]:
    return {row[0]: (bool(row[4]), bool(row[5])) for row in _native.types()}


_ABILITIES = _abilities()


def can_dequantize(qtype: GGMLQuantizationType) -> bool:
    """Whether `dequantize` handles `qtype`."""
    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return True
    return _ABILITIES.get(int(qtype), (False, False))[0]


def can_quantize(qtype: GGMLQuantizationType) -> bool:
    """Whether `quantize` handles `qtype`."""
    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return True
    return _ABILITIES.get(int(qtype), (False, False))[1]


# gguf-py's classes, by type, in gguf-py's order
_type_traits: dict[GGMLQuantizationType, type[__Quant]] = {}
# the other types the native layer handles (not gguf-py's, so not in `_type_traits`)
_more_traits: dict[GGMLQuantizationType, type[__Quant]] = {}


def quantize(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """`data` (floats, rows last) in `qtype`: uint8 with rows of bytes last (F32 and F16: floats).
    A `LazyNumpyTensor` gives a lazy result."""
    qtype = GGMLQuantizationType(qtype)
    if qtype == GGMLQuantizationType.F32:
        return data.astype(np.float32, copy=False)
    if qtype == GGMLQuantizationType.F16:
        return data.astype(np.float16, copy=False)
    q = _type_traits.get(qtype) or _more_traits.get(qtype)
    if q is None or (q not in _type_traits.values() and not can_quantize(qtype)):
        raise NotImplementedError(f"Quantization for {qtype.name} is not yet implemented")
    return q.quantize(data)


def dequantize(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """`data` (bytes of `qtype`, rows of bytes last) as float32, rows of elements last.
    A `LazyNumpyTensor` gives a lazy result."""
    qtype = GGMLQuantizationType(qtype)
    if qtype == GGMLQuantizationType.F32:
        return data.view(np.float32)
    if qtype == GGMLQuantizationType.F16:
        return data.view(np.float16).astype(np.float32)
    q = _type_traits.get(qtype) or _more_traits.get(qtype)
    if q is None:
        raise NotImplementedError(f"Dequantization for {qtype.name} is not yet implemented")
    return q.dequantize(data)


class __Quant(ABC):
    """What the classes of `_type_traits` share: the native (de)quantizers, by blocks, rows or
    whole arrays, lazy or not. A subclass's `_numpy_quantize_blocks`/`_numpy_dequantize_blocks`
    compute the blocks where the native result differs from gguf-py's numpy code."""

    qtype: GGMLQuantizationType
    block_size: int
    type_size: int

    grid: np.ndarray[Any, np.dtype[np.float32]] | None = None
    grid_shape: tuple[int, int] = (0, 0)
    grid_map: tuple[int | float, ...] = ()
    grid_hex: bytes | None = None

    _numpy_quantize_blocks: Callable[[np.ndarray], np.ndarray] | None = None
    _numpy_dequantize_blocks: Callable[[np.ndarray], np.ndarray] | None = None
    # blocks whose largest magnitude is at least this (or NaN, infinite, or below 2**-90 but not
    # zero) are quantized by `_numpy_quantize_blocks`
    _numpy_above: float = 2.0**15

    def __init__(self) -> None:
        raise TypeError("Quant conversion classes can't have instances")

    def __init_subclass__(cls, qtype: GGMLQuantizationType, traits: dict | None = None) -> None:
        cls.qtype = qtype
        cls.block_size, cls.type_size = GGML_QUANT_SIZES[qtype]
        cls.__quantize_lazy: Any = LazyNumpyTensor._wrap_fn(
            cls.__quantize_array, meta_noop=(np.uint8, cls.__shape_to_bytes)
        )
        cls.__dequantize_lazy: Any = LazyNumpyTensor._wrap_fn(
            cls.__dequantize_array, meta_noop=(np.float32, cls.__shape_from_bytes)
        )
        traits = _type_traits if traits is None else traits
        assert qtype not in traits
        traits[qtype] = cls

    @classmethod
    def init_grid(cls) -> None:
        """Unpacks `grid_hex` into `grid` (shaped `(1, 1, *grid_shape)`), once."""
        if cls.grid is not None or cls.grid_hex is None:
            return
        bits = ceil(log2(len(cls.grid_map)))
        assert bits != 0, cls.qtype.name
        per_byte = 8 // bits
        packed = np.frombuffer(bytes.fromhex(cls.grid_hex.decode("ascii")), dtype=np.uint8)
        shifts = np.arange(0, 8, 8 // per_byte, dtype=np.uint8)
        indices = (packed.reshape((-1, 1)) >> shifts) & np.uint8((1 << bits) - 1)
        values = np.array(cls.grid_map, dtype=np.float32)[indices.reshape(-1)]
        cls.grid = values.reshape((1, 1, *cls.grid_shape))

    @classmethod
    def quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        """Blocks of floats `(n, block_size)` quantized: `(n, type_size)` uint8."""
        blocks = np.ascontiguousarray(blocks, dtype=np.float32)
        return cls._quantize_rows_of(blocks.reshape((-1, cls.block_size)))

    @classmethod
    def dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        """Blocks of bytes `(n, type_size)` dequantized: `(n, block_size)` float32."""
        blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
        return cls._dequantize_rows_of(blocks.reshape((-1, cls.type_size)))

    @classmethod
    def quantize_rows(cls, rows: np.ndarray) -> np.ndarray:
        """Floats, rows last, quantized: uint8, rows of bytes last."""
        rows = rows.astype(np.float32, copy=False)
        shape = rows.shape
        flat = np.ascontiguousarray(rows.reshape((-1, shape[-1]) if rows.ndim else (-1, 1)))
        if flat.shape[-1] % cls.block_size != 0:
            # as gguf-py, whose blocks then cross rows
            flat = flat.reshape((-1, cls.block_size))
        out = cls._quantize_rows_of(flat)
        assert out.dtype == np.uint8
        return out.reshape(cls.__shape_to_bytes(shape))

    @classmethod
    def dequantize_rows(cls, rows: np.ndarray) -> np.ndarray:
        """Bytes, rows of bytes last, dequantized: float32, rows last."""
        rows = rows.view(np.uint8)
        shape = rows.shape
        flat = np.ascontiguousarray(rows.reshape((-1, shape[-1]) if rows.ndim else (-1, 1)))
        if flat.shape[-1] % cls.type_size != 0:
            flat = flat.reshape((-1, cls.type_size))
        out = cls._dequantize_rows_of(flat)
        assert out.dtype == np.float32
        return out.reshape(cls.__shape_from_bytes(shape))

    @classmethod
    def _quantize_rows_of(cls, x: np.ndarray) -> np.ndarray:
        # x: contiguous float32 (rows, whole blocks)
        if not _ABILITIES.get(int(cls.qtype), (False, False))[1]:
            # not without an importance matrix (IQ2_XXS, IQ2_XS, IQ1_S), as gguf-py, which has
            # no code for them
            raise NotImplementedError
        n_rows, n_per_row = x.shape
        out_row = n_per_row // cls.block_size * cls.type_size
        if x.size == 0:
            return np.empty((n_rows, out_row), dtype=np.uint8)
        raw = _native.quantize(int(cls.qtype), x.tobytes(), n_per_row)
        out = np.frombuffer(raw, dtype=np.uint8).reshape((n_rows, out_row)).copy()
        if cls._numpy_quantize_blocks is not None:
            blocks = x.reshape((-1, cls.block_size))
            redo = cls._numpy_quantize_needed(blocks)
            if redo is not None and redo.any():
                out_blocks = out.reshape((-1, cls.type_size))
                out_blocks[redo] = cls._numpy_quantize_blocks(blocks[redo])
        return out

    @classmethod
    def _numpy_quantize_needed(cls, blocks: np.ndarray) -> np.ndarray | None:
        # NaN and infinity: numpy orders NaNs (max, argmax) and casts them otherwise than C.
        # Scales that overflow float16 (or whose inverse overflows float32) make gguf-py's numpy
        # warn (RuntimeWarning), and computed as it does, they warn here alike.
        # Whole-array reductions first (fast; NaN propagates), as such blocks are rare.
        hi, lo = blocks.max(), blocks.min()
        if np.isfinite(hi) and np.isfinite(lo) and max(hi, -lo) < cls._numpy_above:
            magnitude = blocks.view(np.uint32) & np.uint32(0x7FFFFFFF)
            # 0 < |x| < 2**-90, as unsigned bits (0 wraps around)
            if not ((magnitude - np.uint32(1)) < np.uint32((127 - 90) << 23)).any():
                return None
        amax = np.maximum(blocks.max(axis=-1), -blocks.min(axis=-1))
        return ~np.isfinite(amax) | (amax >= cls._numpy_above) | ((amax > 0) & (amax < 2.0**-90))

    @classmethod
    def _dequantize_rows_of(cls, raw: np.ndarray) -> np.ndarray:
        # raw: contiguous uint8 (rows, whole blocks)
        n_rows, n_bytes = raw.shape
        out_row = n_bytes // cls.type_size * cls.block_size
        if raw.size == 0:
            return np.empty((n_rows, out_row), dtype=np.float32)
        out = np.frombuffer(_native.dequantize(int(cls.qtype), raw.tobytes()), dtype=np.float32)
        out = out.reshape((n_rows, out_row))
        if cls._numpy_dequantize_blocks is not None:
            out_blocks = out.reshape((-1, cls.block_size))
            # a NaN's sign and payload follow the order of numpy's operations
            redo = np.isnan(out_blocks).any(axis=-1)
            if redo.any():
                blocks = raw.reshape((-1, cls.type_size))
                cls.init_grid()
                out_blocks[redo] = cls._numpy_dequantize_blocks(blocks[redo])
        return out

    @classmethod
    def __shape_to_bytes(cls, shape: Sequence[int]) -> tuple[int, ...]:
        return quant_shape_to_byte_shape(shape, cls.qtype)

    @classmethod
    def __shape_from_bytes(cls, shape: Sequence[int]) -> tuple[int, ...]:
        return quant_shape_from_byte_shape(shape, cls.qtype)

    @classmethod
    def __quantize_array(cls, array: np.ndarray) -> np.ndarray:
        oshape = cls.__shape_to_bytes(array.shape)
        return cls.quantize_rows(array).reshape(oshape)

    @classmethod
    def __dequantize_array(cls, array: np.ndarray) -> np.ndarray:
        cls.init_grid()
        oshape = cls.__shape_from_bytes(array.shape)
        return cls.dequantize_rows(array).reshape(oshape)

    @classmethod
    def __quantize_lazy(cls, lazy_tensor: LazyNumpyTensor, /) -> Any:
        pass

    @classmethod
    def __dequantize_lazy(cls, lazy_tensor: LazyNumpyTensor, /) -> Any:
        pass

    @classmethod
    def can_quantize(cls, tensor: np.ndarray | LazyNumpyTensor) -> bool:
        """Whether the rows of `tensor` are whole blocks."""
        return tensor.shape[-1] % cls.block_size == 0

    @classmethod
    def quantize(cls, tensor: np.ndarray | LazyNumpyTensor) -> np.ndarray:
        """`tensor` quantized (lazily for a `LazyNumpyTensor`); `QuantError` if rows are not
        whole blocks."""
        if not cls.can_quantize(tensor):
            raise QuantError(f"Can't quantize tensor with shape {tensor.shape} to {cls.qtype.name}")
        if isinstance(tensor, LazyNumpyTensor):
            return cls.__quantize_lazy(tensor)
        return cls.__quantize_array(tensor)

    @classmethod
    def dequantize(cls, tensor: np.ndarray | LazyNumpyTensor) -> np.ndarray:
        """`tensor` dequantized (lazily for a `LazyNumpyTensor`)."""
        if isinstance(tensor, LazyNumpyTensor):
            return cls.__dequantize_lazy(tensor)
        return cls.__dequantize_array(tensor)


# numpy code computing what gguf-py's does, for the blocks the native results differ on


# The numpy (de)quantizers below put each operation numpy may warn about (RuntimeWarning) on a
# line of its own where gguf-py does, so that the same warnings show, once a line.


def _f16_at(blocks: np.ndarray, start: int) -> np.ndarray:
    return blocks[:, start:start + 2].view(np.float16).astype(np.float32)


def _nibbles_packed(q: np.ndarray) -> np.ndarray:
    # first half of the block in the low nibbles, second half in the high ones
    half = q.shape[-1] // 2
    return (q[:, :half] & np.uint8(0x0F)) | (q[:, half:] << np.uint8(4))


def _nibbles_unpacked(qs: np.ndarray) -> np.ndarray:
    shifted = qs.reshape((qs.shape[0], 1, -1)) >> np.array([0, 4], dtype=np.uint8).reshape((1, 2, 1))
    return (shifted & np.uint8(0x0F)).reshape((qs.shape[0], -1))


def _high_bits_packed(q: np.ndarray) -> np.ndarray:
    return np.packbits(q >> np.uint8(4), axis=-1, bitorder="little")


def _bits_of(words: np.ndarray, count: int) -> np.ndarray:
    shifts = np.arange(count, dtype=words.dtype).reshape((1, count))
    return ((words.reshape((-1, 1)) >> shifts) & words.dtype.type(1)).astype(np.uint8)


def _sign_factors(sign_bytes: np.ndarray) -> np.ndarray:
    bits = sign_bytes[..., None] >> np.arange(8, dtype=np.uint8)
    return np.where((bits & np.uint8(1)) == 0, np.float32(1), np.float32(-1))


class BF16(__Quant, qtype=GGMLQuantizationType.BF16):
    """bfloat16: float32's top half, rounded to nearest even, NaNs made quiet (as ggml)."""


class Q4_0(__Quant, qtype=GGMLQuantizationType.Q4_0):
    """32 values: an f16 scale and 4-bit quants (offset 8)."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        at = abs(blocks).argmax(axis=-1, keepdims=True)
        d = np.take_along_axis(blocks, at, axis=-1) / -8
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np.trunc(blocks * inv + np.float32(8.5), dtype=np.float32).astype(np.uint8).clip(0, 15)
        d_bytes = d.astype(np.float16).view(np.uint8)
        return np.concatenate([d_bytes, _nibbles_packed(q)], axis=-1)


class Q4_1(__Quant, qtype=GGMLQuantizationType.Q4_1):
    """32 values: f16 scale and minimum, 4-bit quants."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        hi = blocks.max(axis=-1, keepdims=True)
        lo = blocks.min(axis=-1, keepdims=True)
        d = (hi - lo) / 15
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np.trunc((blocks - lo) * inv + np.float32(0.5), dtype=np.float32).astype(np.uint8).clip(0, 15)
        d_bytes = d.astype(np.float16).view(np.uint8)
        m_bytes = lo.astype(np.float16).view(np.uint8)
        return np.concatenate([d_bytes, m_bytes, _nibbles_packed(q)], axis=-1)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        d, m = _f16_at(blocks, 0), _f16_at(blocks, 2)
        q = _nibbles_unpacked(blocks[:, 4:]).astype(np.float32)
        return (d * q) + m


class Q5_0(__Quant, qtype=GGMLQuantizationType.Q5_0):
    """32 values: an f16 scale and 5-bit quants (offset 16), high bits apart."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        at = abs(blocks).argmax(axis=-1, keepdims=True)
        d = np.take_along_axis(blocks, at, axis=-1) / -16
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np.trunc(blocks * inv + np.float32(16.5), dtype=np.float32).astype(np.uint8).clip(0, 31)
        d_bytes = d.astype(np.float16).view(np.uint8)
        return np.concatenate([d_bytes, _high_bits_packed(q), _nibbles_packed(q)], axis=-1)


class Q5_1(__Quant, qtype=GGMLQuantizationType.Q5_1):
    """32 values: f16 scale and minimum, 5-bit quants, high bits apart."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        hi = blocks.max(axis=-1, keepdims=True)
        lo = blocks.min(axis=-1, keepdims=True)
        d = (hi - lo) / 31
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np.trunc((blocks - lo) * inv + np.float32(0.5), dtype=np.float32).astype(np.uint8).clip(0, 31)
        d_bytes = d.astype(np.float16).view(np.uint8)
        m_bytes = lo.astype(np.float16).view(np.uint8)
        return np.concatenate([d_bytes, m_bytes, _high_bits_packed(q), _nibbles_packed(q)], axis=-1)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d, m = _f16_at(blocks, 0), _f16_at(blocks, 2)
        high = _bits_of(blocks[:, 4:8].copy().view(np.uint32), 32).reshape((n, 32))
        q = (_nibbles_unpacked(blocks[:, 8:]) | (high << np.uint8(4))).astype(np.float32)
        return (d * q) + m


class Q8_0(__Quant, qtype=GGMLQuantizationType.Q8_0):
    """32 values: an f16 scale and 8-bit quants."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        d = abs(blocks).max(axis=-1, keepdims=True) / 127
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np_roundf(blocks * inv)
        d_bytes = d.astype(np.float16).view(np.uint8)
        q_bytes = q.astype(np.int8).view(np.uint8)
        return np.concatenate([d_bytes, q_bytes], axis=-1)


class Q2_K(__Quant, qtype=GGMLQuantizationType.Q2_K):
    """256 values: 2-bit quants, 4-bit scales and mins of 16, f16 super-scales."""


class Q3_K(__Quant, qtype=GGMLQuantizationType.Q3_K):
    """256 values: 3-bit quants (high bits as a mask), 6-bit scales of 16, an f16 super-scale."""


class Q4_K(__Quant, qtype=GGMLQuantizationType.Q4_K):
    """256 values: 4-bit quants, 6-bit scales and mins of 32, f16 super-scales."""

    K_SCALE_SIZE = 12

    @staticmethod
    def get_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The 8 six-bit scales and 8 six-bit mins packed in each row of 12 bytes."""
        n = scales.shape[0]
        packed = scales.view(np.uint8).reshape((n, 3, 4))
        d, m, both = packed[:, 0], packed[:, 1], packed[:, 2]
        sc = np.concatenate([d & 0x3F, (both & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
        mn = np.concatenate([m & 0x3F, (both >> 4) | ((m >> 2) & 0x30)], axis=-1)
        return sc.reshape((n, 8)), mn.reshape((n, 8))


class Q5_K(__Quant, qtype=GGMLQuantizationType.Q5_K):
    """256 values: 5-bit quants, 6-bit scales and mins of 32, f16 super-scales."""


class Q6_K(__Quant, qtype=GGMLQuantizationType.Q6_K):
    """256 values: 6-bit quants, 8-bit scales of 16, an f16 super-scale."""


class TQ1_0(__Quant, qtype=GGMLQuantizationType.TQ1_0):
    """256 ternary values, five to a byte (base 3), and an f16 scale."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = abs(blocks).max(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np_roundf(blocks * inv)
        q = (q.astype(np.int8) + np.int8(1)).astype(np.uint8)
        powers = np.array([81, 27, 9, 3, 1], dtype=np.uint8)

        def base3(part: np.ndarray, digits: int, width: int) -> np.ndarray:
            weighted = part.reshape((n, -1, digits, width)) * powers[:digits].reshape((1, 1, digits, 1))
            return np.sum(weighted, axis=-2).reshape((n, -1))

        qs = np.concatenate(
            [base3(q[:, :160], 5, 32), base3(q[:, 160:240], 5, 16), base3(q[:, 240:], 4, 4)], axis=-1
        )
        # each byte holds its digits as a fraction of 243 scaled to 256, rounded up
        qs = ((qs.astype(np.uint16) * 256 + (243 - 1)) // 243).astype(np.uint8)
        d_bytes = d.astype(np.float16).view(np.uint8)
        return np.concatenate([qs, d_bytes], axis=-1)


class TQ2_0(__Quant, qtype=GGMLQuantizationType.TQ2_0):
    """256 ternary values, four to a byte (2 bits), and an f16 scale."""

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = abs(blocks).max(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            inv = np.where(d == 0, 0, 1 / d)
        q = np_roundf(blocks * inv)
        q = (q.astype(np.int8) + np.int8(1)).astype(np.uint8)
        q = q.reshape((n, -1, 4, 32)) << np.array([0, 2, 4, 6], dtype=np.uint8).reshape((1, 1, 4, 1))
        qs = (q[:, :, 0] | q[:, :, 1] | q[:, :, 2] | q[:, :, 3]).reshape((n, -1))
        d_bytes = d.astype(np.float16).view(np.uint8)
        return np.concatenate([qs, d_bytes], axis=-1)


class MXFP4(__Quant, qtype=GGMLQuantizationType.MXFP4):
    """32 e2m1 values sharing an e8m0 exponent."""

    # e2m1's values, doubled (the scale is halved to match)
    kvalues = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)

    @staticmethod
    def e8m0_to_fp32_half(x: np.ndarray) -> np.ndarray:
        """Half the value of each e8m0 byte (2**(x - 127) / 2), as float32."""
        x = np.asarray(x)
        x32 = x.astype(np.uint32)
        # 0 and 1 give subnormals
        bits = np.where(x < 2, np.uint32(0x00200000) << x32, (x32 - np.uint32(1)) << np.uint32(23))
        return bits.view(np.float32)

    # no float16 here: only magnitudes near float32's limits overflow (and, below 2**-125, the
    # exponent is a negative float cast to uint8)
    _numpy_above = 2.0**126

    @classmethod
    def _numpy_quantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        amax = abs(blocks).max(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            e = np.where(amax > 0, np.floor(np.log2(amax)) - 2 + 127, 0).astype(np.uint8)
        d = cls.e8m0_to_fp32_half(e)
        kvalues = np.array(cls.kvalues, dtype=np.int8).reshape((1, 1, 16))
        errors = np.abs(d.reshape((n, 1, 1)) * kvalues.astype(np.float32) - blocks.reshape((n, cls.block_size, 1)))
        best = np.argmin(errors, axis=-1, keepdims=True).reshape((n, cls.block_size)).astype(np.uint8)
        return np.concatenate([e, _nibbles_packed(best)], axis=-1)


class NVFP4(__Quant, qtype=GGMLQuantizationType.NVFP4):
    """64 e2m1 values: four ue4m3 scales, one for each 16."""

    # e2m1's values, doubled, as MXFP4's
    kvalues = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)

    @staticmethod
    def ue4m3_to_fp32(x: np.ndarray) -> np.ndarray:
        """Unsigned e4m3 (bias 7) bytes as float32, halved to go with the doubled `kvalues`."""
        exp = (x >> 3).astype(np.int32) & 0xF
        man = (x & 0x7).astype(np.float32)
        subnormal = man * 2**-9
        normal = (1.0 + man / 8.0) * (2.0 ** (exp.astype(np.float32) - 7))
        value = np.where(exp == 0, subnormal, normal)
        # 0x7F is e4m3's NaN, read as zero
        return np.where((x == 0) | (x == 0x7F), 0.0, value * 0.5)

    @staticmethod
    def fp32_to_ue4m3(x: np.ndarray) -> np.ndarray:
        """float32 to unsigned e4m3 bytes, rounding and saturating as ggml's `ggml_fp32_to_ue4m3`."""
        x = np.clip(x, 0.0, 448.0).astype(np.float32)
        bits = x.view(np.uint32)
        exp = ((bits >> 23) & 0xFF).astype(np.int32) - 127 + 7
        man = ((bits >> 20) & 0x7).astype(np.int32) + ((bits >> 19) & 1).astype(np.int32)

        subnormal = np.clip((x * 512.0 + 0.5).astype(np.int32), 0, 7)
        subnormal = np.where(subnormal >= 1, subnormal, 0).astype(np.uint8)

        # a mantissa rounded up past 7 carries into the exponent
        carry = man > 7
        man = np.where(carry, 0, man)
        rounded_exp = np.where(carry, exp + 1, exp)
        normal = np.where(rounded_exp >= 15, np.uint8(0x7E), ((rounded_exp << 3) | man).astype(np.uint8))

        return np.where(
            x <= 0.0, np.uint8(0), np.where(exp <= 0, subnormal, np.where(exp >= 15, np.uint8(0x7E), normal))
        )


# The IQ grids: rows of `grid_shape[1]` values, each one of `grid_map`, read out of the native
# dequantizers (blocks whose scale makes each value a known multiple of its grid entry) and
# packed as gguf-py packs them (`ceil(log2(len(grid_map)))` bits a value, low bits first, hex).


def _probe(qtype: GGMLQuantizationType, blocks: np.ndarray, width: int) -> np.ndarray:
    blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
    blocks[:, 0:2] = np.array([1.0], dtype="<f2").view(np.uint8)  # d = 1
    values = np.frombuffer(_native.dequantize(int(qtype), blocks.tobytes()), dtype=np.float32)
    return values.reshape((-1, width))


def _grid_hex(values: np.ndarray, grid_map: tuple[int | float, ...]) -> bytes:
    keys = np.array(grid_map, dtype=np.float32)
    order = np.argsort(keys)
    values = values.reshape(-1)
    indices = order[np.searchsorted(keys[order], values).clip(0, len(keys) - 1)].astype(np.uint8)
    assert (keys[indices] == values).all(), "a grid value outside grid_map"
    bits = ceil(log2(len(grid_map)))
    per_byte = 8 // bits
    shifts = np.arange(0, 8, 8 // per_byte, dtype=np.uint8)
    packed = np.bitwise_or.reduce(indices.reshape((-1, per_byte)) << shifts, axis=-1).astype(np.uint8)
    return packed.tobytes().hex().encode("ascii")


def _groups(n_entries: int, per_block: int) -> np.ndarray:
    return np.arange(n_entries, dtype=np.uint32).reshape((-1, per_block))


def _iq2_xxs_grid() -> np.ndarray:
    idx = _groups(256, 32)
    body = np.zeros((idx.shape[0], 8, 8), dtype=np.uint8)  # per 32 values: 4 indices, signs and scale
    body[:, :, :4] = idx.reshape((-1, 8, 4))
    blocks = np.concatenate([np.zeros((idx.shape[0], 2), np.uint8), body.reshape((idx.shape[0], -1))], axis=-1)
    return _probe(GGMLQuantizationType.IQ2_XXS, blocks, 8) / np.float32(0.125)


def _iq2_xs_grid() -> np.ndarray:
    idx = _groups(512, 32)
    n = idx.shape[0]
    qs = idx.astype("<u2").view(np.uint8)  # 9-bit index, sign index 0
    blocks = np.concatenate([np.zeros((n, 2), np.uint8), qs, np.zeros((n, 8), np.uint8)], axis=-1)
    return _probe(GGMLQuantizationType.IQ2_XS, blocks, 8) / np.float32(0.125)


def _iq2_s_grid() -> np.ndarray:
    idx = _groups(1024, 32)
    n = idx.shape[0]
    low = (idx & 0xFF).astype(np.uint8)
    high = ((idx >> 8) & 3).reshape((n, 8, 4)) << np.array([0, 2, 4, 6], dtype=np.uint32)
    qh = np.bitwise_or.reduce(high, axis=-1).astype(np.uint8)
    zeros = np.zeros((n, 2), np.uint8)
    blocks = np.concatenate([zeros, low, np.zeros((n, 32), np.uint8), qh, np.zeros((n, 8), np.uint8)], axis=-1)
    return _probe(GGMLQuantizationType.IQ2_S, blocks, 8) / np.float32(0.125)


def _iq3_xxs_grid() -> np.ndarray:
    idx = _groups(256, 64)
    n = idx.shape[0]
    blocks = np.concatenate([np.zeros((n, 2), np.uint8), idx.astype(np.uint8), np.zeros((n, 32), np.uint8)], axis=-1)
    return _probe(GGMLQuantizationType.IQ3_XXS, blocks, 4) / np.float32(0.25)


def _iq3_s_grid() -> np.ndarray:
    idx = _groups(512, 64)
    n = idx.shape[0]
    low = (idx & 0xFF).astype(np.uint8)
    high = ((idx >> 8) & 1).reshape((n, 8, 8)) << np.arange(8, dtype=np.uint32)
    qh = np.bitwise_or.reduce(high, axis=-1).astype(np.uint8)
    rest = np.zeros((n, 32 + 4), np.uint8)  # signs, scales: +, 1
    blocks = np.concatenate([np.zeros((n, 2), np.uint8), low, qh, rest], axis=-1)
    return _probe(GGMLQuantizationType.IQ3_S, blocks, 4)


def _iq1_s_grid() -> np.ndarray:
    idx = _groups(2048, 32)
    n = idx.shape[0]
    low = (idx & 0xFF).astype(np.uint8)
    high = ((idx >> 8) & 7).reshape((n, 8, 4)) << np.array([0, 3, 6, 9], dtype=np.uint32)
    qh = np.bitwise_or.reduce(high, axis=-1).astype("<u2").view(np.uint8)  # scale 1, delta +1/8
    blocks = np.concatenate([np.zeros((n, 2), np.uint8), low, qh], axis=-1)
    return _probe(GGMLQuantizationType.IQ1_S, blocks, 8) - np.float32(0.125)


class IQ2_XXS(__Quant, qtype=GGMLQuantizationType.IQ2_XXS):
    """256 values: 8-value rows of a grid, signs by parity-completed 7-bit patterns."""

    # byte i: the 7 bits of i, and their parity as the 8th (the sign count is even)
    ksigns: bytes = bytes(i | ((bin(i).count("1") & 1) << 7) for i in range(128))

    grid_shape = (256, 8)
    grid_map = (0x08, 0x19, 0x2B)
    grid_hex = _grid_hex(_iq2_xxs_grid(), grid_map)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = _f16_at(blocks, 0)
        words = blocks[:, 2:].copy().view(np.uint32).reshape((n, -1, 2))
        db = d * (np.float32(0.5) + (words[..., 1] >> 28).astype(np.float32)) * np.float32(0.25)
        sign_idx = (words[..., 1:] >> np.array([0, 7, 14, 21], dtype=np.uint32)) & np.uint32(0x7F)
        signs = _sign_factors(np.frombuffer(cls.ksigns, dtype=np.uint8)[sign_idx])
        assert cls.grid is not None
        grid = cls.grid[0, 0][words[..., 0].copy().view(np.uint8).reshape((n, -1, 4))]
        return (db.reshape((n, -1, 1, 1)) * grid * signs).reshape((n, -1))


class IQ2_XS(__Quant, qtype=GGMLQuantizationType.IQ2_XS):
    """256 values: 9-bit grid indices with 7-bit sign patterns, 4-bit scales."""

    grid_shape = (512, 8)
    grid_map = (0x08, 0x19, 0x2B)
    grid_hex = _grid_hex(_iq2_xs_grid(), grid_map)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = _f16_at(blocks, 0)
        qs = blocks[:, 2:66].copy().view(np.uint16)
        scales = _nibble_pairs(blocks[:, 66:74])
        db = d * (np.float32(0.5) + scales) * np.float32(0.25)
        signs = _sign_factors(np.frombuffer(IQ2_XXS.ksigns, dtype=np.uint8)[qs >> 9]).reshape((n, -1, 2, 8))
        assert cls.grid is not None
        grid = cls.grid[0, 0][qs & np.uint16(511)].reshape((n, -1, 2, 8))
        return (db.reshape((n, -1, 1, 1)) * grid * signs).reshape((n, -1))


def _nibble_pairs(x: np.ndarray) -> np.ndarray:
    # each byte's low nibble, then its high one
    pairs = x.reshape((x.shape[0], -1, 1)) >> np.array([0, 4], dtype=np.uint8).reshape((1, 1, 2))
    return (pairs & 0x0F).reshape((x.shape[0], -1))


class IQ2_S(__Quant, qtype=GGMLQuantizationType.IQ2_S):
    """256 values: 10-bit grid indices, explicit signs, 4-bit scales."""

    grid_shape = (1024, 8)
    grid_map = (0x08, 0x19, 0x2B)
    grid_hex = _grid_hex(_iq2_s_grid(), grid_map)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = _f16_at(blocks, 0)
        low, sign_bytes, qh, scales = blocks[:, 2:34], blocks[:, 34:66], blocks[:, 66:74], blocks[:, 74:82]
        db = d * (np.float32(0.5) + _nibble_pairs(scales)) * np.float32(0.25)
        signs = _sign_factors(sign_bytes).reshape((n, -1, 2, 8))
        high = (qh.reshape((n, -1, 1)) >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 0x03
        idx = low.astype(np.uint16) | (high.astype(np.uint16) << 8).reshape((n, -1))
        assert cls.grid is not None
        grid = cls.grid[0, 0][idx].reshape((n, -1, 2, 8))
        return (db.reshape((n, -1, 1, 1)) * grid * signs).reshape((n, -1))


class IQ3_XXS(__Quant, qtype=GGMLQuantizationType.IQ3_XXS):
    """256 values: 4-value rows of a grid, signs by 7-bit patterns."""

    grid_shape = (256, 4)
    grid_map = (0x04, 0x0C, 0x14, 0x1C, 0x24, 0x2C, 0x34, 0x3E)
    grid_hex = _grid_hex(_iq3_xxs_grid(), grid_map)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = _f16_at(blocks, 0)
        qs = blocks[:, 2:66]
        words = blocks[:, 66:98].copy().view(np.uint32)
        db = d * (np.float32(0.5) + (words >> 28).astype(np.float32)) * np.float32(0.5)
        sign_idx = (words[..., None] >> np.array([0, 7, 14, 21], dtype=np.uint32)) & np.uint32(0x7F)
        signs = _sign_factors(np.frombuffer(IQ2_XXS.ksigns, dtype=np.uint8)[sign_idx])
        assert cls.grid is not None
        grid = cls.grid[0, 0][qs].reshape((n, -1, 4, 8))
        return (db.reshape((n, -1, 1, 1)) * grid * signs).reshape((n, -1))


class IQ3_S(__Quant, qtype=GGMLQuantizationType.IQ3_S):
    """256 values: 9-bit indices into a grid of 4-value rows, explicit signs."""

    grid_shape = (512, 4)
    grid_map = (0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F)
    grid_hex = _grid_hex(_iq3_s_grid(), grid_map)

    @classmethod
    def _numpy_dequantize_blocks(cls, blocks: np.ndarray) -> np.ndarray:
        n = blocks.shape[0]
        d = _f16_at(blocks, 0)
        low, qh, sign_bytes, scales = blocks[:, 2:66], blocks[:, 66:74], blocks[:, 74:106], blocks[:, 106:110]
        db = d * (1 + 2 * _nibble_pairs(scales))
        signs = _sign_factors(sign_bytes).reshape((n, -1, 4, 8))
        idx = low.astype(np.uint16) | (_bits_of(qh.reshape(-1), 8).astype(np.uint16).reshape((n, -1)) << 8)
        assert cls.grid is not None
        grid = cls.grid[0, 0][idx].reshape((n, -1, 4, 8))
        return (db.reshape((n, -1, 1, 1)) * grid * signs).reshape((n, -1))


class IQ1_S(__Quant, qtype=GGMLQuantizationType.IQ1_S):
    """256 values: rows of a ternary grid with a shared offset (`delta`)."""

    grid_shape = (2048, 8)
    grid_map = (-1, 0, 1)
    grid_hex = _grid_hex(_iq1_s_grid(), grid_map)

    delta = np.float32(0.125)


class IQ1_M(__Quant, qtype=GGMLQuantizationType.IQ1_M):
    """256 values: IQ1_S's grid, with the f16 scale spread over the 3-bit scales."""

    grid_shape = IQ1_S.grid_shape
    grid_map = IQ1_S.grid_map
    grid_hex = IQ1_S.grid_hex

    delta = IQ1_S.delta


class IQ4_NL(__Quant, qtype=GGMLQuantizationType.IQ4_NL):
    """32 values: 4-bit indices into a non-linear table (`kvalues`), an f16 scale."""

    kvalues = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


class IQ4_XS(__Quant, qtype=GGMLQuantizationType.IQ4_XS):
    """256 values: IQ4_NL's table, with 6-bit scales of 32 under an f16 one."""


def _add_more_traits() -> None:
    # one class each for the other types the native layer handles (Q8_1, Q8_K, Q1_0, Q2_0, the
    # integer types), known to `quantize`/`dequantize` but not to `_type_traits`
    for qtype in GGMLQuantizationType:
        if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16) or qtype in _type_traits:
            continue
        if qtype not in GGML_QUANT_SIZES or not any(_ABILITIES.get(int(qtype), (False, False))):
            continue
        type(__Quant)(qtype.name, (__Quant,), {"__module__": __name__}, qtype=qtype, traits=_more_traits)


_add_more_traits()


# Chunked tensors quantize through this module (see `LazyChunkedTensor._quants`).
LazyChunkedTensor._quants = sys.modules[__name__]
