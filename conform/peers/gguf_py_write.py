#!/usr/bin/env python3
"""Peer adapter: write a GGUF file from a JSON description using the reference
writer ``gguf.GGUFWriter`` from gguf-py (PyPI ``gguf``, pinned to 0.19.0 by
scripts/peers.sh).

The description has the shape of ``ggufrw dump --json`` plus tensor bytes:

    {"version": 3, "byte_order": "little", "alignment": 32,
     "metadata": [{"key": "general.name", "type": "string", "value": "x"}, ...],
     "tensors": [{"name": "w", "type": "q4_K", "shape": [256, 2],
                  "data_hex": "<size*2 hex digits, in the file's byte order>"}]}

 * "version" (optional, default 3): must be 3 - GGUFWriter only writes v3.
 * "byte_order" (optional, default "little"): "little" or "big"; "big" means
   GGUFWriter(..., endianess=GGUFEndian.BIG).
 * "alignment" (optional): must equal the alignment the file will have, i.e.
   the value of a uint32 "general.alignment" key in "metadata" if there is
   one, else 32. GGUFWriter can only align to a custom value through
   add_custom_alignment(), which also writes the general.alignment key, so a
   custom alignment needs that key in "metadata" (at the position it should
   have in the file).
 * "data_offset" (optional) and each tensor's "offset" / "size" (optional):
   if given, they must equal what GGUFWriter produces (it chooses the layout
   itself), otherwise the request is refused.
 * "metadata": written in the given order, each value with exactly the given
   type (see README.md for the subset of nested arrays GGUFWriter can express).
 * tensor "data_hex": the tensor's bytes exactly as they must appear in the
   file. They are handed to GGUFWriter as a raw uint8 array (raw_dtype =
   the ggml type, tensor_endianess = the file's) so nothing is byte-swapped.

After writing, the file is read back with GGUFReader (gguf_py_read.dump) and
compared with the description, and every tensor's bytes are compared with
data_hex; any difference is an error (so a request that GGUFWriter cannot
express faithfully never yields a file). The file is written to a temporary
name beside OUT and renamed into place only on success.

Usage:
    gguf_py_write.py DESC.json OUT.gguf
        Exit 0 on success; on failure print the error on stderr, exit 1.
    gguf_py_write.py --serve
        One request per stdin line: {"desc": {...}, "out": "/path"}; one
        answer line per request: {"ok": true} or {"ok": false, "error": "..."}.
        Never dies on a bad request; stdout is flushed after each answer.
        Blank lines are ignored. Ends at EOF.

Only the standard library, numpy and gguf are used.
"""
from __future__ import annotations

import json
import math
import os
import struct
import sys
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

import gguf
from gguf import GGUFWriter, GGUFValueType, GGMLQuantizationType, GGUFEndian
from gguf.constants import GGML_QUANT_SIZES, GGUF_DEFAULT_ALIGNMENT

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_py_read  # noqa: E402

VALUE_TYPES: dict[str, GGUFValueType] = {v: k for k, v in gguf_py_read.VALUE_TYPE_NAMES.items()}
GGML_TYPES: dict[str, GGMLQuantizationType] = {
    gguf_py_read.ggml_type_name(t): t for t in GGMLQuantizationType
}

INT_RANGES: dict[GGUFValueType, tuple[int, int]] = {
    GGUFValueType.UINT8: (0, 2**8 - 1),
    GGUFValueType.INT8: (-(2**7), 2**7 - 1),
    GGUFValueType.UINT16: (0, 2**16 - 1),
    GGUFValueType.INT16: (-(2**15), 2**15 - 1),
    GGUFValueType.UINT32: (0, 2**32 - 1),
    GGUFValueType.INT32: (-(2**31), 2**31 - 1),
    GGUFValueType.UINT64: (0, 2**64 - 1),
    GGUFValueType.INT64: (-(2**63), 2**63 - 1),
}

ALIGNMENT_KEY = gguf.Keys.General.ALIGNMENT  # "general.alignment"

# ggml types that GGUFWriter.add_tensor_info accepts as a typed numpy array
# (without raw_dtype); used only for 0-dimensional tensors.
PLAIN_NUMPY_TYPES: dict[GGMLQuantizationType, type] = {
    GGMLQuantizationType.F32: np.float32,
    GGMLQuantizationType.F16: np.float16,
    GGMLQuantizationType.F64: np.float64,
    GGMLQuantizationType.I8: np.int8,
    GGMLQuantizationType.I16: np.int16,
    GGMLQuantizationType.I32: np.int32,
    GGMLQuantizationType.I64: np.int64,
}


class Unexpressible(ValueError):
    """The description asks for something GGUFWriter cannot write."""


def parse_float(v: Any, vtype: GGUFValueType, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"{where}: expected a number or \"nan\"/\"inf\"/\"-inf\" for {gguf_py_read.VALUE_TYPE_NAMES[vtype]}, got {v!r}")
    if isinstance(v, str):
        if v == "nan":
            return math.nan
        if v == "inf":
            return math.inf
        if v == "-inf":
            return -math.inf
        raise ValueError(f"{where}: bad float string {v!r} (only \"nan\", \"inf\", \"-inf\")")
    f = float(v)
    if vtype == GGUFValueType.FLOAT32 and math.isfinite(f):
        try:
            r = struct.unpack("<f", struct.pack("<f", f))[0]
        except OverflowError:
            raise ValueError(f"{where}: {v!r} is out of float32 range") from None
        if r != f:
            raise ValueError(f"{where}: {v!r} is not exactly representable as float32 "
                             f"(GGUFWriter would round it to {r!r})")
    return f


def parse_scalar(v: Any, vtype: GGUFValueType, where: str) -> Any:
    """JSON value -> the Python value GGUFWriter packs for vtype."""
    if vtype in INT_RANGES:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{where}: expected an integer for {gguf_py_read.VALUE_TYPE_NAMES[vtype]}, got {v!r}")
        lo, hi = INT_RANGES[vtype]
        if not lo <= v <= hi:
            raise ValueError(f"{where}: {v} out of range for {gguf_py_read.VALUE_TYPE_NAMES[vtype]}")
        return v
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return parse_float(v, vtype, where)
    if vtype == GGUFValueType.BOOL:
        if not isinstance(v, bool):
            raise ValueError(f"{where}: expected true/false for bool, got {v!r}")
        return v
    if vtype == GGUFValueType.STRING:
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected a string, got {v!r}")
        return v
    raise ValueError(f"{where}: {vtype.name} is not a scalar type")


def parse_type(name: Any, where: str) -> GGUFValueType:
    if not isinstance(name, str) or name not in VALUE_TYPES:
        raise ValueError(f"{where}: unknown value type {name!r} (expected one of {', '.join(VALUE_TYPES)})")
    return VALUE_TYPES[name]


def parse_inner_array(obj: Any, where: str, top: bool) -> Any:
    """An element of an array of arrays, {"element_type": T, "value": [...]},
    converted to the Python object that GGUFWriter._pack_val(item,
    GGUFValueType.ARRAY, add_vtype=False) packs as an array of T.

    GGUFWriter passes no sub_type when it packs the items of an array, so the
    element type of an inner array is *inferred*: bytes -> UINT8, otherwise
    GGUFValueType.get_type(first item): str -> STRING, list -> ARRAY,
    float -> FLOAT32, bool -> BOOL, int -> INT32. `top` is True for the inner
    arrays directly under a top-level key (packed with the forced
    sub_type ARRAY): only there can a `bytes` item be used (deeper down, the
    enclosing array's type is itself inferred from get_type(), which calls
    bytes a STRING)."""
    if not isinstance(obj, dict) or set(obj) != {"element_type", "value"}:
        raise ValueError(f"{where}: an element of an array of arrays must be an object "
                         f"{{\"element_type\": ..., \"value\": [...]}}, got {obj!r}")
    etype = parse_type(obj["element_type"], where + ".element_type")
    values = obj["value"]
    if not isinstance(values, list):
        raise ValueError(f"{where}.value: expected a list, got {values!r}")
    if not values:
        raise Unexpressible(f"{where}: empty array (of {obj['element_type']}): GGUFWriter refuses "
                            f"empty arrays (ValueError: Invalid GGUF metadata array. Empty array)")
    if etype == GGUFValueType.UINT8:
        if not top:
            raise Unexpressible(f"{where}: an array of uint8 nested two or more levels deep: GGUFWriter "
                                f"infers nested element types with GGUFValueType.get_type(), which has no "
                                f"uint8 (a uint8 array can only be nested directly under a top-level key, "
                                f"passed as bytes)")
        return bytes(parse_scalar(v, etype, f"{where}.value[{i}]") for i, v in enumerate(values))
    if etype == GGUFValueType.INT32:
        return [parse_scalar(v, etype, f"{where}.value[{i}]") for i, v in enumerate(values)]
    if etype == GGUFValueType.FLOAT32:
        return [float(parse_scalar(v, etype, f"{where}.value[{i}]")) for i, v in enumerate(values)]
    if etype in (GGUFValueType.BOOL, GGUFValueType.STRING):
        return [parse_scalar(v, etype, f"{where}.value[{i}]") for i, v in enumerate(values)]
    if etype == GGUFValueType.ARRAY:
        # every item must be a list: the enclosing array's element type is
        # inferred from get_type(first item) and checked for all items
        return [parse_inner_array(v, f"{where}.value[{i}]", top=False) for i, v in enumerate(values)]
    raise Unexpressible(f"{where}: a nested array of {obj['element_type']}: GGUFWriter packs nested arrays "
                        f"without a sub_type and infers their element type with GGUFValueType.get_type(), "
                        f"which only yields int32, float32, bool, string, array (and uint8 from bytes "
                        f"directly under a top-level key)")


def parse_kv(entry: Any, idx: int) -> tuple[str, Any, GGUFValueType, GGUFValueType | None]:
    where = f"metadata[{idx}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object, got {entry!r}")
    key = entry.get("key")
    if not isinstance(key, str):
        raise ValueError(f"{where}.key: expected a string, got {key!r}")
    where = f"metadata[{idx}] ({key!r})"
    vtype = parse_type(entry.get("type"), where + ".type")
    if "value" not in entry:
        raise ValueError(f"{where}: missing \"value\"")
    value = entry["value"]
    allowed = {"key", "type", "value"} | ({"element_type"} if vtype == GGUFValueType.ARRAY else set())
    extra = set(entry) - allowed
    if extra:
        raise ValueError(f"{where}: unexpected fields {sorted(extra)}")
    if vtype != GGUFValueType.ARRAY:
        return key, parse_scalar(value, vtype, where + ".value"), vtype, None
    etype = parse_type(entry.get("element_type"), where + ".element_type")
    if not isinstance(value, list):
        raise ValueError(f"{where}.value: expected a list, got {value!r}")
    if not value:
        raise Unexpressible(f"{where}: empty array (of {entry['element_type']}): GGUFWriter refuses empty "
                            f"arrays (ValueError: Invalid GGUF metadata array. Empty array)")
    if etype == GGUFValueType.ARRAY:
        items = [parse_inner_array(v, f"{where}.value[{i}]", top=True) for i, v in enumerate(value)]
    else:
        items = [parse_scalar(v, etype, f"{where}.value[{i}]") for i, v in enumerate(value)]
    return key, items, vtype, etype


def parse_tensor(t: Any, idx: int) -> tuple[str, GGMLQuantizationType, list[int], bytes]:
    where = f"tensors[{idx}]"
    if not isinstance(t, dict):
        raise ValueError(f"{where}: expected an object, got {t!r}")
    extra = set(t) - {"name", "type", "shape", "offset", "size", "data_hex"}
    if extra:
        raise ValueError(f"{where}: unexpected fields {sorted(extra)}")
    name = t.get("name")
    if not isinstance(name, str):
        raise ValueError(f"{where}.name: expected a string, got {name!r}")
    where = f"tensors[{idx}] ({name!r})"
    tname = t.get("type")
    if tname not in GGML_TYPES:
        raise ValueError(f"{where}.type: unknown ggml type {tname!r} (expected one of {', '.join(GGML_TYPES)})")
    qtype = GGML_TYPES[tname]
    shape = t.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**64 for d in shape):
        raise ValueError(f"{where}.shape: expected a list of non-negative integers, got {shape!r}")
    if not shape and qtype not in PLAIN_NUMPY_TYPES:
        raise Unexpressible(f"{where}: a {tname} tensor with 0 dimensions: GGUFWriter derives the shape "
                            f"of raw (uint8) data from its last byte dimension (quant_shape_from_byte_shape), "
                            f"and only F32/F16/F64/I8/I16/I32/I64 can be passed as typed numpy arrays")
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    if shape and shape[0] % block_size != 0:
        raise ValueError(f"{where}: ne[0]={shape[0]} is not a multiple of the {tname} block size {block_size}")
    nbytes = prod(shape) * type_size // block_size
    hexdata = t.get("data_hex")
    if not isinstance(hexdata, str):
        raise ValueError(f"{where}.data_hex: expected a hex string")
    try:
        data = bytes.fromhex(hexdata)
    except ValueError as e:
        raise ValueError(f"{where}.data_hex: {e}") from None
    if len(data) != nbytes:
        raise ValueError(f"{where}: data_hex has {len(data)} bytes, a {tname} tensor of shape {shape} has {nbytes}")
    if "size" in t and t["size"] != nbytes:
        raise ValueError(f"{where}.size: {t['size']!r} but a {tname} tensor of shape {shape} has {nbytes} bytes")
    return name, qtype, shape, data


def build_writer(desc: Any) -> tuple[GGUFWriter, dict]:
    """Validate the description and prepare a GGUFWriter (nothing written yet).
    Returns the writer and the expected read-back JSON (without data_hex)."""
    if not isinstance(desc, dict):
        raise ValueError(f"description must be a JSON object, got {type(desc).__name__}")
    extra = set(desc) - {"version", "byte_order", "alignment", "data_offset", "metadata", "tensors"}
    if extra:
        raise ValueError(f"description: unexpected fields {sorted(extra)}")
    version = desc.get("version", 3)
    if version != 3 or isinstance(version, bool):
        raise Unexpressible(f"version {version!r}: GGUFWriter only writes GGUF version 3 (GGUF_VERSION)")
    byte_order = desc.get("byte_order", "little")
    if byte_order not in ("little", "big"):
        raise ValueError(f"byte_order: expected \"little\" or \"big\", got {byte_order!r}")
    endian = GGUFEndian.BIG if byte_order == "big" else GGUFEndian.LITTLE
    metadata = desc.get("metadata", [])
    tensors = desc.get("tensors", [])
    if not isinstance(metadata, list):
        raise ValueError("metadata: expected a list")
    if not isinstance(tensors, list):
        raise ValueError("tensors: expected a list")

    # arch="" : GGUFWriter.__init__ calls add_architecture() ->
    # add_string("general.architecture", arch), which skips empty strings, so
    # no key is added behind our back.
    with gguf_py_read.gguf_py_recursion_limit():
        w = GGUFWriter(None, arch="", endianess=endian)
    if w.kv_data != [{}]:
        raise AssertionError(f"internal: GGUFWriter added keys by itself: {list(w.kv_data[0])}")

    seen: set[str] = set()
    alignment = GGUF_DEFAULT_ALIGNMENT
    for idx, entry in enumerate(metadata):
        key, value, vtype, sub_type = parse_kv(entry, idx)
        if key in seen:
            raise Unexpressible(f"metadata[{idx}]: duplicate key {key!r}: GGUFWriter keeps KVs in a dict, "
                                f"a second add_key_value() overwrites the first value in place")
        seen.add(key)
        if key == ALIGNMENT_KEY:
            if vtype != GGUFValueType.UINT32:
                raise Unexpressible(f"metadata[{idx}]: {ALIGNMENT_KEY} of type {entry['type']}: GGUFWriter only "
                                    f"aligns by a uint32 {ALIGNMENT_KEY} (add_custom_alignment), and "
                                    f"GGUFReader refuses any other type")
            # validates (non-zero power of two), sets data_alignment and adds
            # the uint32 key at this position in the insertion order
            try:
                w.add_custom_alignment(value)
            except ValueError as e:
                raise Unexpressible(f"metadata[{idx}]: {ALIGNMENT_KEY}={value}: add_custom_alignment: {e}") from None
            alignment = value
        else:
            w.add_key_value(key, value, vtype, sub_type)
        # Pack it now with GGUFWriter's own code so that an error names the key
        # (write_kv_data_to_file packs all keys at once).
        try:
            with gguf_py_read.gguf_py_recursion_limit():
                w._pack_val(value, vtype, add_vtype=True, sub_type=sub_type)
        except Exception as e:  # noqa: BLE001
            raise Unexpressible(f"metadata[{idx}] ({key!r}): GGUFWriter._pack_val: {type(e).__name__}: {e}") from None

    if "alignment" in desc and desc["alignment"] != alignment:
        raise Unexpressible(
            f"alignment {desc['alignment']!r} but the file's alignment would be {alignment} "
            f"({'from ' + ALIGNMENT_KEY if ALIGNMENT_KEY in seen else 'no ' + ALIGNMENT_KEY + ' key: default'}); "
            f"GGUFWriter can only use a custom alignment via add_custom_alignment(), which writes a uint32 "
            f"{ALIGNMENT_KEY} key - put that key in metadata")

    expected_tensors = []
    offset = 0
    names: set[str] = set()
    for idx, t in enumerate(tensors):
        name, qtype, shape, data = parse_tensor(t, idx)
        if name in names:
            raise Unexpressible(f"tensors[{idx}]: duplicate tensor name {name!r}: GGUFWriter refuses it "
                                f"(ValueError: Duplicated tensor name)")
        names.add(name)
        if "offset" in t and t["offset"] != offset:
            raise Unexpressible(f"tensors[{idx}] ({name!r}).offset: {t['offset']!r} but GGUFWriter puts this "
                                f"tensor at {offset} (tensors are laid out in order, each at the previous "
                                f"offset + size rounded up to the alignment {alignment})")
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        if shape:
            # numpy (row-major) byte shape: reversed ne, innermost dim in bytes
            byte_shape = tuple(reversed(shape[1:])) + (shape[0] // block_size * type_size,)
            arr = np.frombuffer(data, dtype=np.uint8).reshape(byte_shape)
            # uint8 + raw_dtype: GGUFWriter converts the byte shape back to the
            # element shape (quant_shape_from_byte_shape) and writes it reversed
            # (ne[0] first). tensor_endianess = the file's: no byteswap.
            w.add_tensor(name, arr, raw_dtype=qtype, tensor_endianess=endian)
        else:
            # 0 dimensions: a 0-d array of the native numpy type holding the
            # raw bytes (its dtype picks the ggml type, its shape () gives
            # n_dims 0); tensor_endianess = the file's: no byteswap.
            arr = np.frombuffer(data, dtype=PLAIN_NUMPY_TYPES[qtype]).reshape(())
            w.add_tensor(name, arr, tensor_endianess=endian)
        expected_tensors.append({"name": name, "type": gguf_py_read.ggml_type_name(qtype),
                                 "shape": list(shape), "offset": offset, "size": len(data)})
        offset += GGUFWriter.ggml_pad(len(data), alignment)

    expected = {"version": 3, "byte_order": byte_order, "alignment": alignment,
                "metadata": [canonical_kv(e) for e in metadata], "tensors": expected_tensors}
    if "data_offset" in desc:
        expected["data_offset"] = desc["data_offset"]
    return w, expected


def canonical_kv(entry: dict) -> dict:
    """The description's KV as the reader will print it (floats normalised)."""
    out = {"key": entry["key"], "type": entry["type"]}
    if entry["type"] == "array":
        out["element_type"] = entry["element_type"]
        out["value"] = [canonical_value(v, entry["element_type"]) for v in entry["value"]]
    else:
        out["value"] = canonical_value(entry["value"], entry["type"])
    return out


def canonical_value(v: Any, type_name: str) -> Any:
    if type_name == "array":
        return {"element_type": v["element_type"],
                "value": [canonical_value(x, v["element_type"]) for x in v["value"]]}
    if type_name in ("float32", "float64"):
        return gguf_py_read.json_float(parse_float(v, VALUE_TYPES[type_name], "value"))
    return v


def write(desc: Any, out: str) -> None:
    w, expected = build_writer(desc)
    out_path = Path(out)
    tmp = out_path.with_name(f".{out_path.name}.tmp-{os.getpid()}")
    try:
        with gguf_py_read.gguf_py_recursion_limit():
            w.write_header_to_file(path=tmp)
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
        verify(tmp, desc, expected)
        os.replace(tmp, out_path)
    except BaseException:
        w.close()
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def verify(path: Path, desc: dict, expected: dict) -> None:
    """Read the file back with GGUFReader and compare with the description."""
    got = gguf_py_read.dump(str(path))
    if "data_offset" not in expected:
        expected = dict(expected, data_offset=got["data_offset"])
    for field in ("version", "byte_order", "alignment", "data_offset", "metadata", "tensors"):
        # compare as JSON text: distinguishes -0.0 from 0.0 and 1 from 1.0
        if json.dumps(got[field], sort_keys=True) != json.dumps(expected[field], sort_keys=True):
            raise Unexpressible(f"read-back mismatch in {field!r}: the file GGUFWriter wrote has "
                                f"{json.dumps(got[field])[:500]}, the description asks for "
                                f"{json.dumps(expected[field])[:500]}")
    with open(path, "rb") as f:
        for t, td in zip(got["tensors"], desc.get("tensors", [])):
            f.seek(got["data_offset"] + t["offset"])
            if f.read(t["size"]) != bytes.fromhex(td["data_hex"]):
                raise AssertionError(f"tensor {t['name']!r}: bytes in the file differ from data_hex")


def error_line(e: Exception) -> str:
    """The --serve answer to a request that failed with `e`."""
    return json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}, ensure_ascii=False)


def answer_line(req: Any) -> str:
    """The --serve answer to one parsed request."""
    try:
        if not isinstance(req, dict) or "desc" not in req or not isinstance(req.get("out"), str):
            raise ValueError('request must be a JSON object {"desc": {...}, "out": "<path>"}')
        write(req["desc"], req["out"])
    except Exception as e:  # noqa: BLE001 - never die on a bad request
        return error_line(e)
    return json.dumps({"ok": True}, ensure_ascii=False)


def serve() -> int:
    return gguf_py_read.serve_json_lines(answer_line, error_line)


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
    sys.setrecursionlimit(gguf_py_read.ADAPTER_RECURSION_LIMIT)
    if argv == ["--serve"]:
        return serve()
    if len(argv) != 2:
        print(f"usage: {sys.argv[0]} DESC.json OUT.gguf | --serve", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            desc = json.load(f)
        write(desc, argv[1])
    except Exception as e:  # noqa: BLE001
        print(f"gguf_py_write: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
