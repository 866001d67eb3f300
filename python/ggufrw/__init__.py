"""Read, write, check and quantize GGUF model files exactly.

GGUF is the model-file container of ggml and llama.cpp. This package is the Python face of
ggufrw, a Rust library: every file it reads is written back byte for byte, every file it
refuses raises :class:`DecodeError` naming the field and the byte offset, and nothing it is
given hangs or crashes the interpreter.

>>> import ggufrw
>>> f = ggufrw.open("model.gguf")                        # doctest: +SKIP
>>> f.metadata["general.architecture"]                   # doctest: +SKIP
'llama'
>>> w = f.tensor("token_embd.weight").dequantize()       # doctest: +SKIP

numpy is optional: without it tensor data comes as :class:`memoryview`; with it as arrays
that share the file's memory map (no copy). The gguf-py compatible API is
:mod:`ggufrw.compat`.
"""

from __future__ import annotations

import mmap as _mmap
import os as _os
import tempfile as _tempfile
from collections.abc import Iterator, Mapping, Sequence
from enum import IntEnum
from typing import Any, NamedTuple, Optional, Union

from . import _native
from ._native import DecodeError, Error, __version__

try:  # numpy is optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the no-numpy test in a subprocess
    _np = None

__all__ = [
    "DecodeError",
    "Error",
    "File",
    "Field",
    "Finding",
    "GGMLType",
    "Metadata",
    "Tensor",
    "Value",
    "ValueType",
    "Builder",
    "open",
    "dequantize",
    "quantize",
    "edit",
    "split",
    "merge",
    "hash",
    "convert_hf",
    "convert_lora",
    "export_lora",
    "export_hf",
    "Export",
    "Conversion",
    "LoraConversion",
    "Merge",
    "type_info",
    "__version__",
]

PathLike = Union[str, "_os.PathLike[str]"]


class ValueType(IntEnum):
    """The type of a metadata value, as GGUF numbers them."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


_TYPES = _native.types()

#: The ggml tensor types ggufrw knows, by ggml's numbers and names (``GGMLType.Q4_K``).
GGMLType = IntEnum("GGMLType", [(name.upper(), tid) for tid, name, *_ in _TYPES])  # type: ignore[misc]
GGMLType.__doc__ = "A ggml tensor type, as ggml numbers and names them."


class TypeInfo(NamedTuple):
    """Block arithmetic of a ggml type."""

    type: "GGMLType"
    block_size: int
    type_size: int
    dequantizes: bool
    quantizes: bool


_BY_ID = {int(m): m for m in GGMLType}  # type: ignore[var-annotated]

_TYPE_INFO = {
    tid: TypeInfo(GGMLType(tid), bs, ts, deq, q) for tid, _name, bs, ts, deq, q in _TYPES
}


def type_info(t: Union[int, str, "GGMLType"]) -> TypeInfo:
    """Block size, bytes per block and abilities of a ggml type (by number, name or member)."""
    return _TYPE_INFO[_ggml_type(t)]


def _ggml_type(t: Union[int, str, "GGMLType"]) -> int:
    if isinstance(t, str):
        try:
            return int(GGMLType[t.upper()])
        except KeyError:
            raise ValueError(f"{t!r} is not a ggml type ggufrw knows") from None
    if int(t) not in _TYPE_INFO:
        raise ValueError(f"{int(t)} is not a ggml type ggufrw knows")
    return int(t)


class Value:
    """A metadata value with its GGUF type stated, where inference would pick another
    (``Value(7, ValueType.UINT64)``, ``Value([1, 2], ValueType.ARRAY, ValueType.UINT8)``).
    """

    __slots__ = ("value", "type", "element_type")

    def __init__(self, value: Any, type: ValueType, element_type: Optional[ValueType] = None):
        self.value = value
        self.type = ValueType(type)
        if self.type == ValueType.ARRAY and element_type is None:
            element_type = _infer_element(value)
        self.element_type = None if element_type is None else ValueType(element_type)

    def __repr__(self) -> str:
        if self.element_type is not None:
            return f"Value({self.value!r}, {self.type.name}, {self.element_type.name})"
        return f"Value({self.value!r}, {self.type.name})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and (self.value, self.type, self.element_type) == (
            other.value,
            other.type,
            other.element_type,
        )


def _infer_scalar(v: Any) -> ValueType:
    # As gguf-py's GGUFValueType.get_type: bool, int32, float32, string; ints that do not fit
    # int32 widen rather than fail.
    if isinstance(v, bool):
        return ValueType.BOOL
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return ValueType.INT32
        return ValueType.INT64 if v < 2**63 else ValueType.UINT64
    if isinstance(v, float):
        return ValueType.FLOAT32
    if isinstance(v, (str, bytes)):
        return ValueType.STRING
    if isinstance(v, (list, tuple)):
        return ValueType.ARRAY
    if _np is not None and isinstance(v, _np.generic):
        return _infer_scalar(v.item())
    raise TypeError(f"no GGUF value type for {type(v).__name__}: give one with ggufrw.Value")


def _infer_element(values: Any) -> ValueType:
    items = list(values)
    if not items:
        raise TypeError("the element type of an empty array cannot be inferred: give it")
    types = {_infer_scalar(x) for x in items}
    if types <= {ValueType.INT32, ValueType.INT64, ValueType.UINT64}:
        return max(types)  # the widest the ints need
    if len(types) > 1:
        raise TypeError(f"an array's elements must be of one type, not {sorted(t.name for t in types)}")
    return types.pop()


def _wire(value: Any) -> tuple[int, Any, Optional[int]]:
    """A Python value as (value_type, value, element_type) for the native layer."""
    if isinstance(value, Value):
        ty, v, el = value.type, value.value, value.element_type
    else:
        ty = _infer_scalar(value)
        v, el = value, (_infer_element(value) if ty == ValueType.ARRAY else None)
    if ty == ValueType.ARRAY:
        v = _wire_array(v, el)
        return int(ty), v, int(el)  # type: ignore[arg-type]
    if _np is not None and isinstance(v, _np.generic):
        v = v.item()
    return int(ty), v, None


def _wire_array(values: Any, element: Optional[ValueType]) -> list:
    if _np is not None and isinstance(values, _np.ndarray):
        values = values.tolist()
    if element == ValueType.ARRAY:
        out = []
        for inner in values:
            if isinstance(inner, Value):
                out.append((int(inner.element_type), _wire_array(inner.value, inner.element_type)))
            else:
                el = _infer_element(inner)
                out.append((int(el), _wire_array(inner, el)))
        return out
    return list(values)


class Field(NamedTuple):
    """One metadata pair: key, value type, value and (for arrays) element type."""

    key: Union[str, bytes]
    type: ValueType
    value: Any
    element_type: Optional[ValueType]


class Finding(NamedTuple):
    """Something a profile says about a file."""

    severity: str
    category: str
    path: str
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path} @ 0x{self.offset:x}: {self.severity}: {self.message}"


class Metadata(Mapping):
    """The metadata as an ordered, read-only mapping of key to Python value.

    A key that occurs twice maps to its first value (as ggml reads it); :attr:`fields` has
    every pair.
    """

    def __init__(self, fields: list[Field]):
        self._fields = fields
        self._index: dict = {}
        for i, f in enumerate(fields):
            self._index.setdefault(f.key, i)

    @property
    def fields(self) -> list[Field]:
        """Every pair, in file order, with its value type."""
        return self._fields

    def field(self, key: Union[str, bytes]) -> Field:
        """The pair with this key."""
        return self._fields[self._index[key]]

    def type(self, key: Union[str, bytes]) -> ValueType:
        """The value type of this key's value."""
        return self.field(key).type

    def __getitem__(self, key: Union[str, bytes]) -> Any:
        return self._fields[self._index[key]].value

    def __iter__(self) -> Iterator:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"Metadata({len(self._fields)} pairs)"


# numpy dtypes of the types whose elements are plain numbers.
_PLAIN = {"F32": "f4", "F16": "f2", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4", "I64": "i8"}


class Tensor:
    """A tensor's info, and its data where the file's bytes are at hand."""

    __slots__ = ("_file", "index", "name", "shape", "type", "data_offset", "offset", "size", "info_offset")

    def __init__(self, file: "File", index: int, row: tuple):
        name, info_offset, dims, tid, rel, absolute, nbytes = row
        self._file = file
        #: Position among the file's tensors.
        self.index = index
        #: Its name (``bytes`` if the file's is not UTF-8).
        self.name = name
        #: Dimensions in GGUF order (``ne0`` first, the contiguous one).
        self.shape = tuple(dims)
        #: Its ggml type (a plain int for a type ggufrw does not know).
        self.type = _BY_ID.get(tid, tid)
        #: Offset of its data in the data section.
        self.data_offset = rel
        #: Offset of its data in the file.
        self.offset = absolute
        #: Bytes of its data (None for a type whose size is unknown).
        self.size = nbytes
        #: Where its info starts in the header.
        self.info_offset = info_offset

    @property
    def np_shape(self) -> tuple:
        """Dimensions in NumPy order (the contiguous one last)."""
        return tuple(reversed(self.shape))

    @property
    def type_name(self) -> str:
        """Its type's name (``Q4_K``)."""
        return self.type.name if isinstance(self.type, GGMLType) else f"type {self.type}"

    @property
    def n_elements(self) -> int:
        """Elements it holds."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def bytes(self) -> memoryview:
        """Its data as it is in the file, without a copy (read-only)."""
        return self._file._data(self.index)

    @property
    def data(self) -> Any:
        """Its data without a copy: a NumPy array when numpy is installed (typed for plain
        types, ``uint8`` rows of blocks for quantized ones, in the file's byte order), else a
        :class:`memoryview` of the bytes."""
        raw = self.bytes()
        if _np is None:
            return raw
        order = ">" if self._file.byte_order == "big" else "<"
        plain = _PLAIN.get(self.type_name)
        if plain is not None:
            return _np.frombuffer(raw, dtype=_np.dtype(order + plain)).reshape(self.np_shape)
        info = _TYPE_INFO.get(int(self.type))
        flat = _np.frombuffer(raw, dtype=_np.uint8)
        if info is None or not self.shape or self.shape[0] % info.block_size:
            return flat
        row = self.shape[0] // info.block_size * info.type_size
        return flat.reshape(self.np_shape[:-1] + (row,))

    def dequantize(self, threads: int = 0) -> Any:
        """Its values as float32, bit-exact with ggml's ``to_float``, computed with the
        interpreter released on ``threads`` threads (0: all). A NumPy array of
        :attr:`np_shape` with numpy, else a ``memoryview`` of format ``'f'``."""
        out = self._file._native.dequantize(self.index, threads)
        return _floats(out, self.np_shape)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.type_name}, shape={self.shape})"


def _floats(buf: bytearray, shape: Sequence[int]) -> Any:
    if _np is not None:
        return _np.frombuffer(buf, dtype=_np.float32).reshape(tuple(shape))
    return memoryview(buf).cast("f")


class File:
    """An open GGUF file. Use :func:`open`."""

    def __init__(self, native: "_native.File", buffer: Any = None):
        self._native = native
        self._buffer = buffer  # bytes, or the mmap of the file (mapped on first data access)
        self._metadata: Optional[Metadata] = None
        self._tensors: Optional[list[Tensor]] = None
        self._by_name: Optional[dict] = None

    @property
    def path(self) -> Optional[str]:
        """The path or URL it was opened from (None for bytes)."""
        return self._native.path

    @property
    def version(self) -> int:
        """Format version (1, 2 or 3)."""
        return self._native.version

    @property
    def byte_order(self) -> str:
        """``'little'`` or ``'big'``."""
        return self._native.byte_order

    @property
    def alignment(self) -> int:
        """The data alignment in force (``general.alignment``, else 32)."""
        return self._native.alignment

    @property
    def data_offset(self) -> int:
        """Where the data section starts."""
        return self._native.data_offset

    @property
    def size(self) -> int:
        """Bytes of the file."""
        return self._native.size

    @property
    def metadata(self) -> Metadata:
        """The metadata, an ordered mapping of key to value (types in ``.fields``)."""
        if self._metadata is None:
            self._metadata = Metadata(
                [
                    Field(k, ValueType(t), v, None if e is None else ValueType(e))
                    for k, t, v, e in self._native.metadata()
                ]
            )
        return self._metadata

    @property
    def tensors(self) -> list[Tensor]:
        """Tensor infos in file order."""
        if self._tensors is None:
            self._tensors = [Tensor(self, i, row) for i, row in enumerate(self._native.tensors())]
        return self._tensors

    def tensor(self, name: Union[str, bytes]) -> Tensor:
        """The tensor with this name (KeyError if none)."""
        if self._by_name is None:
            self._by_name = {}
            for t in self.tensors:
                self._by_name.setdefault(t.name, t)
        return self._by_name[name]

    def check(self, profile: str = "ggml") -> list[Finding]:
        """What ``profile`` (``'ggml'``: what ggml's reader accepts; ``'spec'``: what the GGUF
        spec says) finds in the header."""
        return [Finding(*f) for f in self._native.check(profile)]

    def to_bytes(self) -> bytes:
        """The file written back: the same bytes."""
        return self._native.to_bytes()

    def _data(self, index: int) -> memoryview:
        start, length = self._native.tensor_range(index)
        if self._buffer is None:
            if self._native.path is None or "://" in self._native.path:
                raise Error(f"{self.path}: the tensor data was not fetched (a remote header)")
            with _builtin_open(self._native.path, "rb") as fh:
                self._buffer = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_READ)
        return memoryview(self._buffer)[start : start + length]

    def close(self) -> None:
        """Drops the file's map (views of its data must be gone by then)."""
        buf, self._buffer = self._buffer, None
        if isinstance(buf, _mmap.mmap):
            buf.close()

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<ggufrw.File {self.path or '<bytes>'}: v{self.version} {self.byte_order}-endian, "
            f"{len(self.metadata.fields)} pairs, {len(self.tensors)} tensors>"
        )


_builtin_open = open


def open(source: Union[PathLike, bytes, bytearray, memoryview]) -> File:  # noqa: A001
    """Opens a GGUF file: a path (memory-mapped), the file's bytes, or an ``http(s)://`` URL
    (its header only, fetched with range requests). Raises :class:`DecodeError` for a file
    that does not decode."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return File(_native.File.from_bytes(data), data)
    path = _os.fspath(source)
    if isinstance(path, str) and (path.startswith("http://") or path.startswith("https://")):
        return File(_native.File.open_url(path))
    return File(_native.File.open(path))


def dequantize(data: Any, type: Union[int, str, GGMLType], shape: Optional[Sequence[int]] = None, *, byte_order: str = "little", threads: int = 0) -> Any:
    """Blocks of ``type`` as float32, bit-exact with ggml. ``shape`` (NumPy order) shapes the
    result; by default it is flat."""
    out = _native.dequantize(_ggml_type(type), bytes(data), byte_order, threads)
    return _floats(out, shape if shape is not None else (len(out) // 4,))


def quantize(x: Any, type: Union[int, str, GGMLType], *, n_per_row: Optional[int] = None, imatrix: Any = None, threads: int = 0) -> Any:
    """Quantizes float32 values to ``type`` as ggml's ``ggml_quantize_chunk`` does (with an
    importance matrix of ``n_per_row`` weights where given). ``x`` is a NumPy array (rows are
    its last axis) or float32 bytes with ``n_per_row``. Returns ``uint8`` rows (NumPy) or
    ``bytes``."""
    shape = None
    if _np is not None and isinstance(x, _np.ndarray):
        arr = _np.ascontiguousarray(x, dtype=_np.float32)
        shape = arr.shape
        if n_per_row is None:
            n_per_row = arr.shape[-1] if arr.ndim else 1
        raw = arr.tobytes()
    else:
        raw = bytes(x)
        if n_per_row is None:
            n_per_row = len(raw) // 4
    weights = None
    if imatrix is not None:
        if _np is not None and isinstance(imatrix, _np.ndarray):
            weights = _np.ascontiguousarray(imatrix, dtype=_np.float32).tobytes()
        else:
            weights = bytes(imatrix)
    out = _native.quantize(_ggml_type(type), raw, n_per_row, weights, threads)
    if _np is not None and shape is not None and len(shape) >= 1:
        info = type_info(type)
        row = n_per_row // info.block_size * info.type_size
        return _np.frombuffer(out, dtype=_np.uint8).reshape(tuple(shape[:-1]) + (row,))
    return out


class Builder:
    """A new GGUF file, built in memory then written in one go (through a temporary file
    renamed into place, so that a failure leaves nothing behind).

    >>> b = ggufrw.Builder()                                   # doctest: +SKIP
    >>> b.add("general.architecture", "llama")                 # doctest: +SKIP
    >>> b.tensor("w", numpy.zeros((2, 4), numpy.float32))      # doctest: +SKIP
    >>> b.write("out.gguf")                                    # doctest: +SKIP
    """

    def __init__(self, version: int = 3, byte_order: str = "little"):
        self.version = version
        self.byte_order = byte_order
        self._metadata: list[tuple] = []
        self._keys: dict = {}
        self._tensors: list[tuple] = []

    def add(self, key: Union[str, bytes], value: Any, type: Optional[ValueType] = None, element_type: Optional[ValueType] = None) -> "Builder":
        """Sets ``key`` (replaced where it is, appended where new). The value type is inferred
        as gguf-py infers it (int: INT32, float: FLOAT32) unless given."""
        if type is not None:
            value = Value(value, type, element_type)
        wire = (key, *_wire(value))
        if key in self._keys:
            self._metadata[self._keys[key]] = wire
        else:
            self._keys[key] = len(self._metadata)
            self._metadata.append(wire)
        return self

    def tensor(self, name: Union[str, bytes], data: Any, type: Union[int, str, GGMLType, None] = None, shape: Optional[Sequence[int]] = None) -> "Builder":
        """Adds a tensor. ``data`` is a NumPy array (type from its dtype unless given, shape
        from its shape) or bytes with ``type`` and ``shape`` (GGUF order, ``ne0`` first)."""
        if _np is not None and isinstance(data, _np.ndarray):
            if type is None:
                names = {v: k for k, v in _PLAIN.items()}
                kind = data.dtype.newbyteorder("=").str[1:]
                if kind not in names:
                    raise TypeError(f"no ggml type for dtype {data.dtype}: give one")
                type = names[kind]
            if shape is None:
                if _ggml_type(type) in (int(GGMLType[k]) for k in _PLAIN):
                    shape = tuple(reversed(data.shape))
                else:
                    raise TypeError("the shape of quantized data must be given (GGUF order)")
            raw = memoryview(_np.ascontiguousarray(data)).cast("B")
        else:
            if type is None or shape is None:
                raise TypeError("bytes data needs its type and shape")
            raw = memoryview(data).cast("B")
        tid = _ggml_type(type)
        self._tensors.append((name, [int(d) for d in shape], tid, raw))
        return self

    def _header(self) -> tuple[bytes, list[int]]:
        infos = [(n, d, t, raw.nbytes) for n, d, t, raw in self._tensors]
        return _native.encode_header(self.version, self.byte_order, self._metadata, infos)

    def _write(self, out: Any) -> int:
        header, offsets = self._header()
        out.write(header)
        written = len(header)
        at = 0
        for (_, _, _, raw), offset in zip(self._tensors, offsets):
            if offset > at:
                out.write(bytes(offset - at))
                written += offset - at
            out.write(raw)
            written += raw.nbytes
            at = offset + raw.nbytes
        if self._tensors:
            pad = -at % self._alignment()
            out.write(bytes(pad))
            written += pad
        return written

    def _alignment(self) -> int:
        for key, ty, value, _ in self._metadata:
            if key in ("general.alignment", b"general.alignment") and ty == ValueType.UINT32:
                return int(value)
        return 32

    def to_bytes(self) -> bytes:
        """The file's bytes."""
        import io

        buf = io.BytesIO()
        self._write(buf)
        return buf.getvalue()

    def write(self, path: PathLike) -> int:
        """Writes the file to ``path`` through a temporary file beside it (synced, renamed),
        with the permissions a plain write gives. Returns the bytes written."""
        path = _os.fspath(path)
        return _atomic_write(path, self._write)


def _atomic_write(path: str, fill: Any) -> int:
    directory = _os.path.dirname(_os.path.abspath(path))
    fd, tmp = _tempfile.mkstemp(prefix=".ggufrw-", suffix=".tmp", dir=directory)
    try:
        with _os.fdopen(fd, "wb") as out:
            n = fill(out)
            out.flush()
            _os.fsync(out.fileno())
        umask = _os.umask(0)
        _os.umask(umask)
        _os.chmod(tmp, 0o666 & ~umask)
        _os.replace(tmp, path)
    except BaseException:
        # Interrupted (KeyboardInterrupt included) or failed: nothing is left behind.
        try:
            _os.unlink(tmp)
        except OSError:
            pass
        raise
    return n


def edit(path: PathLike, output: Optional[PathLike] = None, *, set: Optional[Mapping] = None, delete: Sequence = (), rename_tensors: Optional[Mapping] = None, delete_tensors: Sequence = (), force: bool = False, in_place: bool = False) -> None:
    """Edits metadata and tensor names of ``path`` into ``output`` (a new file, through a
    temporary one), or rewrites only its header when ``in_place`` is true (refused when the new
    header would not fit). Values are inferred as in :meth:`Builder.add` or given as
    :class:`Value`; a standard key keeps its standard type unless ``force``."""
    if (output is None) != in_place:
        raise ValueError("give an output path, or in_place=True (not both)")
    pairs = [(k, *_wire(v)) for k, v in (set or {}).items()]
    _native.edit(
        _os.fspath(path),
        None if output is None else _os.fspath(output),
        pairs,
        list(delete),
        list((rename_tensors or {}).items()),
        list(delete_tensors),
        force,
    )


class Shard(NamedTuple):
    """One file of a split model."""

    path: str
    tensors: int
    data_bytes: int


def split(path: PathLike, prefix: PathLike, *, max_tensors: Optional[int] = None, max_size: Optional[int] = None, no_tensor_first: bool = False, dry_run: bool = False) -> list[Shard]:
    """Splits ``path`` as llama.cpp's gguf-split does (``prefix-00001-of-0000N.gguf``), by
    tensor count (default 128) or by bytes per shard."""
    return [
        Shard(*s)
        for s in _native.split_file(
            _os.fspath(path), _os.fspath(prefix), max_tensors, max_size, no_tensor_first, dry_run
        )
    ]


def merge(first: PathLike, output: PathLike) -> None:
    """Merges the shards that ``first`` (``…-00001-of-0000N.gguf``) starts into ``output``,
    as gguf-split ``--merge`` does."""
    _native.merge(_os.fspath(first), _os.fspath(output))


def hash(path: PathLike, kinds: Sequence[str] = ("xxh64",), *, per_tensor: bool = True) -> list[str]:  # noqa: A001
    """The lines llama.cpp's gguf-hash prints for ``path`` (``xxh64``, ``xxh3``, ``sha1``,
    ``sha256``, ``uuid``)."""
    return _native.hash(_os.fspath(path), list(kinds), per_tensor)


class Conversion(NamedTuple):
    """What :func:`convert_hf` wrote (or, with ``dry_run``, would write)."""

    outputs: list[str]
    parameters: int


def convert_hf(
    model_dir: PathLike,
    outfile: Optional[PathLike] = None,
    *,
    outtype: Optional[str] = None,
    vocab_only: bool = False,
    bigendian: bool = False,
    model_name: Optional[str] = None,
    metadata: Optional[PathLike] = None,
    split_max_tensors: int = 0,
    split_max_size: int = 0,
    no_tensor_first_split: bool = False,
    dry_run: bool = False,
    tokenizer_pre: Optional[str] = None,
    threads: int = 0,
    quantize: Optional[str] = None,
    via: str = "auto",
    quantize_options: Sequence[str] = (),
) -> Conversion:
    """Converts a Hugging Face checkpoint folder to GGUF byte for byte as llama.cpp's
    ``convert_hf_to_gguf.py`` does, with its options (``outtype`` f16 by default,
    ``split_max_size`` in bytes), without torch; ``tokenizer_pre`` names a BPE pre-tokenizer the
    reference does not recognize. ``threads`` converts rows on that many threads (0: every core;
    the bytes are the same).

    With ``quantize`` (a llama-quantize preset: ``"Q4_K_M"``, ``"IQ4_XS"``, ...), the checkpoint
    is converted to ``via`` (the reference's outtype; ``outtype`` is then not given) and quantized
    in the same pass, byte for byte as ``llama-quantize`` on the reference's output;
    ``quantize_options`` are llama-quantize's own (``["--leave-output-tensor"]``, ...)."""
    outputs, parameters = _native.convert_hf(
        _os.fspath(model_dir),
        None if outfile is None else _os.fspath(outfile),
        outtype,
        vocab_only,
        bigendian,
        model_name,
        None if metadata is None else _os.fspath(metadata),
        split_max_tensors,
        split_max_size,
        no_tensor_first_split,
        dry_run,
        tokenizer_pre,
        threads,
        quantize,
        via,
        list(quantize_options),
    )
    return Conversion(outputs, parameters)


class LoraConversion(NamedTuple):
    """What :func:`convert_lora` wrote (or, with ``dry_run``, would write)."""

    output: str
    tensors: int
    warnings: list[str]


def convert_lora(
    lora_dir: PathLike,
    base: Optional[PathLike] = None,
    outfile: Optional[PathLike] = None,
    *,
    outtype: str = "f32",
    bigendian: bool = False,
    dry_run: bool = False,
    rslora_scale: bool = False,
    threads: int = 0,
) -> LoraConversion:
    """Converts a PEFT LoRA adapter folder (``adapter_config.json``,
    ``adapter_model.safetensors``) to a GGUF adapter byte for byte as llama.cpp's
    ``convert_lora_to_gguf.py`` does, with its options, without torch. ``base`` is the base
    model's folder (its ``config.json`` is enough), or the base as a GGUF model (its class and
    shapes read from it); default: the adapter config's ``base_model_name_or_path`` where that
    is a folder here. ``warnings`` say what the
    reference loses silently (an rsLoRA adapter's scale, an ``lm_head`` adapter on a tied base);
    ``rslora_scale`` writes an rsLoRA adapter's alpha as ``alpha * sqrt(r)`` so that it behaves
    as trained."""
    output, tensors, warnings = _native.convert_lora(
        _os.fspath(lora_dir),
        None if base is None else _os.fspath(base),
        None if outfile is None else _os.fspath(outfile),
        outtype,
        bigendian,
        dry_run,
        rslora_scale,
        threads,
    )
    return LoraConversion(output, tensors, warnings)


class Merge(NamedTuple):
    """What :func:`export_lora` wrote."""

    merged: int
    tensors: int
    ignored: list[str]


def export_lora(
    base: PathLike,
    adapters: Sequence[Union[PathLike, tuple[PathLike, float]]],
    out: PathLike,
    *,
    threads: int = 0,
) -> Merge:
    """Merges LoRA adapters (GGUF, as :func:`convert_lora` writes them) into their base model
    byte for byte as llama.cpp's ``llama-export-lora`` does: each adapted weight becomes
    ``W + scale * alpha / r * B @ A`` in its order of operations, written F32 where the base's
    is F32, else F16; every other tensor is copied. An adapter is a path (scale 1) or a
    ``(path, scale)`` pair. ``ignored`` names the adapter tensors no base tensor takes (the
    reference ignores them silently)."""
    pairs = [
        (_os.fspath(a[0]), float(a[1])) if isinstance(a, tuple) else (_os.fspath(a), 1.0)
        for a in adapters
    ]
    merged, tensors, ignored = _native.export_lora(_os.fspath(base), pairs, _os.fspath(out), threads)
    return Merge(merged, tensors, ignored)


class Export(NamedTuple):
    """What :func:`export_hf` wrote."""

    files: list[str]
    tensors: int


def export_hf(
    model: PathLike,
    out: PathLike,
    *,
    dtype: str = "auto",
    max_shard_size: int = 5_000_000_000,
    vocab_only: bool = False,
    threads: int = 0,
) -> Export:
    """Exports a GGUF model (the first file of a split one) to the Hugging Face folder ``out``,
    which must not exist or be empty, as ``ggufrw export-hf`` does: ``config.json``,
    ``generation_config.json``, the weights as safetensors in ``dtype`` (``f32``, ``f16``,
    ``bf16``, or ``auto``: the file's own 16-bit type, else f32), sharded beyond
    ``max_shard_size`` bytes as ``save_pretrained`` shards, the tokenizer files and a README.
    Nothing is left behind on failure. ``files`` are relative to ``out``."""
    files, tensors = _native.export_hf(
        _os.fspath(model), _os.fspath(out), dtype, max_shard_size, vocab_only, threads
    )
    return Export(files, tensors)
