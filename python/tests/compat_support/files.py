"""Sample GGUF files for the compatibility tests, written by gguf-py's writer and by the native
encoder, and the comparison of two readers' views of one file."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ggufrw import _native

# value type ids
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)

# ggml type ids gguf-py 0.19 sizes as ggml does (all but Q8_1, which it sizes wrong)
TYPE_SIZES = {row[0]: (row[2], row[3]) for row in _native.types()}
TYPE_NAMES = {row[0]: row[1] for row in _native.types()}
Q8_1 = 9
Q2_0 = 42

SCALARS: list[tuple[str, int, Any]] = [
    ("t.u8", U8, 200),
    ("t.i8", I8, -100),
    ("t.u16", U16, 60000),
    ("t.i16", I16, -30000),
    ("t.u32", U32, 4_000_000_000),
    ("t.i32", I32, -2_000_000_000),
    ("t.f32", F32, 0.1),
    ("t.f32.inf", F32, float("-inf")),
    ("t.bool.true", BOOL, True),
    ("t.bool.false", BOOL, False),
    ("t.str", STR, "héllo wörld ✓"),
    ("t.str.empty", STR, ""),
    ("t.u64", U64, 2**64 - 1),
    ("t.i64", I64, -(2**63)),
    ("t.f64", F64, 1e300),
]

ARRAYS: list[tuple[str, int, list[Any]]] = [
    ("a.u8", U8, [0, 1, 255]),
    ("a.i8", I8, [-128, 0, 127]),
    ("a.u16", U16, [1, 65535]),
    ("a.i16", I16, [-32768, 5]),
    ("a.u32", U32, [7, 8, 9, 4294967295]),
    ("a.i32", I32, list(range(-5, 10))),
    ("a.f32", F32, [0.5, -1.25, 3.0e38, 1e-40]),
    ("a.bool", BOOL, [True, False, True]),
    ("a.str", STR, ["a", "", "ünïcødé", "x" * 70, "line\nbreak"]),
    ("a.u64", U64, [0, 2**64 - 1]),
    ("a.i64", I64, [-(2**63), 2**63 - 1]),
    ("a.f64", F64, [math.pi, -0.0, float("inf")]),
    ("a.empty.u32", U32, []),
    ("a.empty.str", STR, []),
]

# nested arrays for the native encoder: elements are (element type, list) pairs
NESTED: list[tuple[str, list[Any]]] = [
    ("n.u32", [(U32, [1, 2, 3]), (U32, [4]), (U32, [])]),
    ("n.str", [(STR, ["p", "qq"]), (STR, ["rrr"])]),
    ("n.deep", [(ARR, [(I16, [-1, 2]), (I16, [3])]), (ARR, [(I16, [4])])]),
    ("n.first.empty", [(U8, []), (U8, [9, 8])]),
    ("n.empty", []),
]


def tensor_nbytes(type_id: int, dims: list[int]) -> int:
    block, size = TYPE_SIZES[type_id]
    n = 1
    for d in dims:
        n *= d
    return n // block * size


def sample_tensors(types: list[int], seed: int = 0) -> list[tuple[str, list[int], int, bytes]]:
    """(name, dims (ne0 first), type, data) of one small tensor per type (random bytes)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, t in enumerate(types):
        block, _size = TYPE_SIZES[t]
        ne0 = block * 2 if block > 1 else 6
        dims = [ne0, 3] if i % 3 else [ne0, 2, 2] if i % 2 else [ne0]
        nbytes = tensor_nbytes(t, dims)
        rows.append((f"blk.{i}.{TYPE_NAMES[t]}.weight", dims, t, rng.bytes(nbytes)))
    return rows


def encode_native(
    path: str | os.PathLike[str],
    version: int,
    byte_order: str,
    metadata: list[tuple[Any, int, Any, int | None]],
    tensors: list[tuple[str, list[int], int, bytes]],
) -> bytes:
    """Writes a file with the native encoder (header) and `tensors`' data, padded to alignment."""
    header, offsets = _native.encode_header(
        version, byte_order, metadata, [(n, d, t, len(b)) for n, d, t, b in tensors]
    )
    out = bytearray(header)
    base = len(out)
    for (_n, _d, _t, data), off in zip(tensors, offsets):
        out += bytes(base + off - len(out))
        out += data
    with open(path, "wb") as f:
        f.write(out)
    return bytes(out)


def native_metadata(nested: bool = True, alignment: int | None = None) -> list[tuple[Any, int, Any, int | None]]:
    meta: list[tuple[Any, int, Any, int | None]] = [("general.architecture", STR, "llama", None)]
    if alignment is not None:
        meta.append(("general.alignment", U32, alignment, None))
    meta += [(k, t, v, None) for k, t, v in SCALARS]
    meta += [(k, ARR, v, t) for k, t, v in ARRAYS]
    if nested:
        meta += [(k, ARR, v, ARR) for k, v in NESTED]
    return meta


def gguf_py_sample(gguf: Any, path: str, big: bool = False, alignment: int | None = None,
                   types: list[int] | None = None, nested: bool = True) -> None:
    """Writes a sample with gguf-py's writer: every value type and tensors of `types`."""
    endian = gguf.GGUFEndian.BIG if big else gguf.GGUFEndian.LITTLE
    w = gguf.GGUFWriter(path, "llama", endianess=endian)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, t, v in SCALARS:
        w.add_key_value(key, v, gguf.GGUFValueType(t))
    for key, t, v in ARRAYS:
        if v:
            w.add_key_value(key, v, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType(t))
    if nested:
        w.add_array("n.auto", [[1, 2, 3], [4, 5], [6]])
        w.add_array("n.auto.str", [["a", "b"], ["c"]])
    w.add_array("a.bytes", b"\x00\x01\xff")
    w.add_token_list(["<s>", "</s>", "hello"])
    w.add_token_scores([0.0, -1.5, 2.25])
    w.add_token_types([1, 3, 1])
    w.add_bos_token_id(1)
    w.add_context_length(4096)
    w.add_rope_freq_base(10000.0)
    for name, dims, t, data in sample_tensors(types or [0, 1, 30, 2, 8, 12, 14, 24, 25, 26, 27, 28]):
        raw = np.frombuffer(data, dtype=np.uint8)
        shape = list(reversed(dims))
        if t in (0, 1, 24, 25, 26, 27, 28):
            dt = {0: np.float32, 1: np.float16, 24: np.int8, 25: np.int16, 26: np.int32,
                  27: np.int64, 28: np.float64}[t]
            # in host order; the writer swaps it for a big-endian file
            w.add_tensor(name, raw.view(dt).reshape(shape))
        else:
            block, size = TYPE_SIZES[t]
            byte_shape = shape[:-1] + [shape[-1] // block * size]
            w.add_tensor(name, raw.reshape(byte_shape), raw_dtype=gguf.GGMLQuantizationType(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# comparing two readers

def same_value(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN, and lists compared element by element."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def same_parts(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b), (len(a), len(b))
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.dtype == y.dtype, (i, x.dtype, y.dtype)
        assert x.shape == y.shape, (i, x.shape, y.shape)
        assert x.tobytes() == y.tobytes(), i


def same_field(ref: Any, ours: Any, parts: bool = True) -> None:
    assert ours.name == ref.name
    assert ours.offset == ref.offset, (ref.name, ref.offset, ours.offset)
    assert [int(t) for t in ours.types] == [int(t) for t in ref.types], ref.name
    assert [t.name for t in ours.types] == [t.name for t in ref.types], ref.name
    assert ours.data == ref.data, ref.name
    # contents() before parts exist (served from the decoded values) and after
    probes: list[Any] = [slice(None), slice(2), slice(1, None, 2)]
    if ref.types and ref.types[0] == 9 and ref.data:
        probes += [0, -1, len(ref.data) - 1]
    for probe in probes:
        assert same_value(ours.contents(probe), ref.contents(probe)), (ref.name, probe)
    if parts:
        same_parts(ref.parts, ours.parts)


def same_reader(ref: Any, ours: Any, parts: bool = True, skip_types: tuple[int, ...] = ()) -> None:
    """Asserts that two readers (gguf-py's, ours) give the same view of a file."""
    assert ours.byte_order == ref.byte_order
    assert int(ours.endianess) == int(ref.endianess) and ours.endianess.name == ref.endianess.name
    assert ours.alignment == ref.alignment
    assert int(ours.data_offset) == int(ref.data_offset)
    assert list(ours.fields) == list(ref.fields)
    for key in ref.fields:
        same_field(ref.fields[key], ours.fields[key], parts)
        assert ours.get_field(key) is ours.fields[key]
    assert ours.get_field("no.such.key") is None
    assert len(ours.tensors) == len(ref.tensors)
    for i, (r, o) in enumerate(zip(ref.tensors, ours.tensors)):
        assert o is ours.get_tensor(i)
        assert o.name == r.name
        assert int(o.tensor_type) == int(r.tensor_type) and o.tensor_type.name == r.tensor_type.name
        assert o.shape.dtype == r.shape.dtype and o.shape.tolist() == r.shape.tolist()
        assert o.n_elements == r.n_elements
        assert o.data_offset == r.data_offset
        if int(r.tensor_type) in skip_types:
            continue
        assert o.n_bytes == r.n_bytes, r.name
        assert o.data.dtype == r.data.dtype, r.name
        assert o.data.shape == r.data.shape, r.name
        assert o.data.tobytes() == r.data.tobytes(), r.name
        assert o.field.name == r.field.name and o.field.offset == r.field.offset
        assert o.field.types == r.field.types and o.field.data == r.field.data
        same_parts(r.field.parts, o.field.parts)
