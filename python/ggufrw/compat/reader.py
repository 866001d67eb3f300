"""`GGUFReader`, `ReaderField` and `ReaderTensor` with gguf-py 0.19's attributes and behaviour.

The file is decoded and validated by ggufrw's native decoder first; the numpy views gguf-py users
expect (`ReaderField.parts`, `ReaderTensor.data`, ...) are then made from the offsets it reports,
over an `np.memmap` of the file (mode `'r'` by default, `'r+'` to write through the views as
gguf_set_metadata does, `'c'` for copy-on-write).

A field's `parts` and `data` are built the first time they are read; `contents()` is answered from
the decoded values without building them (except once `parts` exist in a writable mode, when the
views may have been written through and are read instead).

Where this reader differs from gguf-py 0.19 on purpose:

- Q8_1 tensors are sized as ggml sizes them (36 bytes a block, not gguf-py's 40), so `n_bytes`
  and `data` cover the tensor's bytes and no more.
- Types gguf-py does not know (Q2_0) are read.
- Malformed files raise an exception (a `ValueError`, `DecodeError` here) instead of hanging or
  building absurd views: the native decoder validates every length and offset before any view is
  made. Files gguf-py misreads are refused too: a string running past the end of the file, tensor
  offsets that wrap around, arrays nested past the native decoder's depth limit.
- Files gguf-py refuses, it refuses too: version 1 files, a bad `general.alignment`, duplicate keys
  (`KeyError`) and duplicate tensor names (`ValueError`).
"""

from __future__ import annotations

import os
import re
import sys
from collections import OrderedDict
from typing import Any, Iterator, Literal, NamedTuple, Union

import numpy as np
import numpy.typing as npt

from .._native import File as _NativeFile  # type: ignore[import-not-found]
from .. import _native  # type: ignore[attr-defined]
from .constants import (
    GGML_MAX_DIMS,
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    READER_SUPPORTED_VERSIONS,
    GGMLQuantizationType,
    GGUFEndian,
    GGUFValueType,
)
from .quants import quant_shape_to_byte_shape

__all__ = ["GGUFReader", "ReaderField", "ReaderTensor", "DecodeError"]

try:

    class DecodeError(_native.DecodeError, ValueError):  # type: ignore[misc]
        """A file the native decoder refuses (also a `ValueError`, as gguf-py raises)."""

except TypeError:  # pragma: no cover - the native exception's layout does not allow it

    class DecodeError(ValueError):  # type: ignore[no-redef]
        """A file the native decoder refuses (a `ValueError`, as gguf-py raises)."""


_SCALAR_NP: dict[int, type[np.generic]] = {
    GGUFValueType.UINT8: np.uint8,
    GGUFValueType.INT8: np.int8,
    GGUFValueType.UINT16: np.uint16,
    GGUFValueType.INT16: np.int16,
    GGUFValueType.UINT32: np.uint32,
    GGUFValueType.INT32: np.int32,
    GGUFValueType.FLOAT32: np.float32,
    GGUFValueType.UINT64: np.uint64,
    GGUFValueType.INT64: np.int64,
    GGUFValueType.FLOAT64: np.float64,
    GGUFValueType.BOOL: np.bool_,
}

# Element types of the tensors gguf-py gives typed views of; the others are bytes.
_TENSOR_NP: dict[int, type[np.generic]] = {
    GGMLQuantizationType.F16: np.float16,
    GGMLQuantizationType.F32: np.float32,
    GGMLQuantizationType.F64: np.float64,
    GGMLQuantizationType.I8: np.int8,
    GGMLQuantizationType.I16: np.int16,
    GGMLQuantizationType.I32: np.int32,
    GGMLQuantizationType.I64: np.int64,
}

_VALUE_TYPES = list(GGUFValueType)


def _text(raw: Any) -> str:
    """A decoded string as `str`, raising `UnicodeDecodeError` for non-UTF-8 bytes (as gguf-py)."""
    if isinstance(raw, str):
        return raw
    return str(bytes(raw), encoding="utf-8")


def _part_text(part: npt.NDArray[Any]) -> str:
    return str(part.tobytes(), encoding="utf-8")


class _Lazy:
    """How to build one field's parts: what the native decoder said about it."""

    __slots__ = ("reader", "kind", "index", "value_type", "element_type", "count", "value", "extra")

    def __init__(
        self,
        reader: "GGUFReader",
        kind: str,
        index: int,
        value_type: int,
        element_type: int | None,
        count: int | None,
        value: Any,
        extra: Any = None,
    ) -> None:
        self.reader = reader
        self.kind = kind  # 'kv' | 'tensor'
        self.index = index
        self.value_type = value_type
        self.element_type = element_type
        self.count = count
        self.value = value
        self.extra = extra


class ReaderField:
    """One key/value pair (or tensor info, or header count) of a GGUF file, as gguf-py has it.

    `parts` are numpy views of every piece of the field in the file (key length, key bytes, value
    type, value pieces); `data` are the indices of the parts that hold the value; `types` are the
    value's type and, for arrays, the element types.
    """

    __slots__ = ("offset", "name", "types", "_parts", "_data", "_lazy")
    _fields = ("offset", "name", "parts", "data", "types")

    def __init__(
        self,
        offset: int,
        name: str,
        parts: list[npt.NDArray[Any]] | None = None,
        data: list[int] | None = None,
        types: list[GGUFValueType] | None = None,
    ) -> None:
        self.offset = offset
        self.name = name
        self._parts = [] if parts is None else parts
        self._data = [-1] if data is None else data
        self.types = [] if types is None else types
        self._lazy: _Lazy | None = None

    @classmethod
    def _deferred(cls, offset: int, name: str, types: list[GGUFValueType], lazy: _Lazy) -> "ReaderField":
        field = cls(offset, name, types=types)
        # None: built from `lazy` on first access (the properties below)
        field._parts = None
        field._data = None
        field._lazy = lazy
        return field

    # parts and data, built on first access

    @property
    def parts(self) -> list[npt.NDArray[Any]]:
        if self._parts is None:
            assert self._lazy is not None
            self._parts = self._lazy.reader._build_parts(self, self._lazy)
        return self._parts

    @parts.setter
    def parts(self, value: list[npt.NDArray[Any]]) -> None:
        self._parts = value

    @property
    def data(self) -> list[int]:
        if self._data is None:
            assert self._lazy is not None
            self._data = self._lazy.reader._build_data(self, self._lazy)
        return self._data

    @data.setter
    def data(self, value: list[int]) -> None:
        self._data = value

    # the value

    def contents(self, index_or_slice: int | slice = slice(None)) -> Any:
        """The value as Python objects: a scalar, a `str`, or a (flattened) list for arrays.

        For arrays, `index_or_slice` picks elements (an int gives one element, a slice a list).
        """
        lazy = self._lazy
        if lazy is not None and lazy.kind == "kv" and lazy.value is not _NESTED:
            if self._parts is None or lazy.reader._read_only:
                fast = _fast_contents(self, lazy, index_or_slice)
                if fast is not _NO_FAST:
                    return fast
        return _contents_from_parts(self, index_or_slice)

    # NamedTuple-like behaviour (gguf-py's ReaderField is a NamedTuple)

    def _astuple(self) -> tuple[Any, ...]:
        return (self.offset, self.name, self.parts, self.data, self.types)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._astuple())

    def __len__(self) -> int:
        return 5

    def __getitem__(self, index: Any) -> Any:
        return self._astuple()[index]

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self._astuple()))

    def _replace(self, **changes: Any) -> "ReaderField":
        values = self._asdict()
        values.update(changes)
        return ReaderField(**values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReaderField):
            return self._astuple() == other._astuple()
        if isinstance(other, tuple):
            return self._astuple() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ReaderField(offset={self.offset!r}, name={self.name!r}, types={self.types!r})"


class _Marker:
    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


_NESTED = _Marker("<nested array>")
_NO_FAST = _Marker("<no fast path>")


def _fast_contents(field: ReaderField, lazy: _Lazy, index_or_slice: Any) -> Any:
    vt = lazy.value_type
    value = lazy.value
    if vt == GGUFValueType.STRING:
        return _text(value)
    if vt != GGUFValueType.ARRAY:
        return value
    if not isinstance(index_or_slice, (int, slice)):
        return _NO_FAST
    if lazy.element_type == GGUFValueType.STRING and lazy.count:
        picked = value[index_or_slice]
        if isinstance(index_or_slice, int):
            return _text(picked)
        if lazy.extra is None:  # whether every element is str (none was not UTF-8)
            lazy.extra = bytes not in set(map(type, value))
        if lazy.extra:
            return picked
        return [_text(v) for v in picked]
    return value[index_or_slice]


def _contents_from_parts(field: ReaderField, index_or_slice: Any) -> Any:
    """gguf-py's reading of a field's value from its parts."""
    types = field.types
    if not types:
        return None
    parts = field.parts
    main = types[0]
    if main == GGUFValueType.ARRAY:
        sub = types[-1]
        picked = field.data[index_or_slice]
        if sub == GGUFValueType.STRING:
            if isinstance(index_or_slice, int):
                return _part_text(parts[picked])  # type: ignore[index]
            return [_part_text(parts[i]) for i in picked]  # type: ignore[union-attr]
        if isinstance(index_or_slice, int):
            return parts[picked].tolist()[0]  # type: ignore[index]
        return [v for i in picked for v in parts[i].tolist()]  # type: ignore[union-attr]
    if main == GGUFValueType.STRING:
        return _part_text(parts[-1])
    return parts[-1].tolist()[0]


class ReaderTensor(NamedTuple):
    name: str
    tensor_type: GGMLQuantizationType
    shape: npt.NDArray[np.uint64]
    n_elements: int
    n_bytes: int
    data_offset: int
    data: npt.NDArray[Any]
    field: ReaderField


class GGUFReader:
    """A GGUF file's fields and tensors as gguf-py's `GGUFReader` gives them."""

    # I: the file's byte order is the host's; S: swapped
    byte_order: Literal["I", "S"] = "I"
    alignment: int = GGUF_DEFAULT_ALIGNMENT
    data_offset: int

    gguf_scalar_to_np: dict[GGUFValueType, type[np.generic]] = {
        GGUFValueType(k): v for k, v in _SCALAR_NP.items()
    }

    def __init__(self, path: os.PathLike[str] | str, mode: Literal["r", "r+", "c"] = "r") -> None:
        self.data = np.memmap(path, mode=mode)
        self._read_only = mode == "r"
        self._buf = self.data.view(np.ndarray)
        self._check_preamble()
        try:
            native = _NativeFile.open(os.fspath(path))
        except _native.Error as e:
            raise _decode_error(e) from e
        self._native = native
        if native.version not in READER_SUPPORTED_VERSIONS:
            raise ValueError(
                f"Sorry, file appears to be version {native.version} which we cannot handle"
            )
        swapped = native.byte_order != sys.byteorder
        if swapped:
            self.byte_order = "S"
        host, other = (
            (GGUFEndian.LITTLE, GGUFEndian.BIG)
            if sys.byteorder == "little"
            else (GGUFEndian.BIG, GGUFEndian.LITTLE)
        )
        self.endianess = other if swapped else host
        self._u32 = np.dtype(np.uint32).newbyteorder(self.byte_order)
        self._u64 = np.dtype(np.uint64).newbyteorder(self.byte_order)

        self.fields: OrderedDict[str, ReaderField] = OrderedDict()
        self.tensors: list[ReaderTensor] = []

        version = self._get(4, np.uint32)
        self._push_field(ReaderField(4, "GGUF.version", [version], [0], [GGUFValueType.UINT32]))
        counts = self._get(8, np.uint64, 2)
        self._push_field(ReaderField(8, "GGUF.tensor_count", [counts[:1]], [0], [GGUFValueType.UINT64]))
        self._push_field(ReaderField(16, "GGUF.kv_count", [counts[1:]], [0], [GGUFValueType.UINT64]))

        try:
            metadata = native.metadata()
            layout = native.kv_layout()
            tensor_rows = native.tensors()
        except _native.Error as e:
            raise _decode_error(e) from e
        self._build_fields(metadata, layout)

        align_field = self.fields.get("general.alignment")
        if align_field is not None:
            if align_field.types != [GGUFValueType.UINT32]:
                raise ValueError("Bad type for general.alignment field")
            self.alignment = align_field.parts[-1][0]
            if self.alignment == 0 or (self.alignment & (self.alignment - 1)) != 0:
                raise ValueError("Invalid alignment: must be a non-zero power of two")
        self.data_offset = native.data_offset
        self._build_tensors(tensor_rows)

    # gguf-py's accessors

    def get_field(self, key: str) -> Union[ReaderField, None]:
        return self.fields.get(key, None)

    def get_tensor(self, idx: int) -> ReaderTensor:
        return self.tensors[idx]

    def _get(
        self,
        offset: int,
        dtype: npt.DTypeLike,
        count: int = 1,
        override_order: None | Literal["I", "S", "<"] = None,
    ) -> npt.NDArray[Any]:
        """`count` items of `dtype` at `offset`, in the file's byte order (a view of the file)."""
        count = int(count)
        dt = np.dtype(dtype)
        end = offset + dt.itemsize * count
        arr = self.data[offset:end].view(dtype=dt)[:count]
        order = self.byte_order if override_order is None else override_order
        return arr.view(arr.dtype.newbyteorder(order))

    def _get_str(self, offset: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint8]]:
        length = self._get(offset, np.uint64)
        return length, self._get(offset + 8, np.uint8, length[0])

    def _push_field(self, field: ReaderField, skip_sum: bool = False) -> int:
        if field.name in self.fields:
            raise KeyError(f"Duplicate {field.name} already in list at offset {field.offset}")
        self.fields[field.name] = field
        return 0 if skip_sum else sum(int(part.nbytes) for part in field.parts)

    # building

    def _check_preamble(self) -> None:
        raw = self._buf
        if raw.size >= 4 and int.from_bytes(raw[:4].tobytes(), "little") != GGUF_MAGIC:
            raise ValueError("GGUF magic invalid")
        if raw.size < 8:
            return  # too short: the native decoder says where it ends
        version = int.from_bytes(raw[4:8].tobytes(), sys.byteorder)
        if version & 0xFFFF == 0:
            version = int.from_bytes(raw[4:8].tobytes(), "big" if sys.byteorder == "little" else "little")
        if version not in READER_SUPPORTED_VERSIONS:
            raise ValueError(f"Sorry, file appears to be version {version} which we cannot handle")

    def _build_fields(self, metadata: list[tuple[Any, ...]], layout: list[tuple[Any, ...]]) -> None:
        for index, ((key, vt, value, et), (offset, _key_len, _vt, _et, count)) in enumerate(
            zip(metadata, layout)
        ):
            name = _text(key)
            if vt == GGUFValueType.ARRAY:
                if et == GGUFValueType.ARRAY:
                    lazy = _Lazy(self, "kv", index, vt, et, count, _NESTED)
                    types = self._nested_types(offset)
                else:
                    lazy = _Lazy(self, "kv", index, vt, et, count, value)
                    types = [GGUFValueType.ARRAY, _VALUE_TYPES[et]] if count else [GGUFValueType.ARRAY]
            else:
                lazy = _Lazy(self, "kv", index, vt, None, None, value)
                types = [_VALUE_TYPES[vt]]
            self._push_field(ReaderField._deferred(offset, name, types, lazy), skip_sum=True)

    def _key_end(self, offset: int) -> int:
        """Offset of the value type that follows the key whose length field is at `offset`."""
        key_len = int(self._buf[offset : offset + 8].view(self._u64)[0])
        return offset + 8 + key_len

    def _nested_types(self, offset: int) -> list[GGUFValueType]:
        vo = self._key_end(offset)
        _size, _parts, _data, types = self._parse_value(vo + 4, GGUFValueType.ARRAY, want_parts=False)
        return types

    def _view(self, offset: int, dtype: np.dtype[Any], count: int) -> npt.NDArray[Any]:
        return np.ndarray((count,), dtype, self._buf, offset)

    def _parse_value(
        self, offset: int, vt: int, want_parts: bool = True
    ) -> tuple[int, list[npt.NDArray[Any]], list[int], list[GGUFValueType]]:
        """gguf-py's layout of one value at `offset` (the file is already validated)."""
        gtype = _VALUE_TYPES[vt]
        if gtype == GGUFValueType.STRING:
            length = self._view(offset, self._u64, 1)
            n = int(length[0])
            parts = [length, self._view(offset + 8, np.dtype(np.uint8), n)] if want_parts else []
            return 8 + n, parts, [1], [gtype]
        np_type = _SCALAR_NP.get(gtype)
        if np_type is not None:
            dt = np.dtype(np_type).newbyteorder(self.byte_order)
            parts = [self._view(offset, dt, 1)] if want_parts else []
            return dt.itemsize, parts, [0], [gtype]
        # an array
        itype = self._view(offset, self._u32, 1)
        alen = self._view(offset + 4, self._u64, 1)
        parts = [itype, alen]
        data: list[int] = []
        types = [gtype]
        pos = offset + 12
        for i in range(int(alen[0])):
            size, sub_parts, sub_data, sub_types = self._parse_value(pos, int(itype[0]), want_parts)
            if i == 0:
                types += sub_types
                if not want_parts:
                    break
            base = len(parts)
            parts += sub_parts
            data += [base + j for j in sub_data]
            pos += size
        return pos - offset, parts, data, types

    def _build_parts(self, field: ReaderField, lazy: _Lazy) -> list[npt.NDArray[Any]]:
        if lazy.kind == "tensor":
            return self._tensor_parts(field, lazy)
        offset = field.offset
        key_len = self._view(offset, self._u64, 1)
        n = int(key_len[0])
        parts: list[npt.NDArray[Any]] = [
            key_len,
            self._view(offset + 8, np.dtype(np.uint8), n),
            self._view(offset + 8 + n, self._u32, 1),
        ]
        vo = offset + 12 + n
        vt = lazy.value_type
        if vt != GGUFValueType.ARRAY or lazy.value is _NESTED:
            _size, value_parts, _data, _types = self._parse_value(vo, vt)
            parts += value_parts
            return parts
        et = lazy.element_type
        count = int(lazy.count or 0)
        parts.append(self._view(vo, self._u32, 1))
        parts.append(self._view(vo + 4, self._u64, 1))
        start = vo + 12
        if et == GGUFValueType.STRING:
            parts += self._string_parts(lazy.index, count)
        else:
            dt = np.dtype(_SCALAR_NP[et]).newbyteorder(self.byte_order)  # type: ignore[index]
            whole = self._view(start, dt, count)
            parts += [whole[i : i + 1] for i in range(count)]
        return parts

    def _string_parts(self, kv_index: int, count: int) -> list[npt.NDArray[Any]]:
        if count == 0:
            return []
        offsets = np.frombuffer(self._native.string_offsets(kv_index), dtype=np.uint64)
        gather = offsets.astype(np.intp)[:, None] + np.arange(8, dtype=np.intp)
        lengths = self._buf[gather].view(self._u64).reshape(-1).tolist()
        u64, u8, buf = self._u64, np.dtype(np.uint8), self._buf
        nd = np.ndarray
        parts: list[npt.NDArray[Any]] = []
        append = parts.append
        for off, n in zip(offsets.tolist(), lengths):
            append(nd((1,), u64, buf, off))
            append(nd((n,), u8, buf, off + 8))
        return parts

    def _build_data(self, field: ReaderField, lazy: _Lazy) -> list[int]:
        if lazy.kind == "tensor":
            return [1, 3, 4, 5]
        vt = lazy.value_type
        if vt == GGUFValueType.STRING:
            return [4]
        if vt != GGUFValueType.ARRAY:
            return [3]
        if lazy.value is _NESTED:
            vo = self._key_end(field.offset) + 4
            _size, _parts, data, _types = self._parse_value(vo, vt)
            return [3 + i for i in data]
        count = int(lazy.count or 0)
        if lazy.element_type == GGUFValueType.STRING:
            return list(range(6, 6 + 2 * count, 2))
        return list(range(5, 5 + count))

    def _tensor_parts(self, field: ReaderField, lazy: _Lazy) -> list[npt.NDArray[Any]]:
        offset = field.offset
        name_len = self._view(offset, self._u64, 1)
        n = int(name_len[0])
        name = self._view(offset + 8, np.dtype(np.uint8), n)
        pos = offset + 8 + n
        n_dims = self._view(pos, self._u32, 1)
        dims = lazy.value  # the tensor's `shape`, made when the tensor was
        pos += 4 + 8 * int(n_dims[0])
        raw_type = self._view(pos, self._u32, 1)
        rel = self._view(pos + 4, self._u64, 1)
        return [name_len, name, n_dims, dims, raw_type, rel]

    def _build_tensors(self, rows: list[tuple[Any, ...]]) -> None:
        tensors: list[ReaderTensor] = []
        names: set[str] = set()
        for index, (raw_name, info_offset, dims, type_id, rel_offset, _abs, _nbytes) in enumerate(rows):
            name = _text(raw_name)
            if name in names:
                raise ValueError(f"Found duplicated tensor with name {name}")
            names.add(name)
            n_dims = len(dims)
            name_bytes = int(self._buf[info_offset : info_offset + 8].view(self._u64)[0])
            shape = self._view(info_offset + 8 + name_bytes + 4, self._u64, n_dims)
            ggml_type = GGMLQuantizationType(type_id)
            n_elems = 1
            for d in dims:
                n_elems *= int(d)
            block_size, type_size = GGML_QUANT_SIZES[ggml_type]
            n_bytes = n_elems * type_size // block_size
            data_offs = int(self.data_offset + rel_offset)
            np_dims: tuple[int, ...] = tuple(reversed([int(d) for d in dims]))
            item = _TENSOR_NP.get(ggml_type)
            if item is None:
                item_type: np.dtype[Any] = np.dtype(np.uint8)
                item_count = n_bytes
                np_dims = quant_shape_to_byte_shape(np_dims, ggml_type)
            else:
                item_type = np.dtype(item).newbyteorder(self.byte_order)
                item_count = n_elems
            try:
                start, length = self._native.tensor_range(index)
            except _native.Error as e:
                raise _decode_error(e) from e
            if start != data_offs or length < item_count * item_type.itemsize:
                raise DecodeError(f"tensor {name!r}: data not where its info says")
            data = self._view(data_offs, item_type, item_count).reshape(np_dims)
            lazy = _Lazy(self, "tensor", index, 0, None, None, shape)
            field = ReaderField._deferred(int(info_offset), name, [], lazy)
            tensors.append(
                ReaderTensor(
                    name=name,
                    tensor_type=ggml_type,
                    shape=shape,
                    n_elements=n_elems,
                    n_bytes=n_bytes,
                    data_offset=data_offs,
                    data=data,
                    field=field,
                )
            )
        self.tensors = tensors


def _decode_error(e: BaseException) -> DecodeError:
    text = str(e)
    if getattr(e, "kind", None) == "too_many_dimensions":
        # gguf-py's words too, which its tests and their callers match
        count = re.search(r"(\d+) dimensions", text)
        text += f" (tensor dimensions count {count[1] if count else '?'} exceeds GGML_MAX_DIMS ({GGML_MAX_DIMS}))"
    err = DecodeError(text)
    for attr in ("kind", "path", "offset", "file"):
        try:
            setattr(err, attr, getattr(e, attr, None))
        except AttributeError:
            pass
    return err
