"""`GGUFWriter` with gguf-py 0.19's calls, stages and output bytes.

The metadata and tensor-info sections are encoded by ggufrw's native encoder; the stages
(`write_header_to_file`, `write_kv_data_to_file`, `write_ti_data_to_file`, `write_tensors_to_file`
or `write_tensor_data`, `close`), the padding (to `data_alignment` after the tensor infos and after
every tensor, the last one included) and the file handling (the output opened by
`write_header_to_file`, split outputs, `use_temp_file`, `dry_run`) are gguf-py's, so the same calls
give the same bytes.

The typed setters (`add_context_length`, `add_block_count`, ... every `add_*` of the pinned tree's
gguf-py that writes one key) are made from the rows scripts/gen_compat_tables.py reads from
gguf-py's own source (`_tables._SETTERS`); the others are written here.

Values are checked as gguf-py's `struct` packing checks them, and the same exceptions are raised
when they are written: `struct.error` for an integer out of its type's range or a non-integer,
`OverflowError` for a float32 out of range, `ValueError` for an empty or mixed array.

Difference from gguf-py on purpose: a tensor whose data size does not match its shape and type is
refused by `add_tensor`/`add_tensor_info` with a `ValueError` naming it, before anything is
written. gguf-py accepts it and writes a file whose tensor info does not describe its data (as
convert_llama_ggml_to_gguf.py does with F16 tensors, whose element shape it passes as a byte
shape). Data written later with `write_tensor_data` is checked against its info the same way.
"""

from __future__ import annotations

import inspect
import logging
import operator
import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Sequence as _SequenceABC
from dataclasses import dataclass
from enum import Enum, auto
from io import BufferedWriter
from math import prod
from pathlib import Path
from string import ascii_letters, digits
from typing import IO, Any, Callable, Mapping, Sequence

import numpy as np

from .. import _native  # type: ignore[attr-defined]
from .constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_VERSION,
    GGMLQuantizationType,
    GGUFEndian,
    GGUFValueType,
    Keys,
)
from .quants import quant_shape_from_byte_shape
from ._tables import _SETTERS

__all__ = ["GGUFWriter", "GGUFValue", "TensorInfo", "WriterState", "SHARD_NAME_FORMAT"]

# gguf-py's logger name, so that code configuring gguf-py's loggers reaches this one
logger = logging.getLogger("gguf.gguf_writer")

SHARD_NAME_FORMAT = "{:s}-{:05d}-of-{:05d}.gguf"

KEY_ALIGNMENT = Keys.General.ALIGNMENT
KEY_SPLIT_NO = Keys.Split.LLM_KV_SPLIT_NO
KEY_SPLIT_COUNT = Keys.Split.LLM_KV_SPLIT_COUNT
KEY_SPLIT_TENSORS_COUNT = Keys.Split.LLM_KV_SPLIT_TENSORS_COUNT


@dataclass
class TensorInfo:
    shape: Sequence[int]
    dtype: GGMLQuantizationType
    nbytes: int
    tensor: Any = None


@dataclass
class GGUFValue:
    value: Any
    type: GGUFValueType
    sub_type: GGUFValueType | None = None


class WriterState(Enum):
    NO_FILE = auto()
    EMPTY = auto()
    HEADER = auto()
    KV_DATA = auto()
    TI_DATA = auto()
    WEIGHTS = auto()


# struct formats of the fixed-size types (the value checks gguf-py's packing makes)
_FORMATS: dict[int, str] = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
    GGUFValueType.BOOL: "?",
}
_SIZES: dict[int, int] = {t: struct.calcsize("<" + f) for t, f in _FORMATS.items()}


def _int_range(fmt: str) -> tuple[int, int]:
    """The values the struct integer format `fmt` packs (lower case: signed)."""
    bits = 8 * struct.calcsize("<" + fmt)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if fmt.islower() else (0, (1 << bits) - 1)


# from the formats, so that a range cannot disagree with what struct packs
_INT_RANGES: dict[int, tuple[int, int]] = {t: _int_range(f) for t, f in _FORMATS.items() if f in "bBhHiIqQ"}
# the smallest magnitude that rounds to infinity as a float32
_F32_OVERFLOW = 2.0**128 - 2.0**103


class _Prepared:
    """A value ready for the native encoder, with its encoded size in bytes."""

    __slots__ = ("value", "element", "size")

    def __init__(self, value: Any, element: int | None, size: int) -> None:
        self.value = value
        self.element = element
        self.size = size


def _scalar(val: Any, vtype: int) -> Any:
    """`val` as the Python value of its type, raising what `struct.pack` raises for it."""
    if vtype == GGUFValueType.BOOL:
        return bool(val)
    if vtype in _INT_RANGES:
        lo, hi = _INT_RANGES[vtype]
        if type(val) is int and lo <= val <= hi:
            return val
        struct.pack("<" + _FORMATS[vtype], val)  # raises struct.error as gguf-py would
        return operator.index(val)
    # float32 / float64
    if type(val) is not float:
        struct.pack("<" + _FORMATS[vtype], val)  # TypeError / struct.error for non-numbers
        val = float(val)
    if vtype == GGUFValueType.FLOAT32 and abs(val) >= _F32_OVERFLOW and abs(val) != float("inf"):
        struct.pack("<f", val)  # OverflowError
    return val


def _scalars(vals: Sequence[Any], vtype: int) -> list[Any]:
    """Every element of an array of a fixed-size type (fast when they are plain ints/floats)."""
    if vtype == GGUFValueType.BOOL:
        return [bool(v) for v in vals]
    if vtype in _INT_RANGES:
        items = list(vals)
        if all(type(v) is int for v in items):
            lo, hi = _INT_RANGES[vtype]
            if not items or (lo <= min(items) and max(items) <= hi):
                return items
        return [_scalar(v, vtype) for v in items]
    items = list(vals)
    if all(type(v) is float for v in items):
        if vtype == GGUFValueType.FLOAT32 and items:
            a = np.abs(np.array(items, dtype=np.float64))
            bad = (a >= _F32_OVERFLOW) & np.isfinite(a)
            if bad.any():
                struct.pack("<f", items[int(np.argmax(bad))])
        return items
    return [_scalar(v, vtype) for v in items]


def _string(val: Any) -> bytes:
    if isinstance(val, str):
        return val.encode("utf-8")
    if isinstance(val, (bytes, bytearray, memoryview)):
        return bytes(val)
    raise TypeError(f"a GGUF string must be str or bytes, not {type(val).__name__}")


def _prepare(val: Any, vtype: int, sub_type: int | None = None) -> _Prepared:
    """A value (`vtype`, array elements `sub_type` or found as gguf-py finds them) for encoding."""
    fixed = _SIZES.get(vtype)
    if fixed is not None:
        return _Prepared(_scalar(val, vtype), None, fixed)
    if vtype == GGUFValueType.STRING:
        raw = _string(val)
        return _Prepared(raw, None, 8 + len(raw))
    if vtype == GGUFValueType.ARRAY:
        if not isinstance(val, _SequenceABC):
            raise ValueError("Invalid GGUF metadata array, expecting sequence")
        if len(val) == 0:
            raise ValueError("Invalid GGUF metadata array. Empty array")
        if sub_type is not None:
            ltype = int(sub_type)
        elif isinstance(val, bytes):
            ltype = GGUFValueType.UINT8
        else:
            ltype = GGUFValueType.get_type(val[0])
            if not all(GGUFValueType.get_type(i) is ltype for i in val[1:]):
                raise ValueError("All items in a GGUF array should be of the same type")
        size = 12
        fixed = _SIZES.get(ltype)
        if fixed is not None:
            items = _scalars(val, ltype)
            size += fixed * len(items)
        elif ltype == GGUFValueType.STRING:
            items = [_string(v) for v in val]
            size += 8 * len(items) + sum(map(len, items))
        elif ltype == GGUFValueType.ARRAY:
            items = []
            for v in val:
                inner = _prepare(v, GGUFValueType.ARRAY)
                items.append((inner.element, inner.value))
                size += inner.size
        else:
            raise ValueError("Invalid GGUF metadata value type or value")
        return _Prepared(items, ltype, size)
    raise ValueError("Invalid GGUF metadata value type or value")


def _byte_order(endianess: GGUFEndian) -> str:
    return "little" if endianess == GGUFEndian.LITTLE else "big"


def _encode_kv(kv_data: Mapping[str, GGUFValue], endianess: GGUFEndian) -> bytes:
    """The metadata section of a file holding `kv_data`, as gguf-py lays it out."""
    metadata = []
    size = 0
    for key, val in kv_data.items():
        raw_key = _string(key)
        prepared = _prepare(val.value, int(val.type), val.sub_type)
        metadata.append((raw_key, int(val.type), prepared.value, prepared.element))
        size += 8 + len(raw_key) + 4 + prepared.size
    if not metadata:
        return b""
    header, _offsets = _native_encode(_byte_order(endianess), metadata, [])
    return bytes(header[24 : 24 + size])


def _encode_ti(
    tensors: Mapping[str, TensorInfo], alignment: int, endianess: GGUFEndian
) -> bytes:
    """The tensor-info section for `tensors` (offsets padded to `alignment`)."""
    rows = []
    size = 0
    for name, ti in tensors.items():
        raw_name = _string(name)
        dims = [operator.index(d) for d in reversed(list(ti.shape))]
        for d in dims:
            _scalar(d, GGUFValueType.UINT64)
        rows.append((raw_name, dims, _scalar(ti.dtype, GGUFValueType.UINT32), int(ti.nbytes)))
        size += 8 + len(raw_name) + 4 + 8 * len(dims) + 4 + 8
    if not rows:
        return b""
    _scalar(alignment, GGUFValueType.UINT32)
    prefix = [(KEY_ALIGNMENT.encode(), int(GGUFValueType.UINT32), int(alignment), None)]
    header, _offsets = _native_encode(_byte_order(endianess), prefix, rows)
    start = 24 + 8 + len(KEY_ALIGNMENT) + 4 + 4
    return bytes(header[start : start + size])


def _native_encode(byte_order: str, metadata: list[Any], tensors: list[Any]) -> tuple[bytes, list[int]]:
    try:
        return _native.encode_header(GGUF_VERSION, byte_order, metadata, tensors)
    except _native.Error as e:
        raise ValueError(f"cannot encode the GGUF header: {e}") from e


class GGUFWriter:
    """Writes a GGUF file (or split files) the way gguf-py's `GGUFWriter` does."""

    fout: list[BufferedWriter] | None
    path: Path | None
    temp_file: "tempfile.SpooledTemporaryFile[bytes] | None"
    tensors: list[dict[str, TensorInfo]]
    kv_data: list[dict[str, GGUFValue]]
    state: WriterState
    _simple_value_packing = {GGUFValueType(t): f for t, f in _FORMATS.items()}

    def __init__(
        self,
        path: os.PathLike[str] | str | None,
        arch: str,
        use_temp_file: bool = False,
        endianess: GGUFEndian = GGUFEndian.LITTLE,
        split_max_tensors: int = 0,
        split_max_size: int = 0,
        dry_run: bool = False,
        small_first_shard: bool = False,
    ) -> None:
        self.fout = None
        self.path = Path(path) if path else None
        self.arch = arch
        self.endianess = endianess
        self.data_alignment = GGUF_DEFAULT_ALIGNMENT
        self.use_temp_file = use_temp_file
        self.temp_file = None
        self.tensors = [{}]
        self.kv_data = [{}]
        self.split_max_tensors = split_max_tensors
        self.split_max_size = split_max_size
        self.dry_run = dry_run
        self.small_first_shard = small_first_shard
        logger.info(
            "gguf: This GGUF file is for {0} Endian only".format(
                "Big" if self.endianess == GGUFEndian.BIG else "Little"
            )
        )
        self.state = WriterState.NO_FILE
        if self.small_first_shard:
            self.tensors.append({})
        self.add_architecture()

    # sizes

    def get_total_parameter_count(self) -> tuple[int, int, int, int]:
        """(total, shared, expert, expert count) parameters, as gguf-py counts them."""
        total = shared = expert = 0
        expert_sum = n_expert_tensors = 0
        last_lora_a: tuple[str, TensorInfo] | None = None
        for tensors in self.tensors:
            for name, info in tensors.items():
                shape = info.shape
                if name.endswith(".lora_a"):
                    last_lora_a = (name, info)
                    continue
                if name.endswith(".lora_b"):
                    if last_lora_a is None or last_lora_a[0] != name[:-1] + "a":
                        logger.warning("can't measure LoRA size correctly, tensor order is unusual")
                        return 0, 0, 0, 0
                    shape = (*shape[:-1], last_lora_a[1].shape[-1])
                size = prod(shape)
                if "_exps." in name and len(shape) >= 3:
                    count = shape[-2 if ".bias" in name else -3]
                    expert += size // count
                    expert_sum += count
                    n_expert_tensors += 1
                else:
                    shared += size
                total += size
        expert_count = (expert_sum // n_expert_tensors) if n_expert_tensors > 0 else 0
        if last_lora_a is not None:
            total = -total
        return total, shared, expert, expert_count

    # files

    def format_shard_names(self, path: Path) -> list[Path]:
        if len(self.tensors) == 1:
            return [path]
        n = len(self.tensors)
        return [path.with_name(SHARD_NAME_FORMAT.format(path.stem, i + 1, n)) for i in range(n)]

    def open_output_file(self, path: Path | None = None) -> None:
        if self.state is WriterState.EMPTY and self.fout is not None and (path is None or path == self.path):
            return
        if self.state is not WriterState.NO_FILE:
            raise ValueError(f"Expected output file to be not yet opened, got {self.state}")
        if path is not None:
            self.path = path
        if self.path is not None:
            filenames = self.print_plan()
            self.fout = [open(name, "wb") for name in filenames]
            self.state = WriterState.EMPTY

    def print_plan(self) -> list[Path]:
        logger.info("Writing the following files:")
        assert self.path is not None
        filenames = self.format_shard_names(self.path)
        assert len(filenames) == len(self.tensors)
        for name, tensors in zip(filenames, self.tensors):
            total = GGUFWriter.format_n_bytes_to_str(sum(ti.nbytes for ti in tensors.values()))
            logger.info(f"{name}: n_tensors = {len(tensors)}, total_size = {total}")
        if self.dry_run:
            logger.info("Dry run, not writing files")
            for name in filenames:
                print(name)  # noqa: T201
            sys.exit()
        return filenames

    def add_shard_kv_data(self) -> None:
        if len(self.tensors) == 1:
            return
        total_tensors = sum(len(t) for t in self.tensors)
        assert self.fout is not None
        total_splits = len(self.fout)
        self.kv_data.extend({} for _ in range(len(self.kv_data), total_splits))
        for i, kv_data in enumerate(self.kv_data):
            kv_data[KEY_SPLIT_NO] = GGUFValue(i, GGUFValueType.UINT16)
            kv_data[KEY_SPLIT_COUNT] = GGUFValue(total_splits, GGUFValueType.UINT16)
            kv_data[KEY_SPLIT_TENSORS_COUNT] = GGUFValue(total_tensors, GGUFValueType.INT32)

    def _order(self) -> str:
        return "<" if self.endianess == GGUFEndian.LITTLE else ">"

    def write_header_to_file(self, path: Path | None = None) -> None:
        if len(self.tensors) == 1 and (self.split_max_tensors != 0 or self.split_max_size != 0):
            logger.warning("Model fails split requirements, not splitting")
        self.open_output_file(path)
        if self.state is not WriterState.EMPTY:
            raise ValueError(f"Expected output file to be empty, got {self.state}")
        assert self.fout is not None
        assert len(self.fout) == len(self.tensors)
        assert len(self.kv_data) == 1
        self.add_shard_kv_data()
        preamble, _ = _native_encode(_byte_order(self.endianess), [], [])
        for fout, tensors, kv_data in zip(self.fout, self.tensors, self.kv_data):
            fout.write(bytes(preamble[:8]))
            fout.write(struct.pack(self._order() + "QQ", len(tensors), len(kv_data)))
            fout.flush()
        self.state = WriterState.HEADER

    def write_kv_data_to_file(self) -> None:
        if self.state is not WriterState.HEADER:
            raise ValueError(f"Expected output file to contain the header, got {self.state}")
        assert self.fout is not None
        for fout, kv_data in zip(self.fout, self.kv_data):
            fout.write(_encode_kv(kv_data, self.endianess))
        self.flush()
        self.state = WriterState.KV_DATA

    def write_ti_data_to_file(self) -> None:
        if self.state is not WriterState.KV_DATA:
            raise ValueError(f"Expected output file to contain KV data, got {self.state}")
        assert self.fout is not None
        for fout, tensors in zip(self.fout, self.tensors):
            fout.write(_encode_ti(tensors, self.data_alignment, self.endianess))
            fout.flush()
        self.state = WriterState.TI_DATA

    # keys

    def add_key_value(self, key: str, val: Any, vtype: GGUFValueType, sub_type: GGUFValueType | None = None) -> None:
        if any(key in kv_data for kv_data in self.kv_data):
            name = getattr(vtype, "name", vtype)
            logger.warning(f"Duplicated key name {key!r}, overwriting it with new value {val!r} of type {name}")
        self.kv_data[0][key] = GGUFValue(value=val, type=vtype, sub_type=sub_type)

    def add_uint8(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.UINT8)

    def add_int8(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.INT8)

    def add_uint16(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.UINT16)

    def add_int16(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.INT16)

    def add_uint32(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.UINT32)

    def add_int32(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.INT32)

    def add_float32(self, key: str, val: float) -> None:
        self.add_key_value(key, val, GGUFValueType.FLOAT32)

    def add_uint64(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.UINT64)

    def add_int64(self, key: str, val: int) -> None:
        self.add_key_value(key, val, GGUFValueType.INT64)

    def add_float64(self, key: str, val: float) -> None:
        self.add_key_value(key, val, GGUFValueType.FLOAT64)

    def add_bool(self, key: str, val: bool) -> None:
        self.add_key_value(key, val, GGUFValueType.BOOL)

    def add_string(self, key: str, val: str) -> None:
        if not val:
            return
        self.add_key_value(key, val, GGUFValueType.STRING)

    def add_array(self, key: str, val: Sequence[Any]) -> None:
        if len(val) == 0:
            return
        self.add_key_value(key, val, GGUFValueType.ARRAY)

    # tensors

    @staticmethod
    def ggml_pad(x: int, n: int) -> int:
        return ((x + n - 1) // n) * n

    def add_tensor_info(
        self,
        name: str,
        tensor_shape: Sequence[int],
        tensor_dtype: np.dtype,
        tensor_nbytes: int,
        raw_dtype: GGMLQuantizationType | None = None,
    ) -> None:
        if self.state is not WriterState.NO_FILE:
            raise ValueError(f"Expected output file to be not yet opened, got {self.state}")
        if any(name in tensors for tensors in self.tensors):
            raise ValueError(f"Duplicated tensor name {name!r}")
        if raw_dtype is None:
            dtype = _DTYPES.get(np.dtype(tensor_dtype).type) if _is_dtype(tensor_dtype) else None
            if dtype is None:
                raise ValueError("Only F16, F32, F64, I8, I16, I32, I64 tensors are supported for now")
        else:
            dtype = raw_dtype
            if tensor_dtype == np.uint8:
                tensor_shape = quant_shape_from_byte_shape(tensor_shape, raw_dtype)
        # Refused here, before any output exists: gguf-py would write a file whose tensor info
        # does not describe its data.
        block, size = GGML_QUANT_SIZES[dtype]
        elements = prod(tensor_shape)
        if elements % block != 0 or elements // block * size != tensor_nbytes:
            raise ValueError(
                f"tensor {name!r}: shape {tuple(int(d) for d in tensor_shape)} of type {dtype.name} "
                f"is {elements / block * size:g} bytes, its data is {tensor_nbytes}"
            )
        if len(self.tensors[-1]) > 0:
            if (self.split_max_tensors != 0 and len(self.tensors[-1]) >= self.split_max_tensors) or (
                self.split_max_size != 0
                and sum(ti.nbytes for ti in self.tensors[-1].values()) + tensor_nbytes > self.split_max_size
            ):
                self.tensors.append({})
        self.tensors[-1][name] = TensorInfo(shape=tensor_shape, dtype=dtype, nbytes=tensor_nbytes)

    def add_tensor(
        self,
        name: str,
        tensor: np.ndarray[Any, Any],
        raw_shape: Sequence[int] | None = None,
        raw_dtype: GGMLQuantizationType | None = None,
        tensor_endianess: GGUFEndian | None = None,
    ) -> None:
        if tensor_endianess is None:
            tensor_endianess = GGUFEndian.BIG if sys.byteorder == "big" else GGUFEndian.LITTLE
        if tensor_endianess != self.endianess:
            tensor = tensor.byteswap(inplace=False)
        if self.use_temp_file and self.temp_file is None:
            fp = tempfile.SpooledTemporaryFile(mode="w+b", max_size=256 * 1024 * 1024)
            fp.seek(0)
            self.temp_file = fp
        shape: Sequence[int] = raw_shape if raw_shape is not None else tensor.shape
        self.add_tensor_info(name, shape, tensor.dtype, tensor.nbytes, raw_dtype=raw_dtype)
        if self.temp_file is None:
            self.tensors[-1][name].tensor = tensor
            return
        tensor.tofile(self.temp_file)
        self.write_padding(self.temp_file, tensor.nbytes)

    def write_padding(self, fp: IO[bytes], n: int, align: int | None = None) -> None:
        pad = GGUFWriter.ggml_pad(n, align if align is not None else self.data_alignment) - n
        if pad != 0:
            fp.write(bytes(pad))

    def write_tensor_data(self, tensor: np.ndarray[Any, Any], tensor_endianess: GGUFEndian | None = None) -> None:
        if self.state is not WriterState.TI_DATA and self.state is not WriterState.WEIGHTS:
            raise ValueError(f"Expected output file to contain tensor info or weights, got {self.state}")
        assert self.fout is not None
        if tensor_endianess is None:
            tensor_endianess = GGUFEndian.BIG if sys.byteorder == "big" else GGUFEndian.LITTLE
        if tensor_endianess != self.endianess:
            tensor = tensor.byteswap(inplace=False)
        file_id = -1
        for i, tensors in enumerate(self.tensors):
            if len(tensors) > 0:
                file_id = i
                break
        fout = self.fout[file_id]
        first = next(iter(self.tensors[file_id]))
        ti = self.tensors[file_id].pop(first)
        if ti.nbytes != tensor.nbytes:
            raise ValueError(
                f"tensor {first!r}: {tensor.nbytes} bytes given, its info says {ti.nbytes}"
            )
        self.write_padding(fout, fout.tell())
        tensor.tofile(fout)
        self.write_padding(fout, tensor.nbytes)
        self.state = WriterState.WEIGHTS

    def write_tensors_to_file(self, *, progress: bool = False) -> None:
        self.write_ti_data_to_file()
        assert self.fout is not None
        for fout in self.fout:
            self.write_padding(fout, fout.tell())
        if self.temp_file is None:
            shard_bar = bar = None
            if progress:
                from tqdm import tqdm  # type: ignore[import-untyped]

                total_bytes = sum(ti.nbytes for t in self.tensors for ti in t.values())
                if len(self.fout) > 1:
                    shard_bar = tqdm(desc=f"Shard (0/{len(self.fout)})", total=None, unit="byte", unit_scale=True)
                bar = tqdm(desc="Writing", total=total_bytes, unit="byte", unit_scale=True)
            for i, (fout, tensors) in enumerate(zip(self.fout, self.tensors)):
                if shard_bar is not None:
                    shard_bar.set_description(f"Shard ({i + 1}/{len(self.fout)})")
                    total = sum(ti.nbytes for ti in tensors.values())
                    shard_bar.reset(total=(total if total > 0 else None))
                for name, ti in tensors.items():
                    if ti.tensor is None:
                        raise ValueError(f"tensor {name!r} has no data (its data is written only once)")
                    if ti.tensor.nbytes != ti.nbytes:
                        raise ValueError(f"tensor {name!r}: {ti.tensor.nbytes} bytes, its info says {ti.nbytes}")
                    ti.tensor.tofile(fout)
                    if shard_bar is not None:
                        shard_bar.update(ti.nbytes)
                    if bar is not None:
                        bar.update(ti.nbytes)
                    self.write_padding(fout, ti.nbytes)
                    ti.tensor = None
        else:
            self.temp_file.seek(0)
            shutil.copyfileobj(self.temp_file, self.fout[0 if not self.small_first_shard else 1])
            self.flush()
            self.temp_file.close()
        self.state = WriterState.WEIGHTS

    def flush(self) -> None:
        assert self.fout is not None
        for fout in self.fout:
            fout.flush()

    def close(self) -> None:
        if self.fout is not None:
            for fout in self.fout:
                fout.close()
            self.fout = None

    # the setters that are not one key of one type

    def add_custom_alignment(self, alignment: int) -> None:
        if alignment <= 0 or (alignment & (alignment - 1)) != 0:
            raise ValueError("Invalid alignment: must be a non-zero power of two")
        self.data_alignment = alignment
        self.add_uint32(KEY_ALIGNMENT, alignment)

    def remove_key(self, key: str) -> None:
        """Removes `key` from every shard's metadata."""
        for kv_data in self.kv_data:
            kv_data.pop(key, None)

    def _add_u64_array(self, key: str, values: Sequence[int]) -> None:
        self.add_key_value(key, list(values), GGUFValueType.ARRAY, GGUFValueType.UINT64)

    def add_tensor_extra_prec_a4(self, tensor_names: Sequence[str], values: Sequence[bool]) -> None:
        """The per-tensor `prec_a4` option: two parallel arrays, tensor names and flags."""
        if len(tensor_names) != len(values):
            raise ValueError("tensor_extra prec_a4 names and values must have the same length")
        self.add_array(Keys.General.TENSOR_EXTRA_NAME, list(tensor_names))
        self.add_array(Keys.General.TENSOR_EXTRA_PREC_A4, list(values))

    def add_indexer_types(self, value: Sequence[bool]) -> None:
        self.add_array(Keys.Attention.Indexer.TYPES.format(arch=self.arch), value)

    def add_sliding_window_pattern(self, value: int | Sequence[bool]) -> None:
        key = Keys.Attention.SLIDING_WINDOW_PATTERN.format(arch=self.arch)
        if isinstance(value, int):
            self.add_uint32(key, value)
        else:
            self.add_array(key, value)

    def add_dense_features_dims(self, dense: str, in_f: int, out_f: int) -> None:
        self.add_uint32(Keys.LLM.DENSE_FEAT_IN_SIZE.format(arch=self.arch, dense=dense), in_f)
        self.add_uint32(Keys.LLM.DENSE_FEAT_OUT_SIZE.format(arch=self.arch, dense=dense), out_f)

    def add_chat_template(self, value: str | Sequence[Mapping[str, str]] | None) -> None:
        """The chat template, or named templates (`[{"name": ..., "template": ...}]`, the one named
        "default" becoming the template); None removes it."""
        if value is None:
            self.remove_key(Keys.Tokenizer.CHAT_TEMPLATE)
            return
        if not isinstance(value, str):
            default = None
            names = set()
            allowed = ascii_letters + digits
            for choice in value:
                name = "".join(c if c in allowed else "_" for c in choice.get("name", ""))
                template = choice.get("template")
                if name and template is not None:
                    if name == "default":
                        default = template
                    else:
                        names.add(name)
                        self.add_string(Keys.Tokenizer.CHAT_TEMPLATE_N.format(name=name), template)
            if names:
                self.add_array(Keys.Tokenizer.CHAT_TEMPLATES, list(names))
            if default is None:
                return
            value = default
        self.add_string(Keys.Tokenizer.CHAT_TEMPLATE, value)

    # helpers gguf-py has

    def _pack(self, fmt: str, value: Any, skip_pack_prefix: bool = False) -> bytes:
        prefix = "" if skip_pack_prefix else self._order()
        return struct.pack(f"{prefix}{fmt}", value)

    def _pack_val(self, val: Any, vtype: GGUFValueType, add_vtype: bool, sub_type: GGUFValueType | None = None) -> bytes:
        """One value's bytes (after its type when `add_vtype`), as the file holds them."""
        kv = _encode_kv({"": GGUFValue(val, vtype, sub_type)}, self.endianess)
        body = kv[8 + 4 :]  # the empty key's length and the value type
        return (self._pack("I", vtype) if add_vtype else b"") + body

    @staticmethod
    def format_n_bytes_to_str(num: int) -> str:
        if num == 0:
            return "negligible - metadata only"
        fnum = float(num)
        for unit in ("", "K", "M", "G"):
            if abs(fnum) < 1000.0:
                return f"{fnum:3.1f}{unit}"
            fnum /= 1000.0
        return f"{fnum:.1f}T - over 1TB, split recommended"


_DTYPES: dict[type, GGMLQuantizationType] = {
    np.float16: GGMLQuantizationType.F16,
    np.float32: GGMLQuantizationType.F32,
    np.float64: GGMLQuantizationType.F64,
    np.int8: GGMLQuantizationType.I8,
    np.int16: GGMLQuantizationType.I16,
    np.int32: GGMLQuantizationType.I32,
    np.int64: GGMLQuantizationType.I64,
}


def _is_dtype(value: Any) -> bool:
    try:
        np.dtype(value)
    except TypeError:
        return False
    return True


def _setter(row: tuple) -> Callable[..., None]:
    """A typed setter from its generated row (see scripts/gen_compat_tables.py)."""
    name, params, adder, key, formats, (param, how) = row
    signature = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in ("self", *params)]
    )

    def setter(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs).arguments
        self = bound["self"]
        fields = {k: self.arch if source == "arch" else bound[source] for k, source in formats.items()}
        value = self.arch if param == "arch" else bound[param]
        if how == "value":
            value = value.value
        elif how == "list":
            value = list(value)
        name_ = key.format(**fields) if formats else key
        if adder == "uint32_or_array":
            if isinstance(value, int):
                self.add_uint32(name_, value)
            else:
                self.add_array(name_, value)
        else:
            getattr(self, adder)(name_, value)

    setter.__name__ = name
    setter.__qualname__ = f"GGUFWriter.{name}"
    setter.__doc__ = f"Sets `{key}`."
    setter.__signature__ = signature  # type: ignore[attr-defined]
    return setter


def _install_setters() -> None:
    for row in _SETTERS:
        if row[0] not in GGUFWriter.__dict__:
            setattr(GGUFWriter, row[0], _setter(row))


_install_setters()
