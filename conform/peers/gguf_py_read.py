#!/usr/bin/env python3
"""Peer adapter: dump a GGUF file as JSON using the reference reader
``gguf.GGUFReader`` from gguf-py (PyPI ``gguf``, pinned to 0.19.0 by
scripts/peers.sh).

The JSON has the same shape as ``ggufrw dump --json``:

    {"version": 3, "byte_order": "little", "alignment": 32, "data_offset": 96,
     "metadata": [{"key": "k", "type": "uint8", "value": 1},
                  {"key": "a", "type": "array", "element_type": "int16", "value": [1, 2]},
                  {"key": "n", "type": "array", "element_type": "array",
                   "value": [{"element_type": "string", "value": ["x"]}]}],
     "tensors": [{"name": "w", "type": "q4_K", "shape": [256, 2], "offset": 0, "size": 288}]}

Usage:
    gguf_py_read.py FILE.gguf
        Print one JSON object on stdout. If GGUFReader (or decoding a value,
        e.g. invalid UTF-8) raises, print {"error": "ExcType: message"} on
        stdout instead and exit with status 1.
    gguf_py_read.py --serve
        Read one request per stdin line, {"path": "/file.gguf"}, and answer
        one JSON line per request on stdout: the object, or {"error": "..."}.
        Never dies on a bad request; stdout is flushed after each answer.
        Blank lines are ignored. Ends at EOF.

Only the standard library, numpy and gguf are used. Everything structural
(offsets, types, array layout, byte order, alignment, data offset) comes from
what GGUFReader parsed: the metadata values are decoded by walking the
ReaderField ``parts`` that GGUFReader produced (ReaderField.contents() would
flatten nested arrays, so it is not used).
"""
from __future__ import annotations

import contextlib
import json
import math
import sys
from typing import Any, Callable, Iterator

import gguf
from gguf import GGUFReader, GGUFValueType, GGMLQuantizationType, GGUFEndian

# GGUFValueType member -> spec name used in the JSON shape.
VALUE_TYPE_NAMES: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "uint8",
    GGUFValueType.INT8: "int8",
    GGUFValueType.UINT16: "uint16",
    GGUFValueType.INT16: "int16",
    GGUFValueType.UINT32: "uint32",
    GGUFValueType.INT32: "int32",
    GGUFValueType.FLOAT32: "float32",
    GGUFValueType.BOOL: "bool",
    GGUFValueType.STRING: "string",
    GGUFValueType.ARRAY: "array",
    GGUFValueType.UINT64: "uint64",
    GGUFValueType.INT64: "int64",
    GGUFValueType.FLOAT64: "float64",
}

# GGUFReader puts these three pseudo-fields first in reader.fields.
PSEUDO_FIELDS = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")

# gguf-py parses and packs nested arrays recursively, so the nesting depth it
# handles depends on Python's recursion limit. gguf-py itself runs under the
# interpreter's default limit (DEFAULT_RECURSION_LIMIT, 1000); the adapters'
# own recursive code (decoding parts, json) runs under ADAPTER_RECURSION_LIMIT
# so that the adapters are never the component that gives up first.
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()
ADAPTER_RECURSION_LIMIT = 10_000


@contextlib.contextmanager
def gguf_py_recursion_limit() -> Iterator[None]:
    """Run gguf-py code under the interpreter's default recursion limit."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(DEFAULT_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def ggml_type_name(t: GGMLQuantizationType) -> str:
    """ggml's canonical spelling: enum member name lower-cased, except that a
    trailing ``_K`` stays upper case (Q4_K -> q4_K)."""
    name = t.name.lower()
    if name.endswith("_k"):
        name = name[:-2] + "_K"
    return name


def json_float(x: float) -> Any:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _scalar(part: Any, vtype: GGUFValueType) -> Any:
    # part is a 1-element numpy array already viewed in the file's byte order.
    v = part.tolist()[0]
    if vtype in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64):
        return json_float(float(v))
    if vtype == GGUFValueType.BOOL:
        return bool(v)
    return int(v)


def _decode(parts: list, i: int, vtype: GGUFValueType) -> tuple[Any, int]:
    """Decode one value of type vtype whose parts start at parts[i] (the
    layout GGUFReader._get_field_parts produces). Returns (json value, next i).
    For an array the json value is {"element_type": ..., "value": [...]}."""
    if vtype == GGUFValueType.STRING:
        # [length(uint64), bytes(uint8[])]
        data = parts[i + 1].tobytes()
        return data.decode("utf-8"), i + 2
    if vtype == GGUFValueType.ARRAY:
        # [item type(uint32), count(uint64), <parts of each item>...]
        itype = GGUFValueType(int(parts[i][0]))
        count = int(parts[i + 1][0])
        i += 2
        items = []
        for _ in range(count):
            v, i = _decode(parts, i, itype)
            items.append(v)
        return {"element_type": VALUE_TYPE_NAMES[itype], "value": items}, i
    if vtype in VALUE_TYPE_NAMES:
        return _scalar(parts[i], vtype), i + 1
    raise ValueError(f"Unknown/unhandled field type {vtype}")


def field_to_json(field: Any) -> dict:
    # parts: [key length, key bytes, value type, <value parts>...]
    vtype = GGUFValueType(int(field.parts[2][0]))
    try:
        value, end = _decode(field.parts, 3, vtype)
    except UnicodeDecodeError as e:
        raise ValueError(f"string in value of key {field.name!r} is not valid UTF-8: {e}") from e
    if end != len(field.parts):
        raise AssertionError(f"internal: {len(field.parts) - end} undecoded parts in key {field.name!r}")
    out: dict[str, Any] = {"key": field.name, "type": VALUE_TYPE_NAMES[vtype]}
    if vtype == GGUFValueType.ARRAY:
        out["element_type"] = value["element_type"]
        out["value"] = value["value"]
    else:
        out["value"] = value
    return out


def dump(path: str) -> dict:
    with gguf_py_recursion_limit():
        reader = GGUFReader(path, "r")
    try:
        fields = list(reader.fields.values())
        if tuple(f.name for f in fields[:3]) != PSEUDO_FIELDS:
            raise AssertionError("internal: unexpected GGUFReader field layout")
        version = int(fields[0].parts[0][0])
        metadata = [field_to_json(f) for f in fields[3:]]
        tensors = []
        for t in reader.tensors:
            # t.field.parts: [name length, name bytes, n_dims, dims, type, offset]
            offset = int(t.field.parts[5][0])
            assert t.data_offset == reader.data_offset + offset
            tensors.append({
                "name": t.name,
                "type": ggml_type_name(t.tensor_type),
                "shape": [int(d) for d in t.shape],  # file order, ne[0] first
                "offset": offset,  # relative to the data section
                "size": int(t.n_bytes),
            })
        return {
            "version": version,
            "byte_order": "big" if reader.endianess == GGUFEndian.BIG else "little",
            "alignment": int(reader.alignment),
            "data_offset": int(reader.data_offset),
            "metadata": metadata,
            "tensors": tensors,
        }
    finally:
        # release the memory map promptly (matters in --serve mode)
        del reader


def error_json(e: BaseException) -> dict:
    return {"error": f"{type(e).__name__}: {e}"}


def to_line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dump_line(path: str) -> tuple[bool, str]:
    """(ok, one JSON line) for path; never raises for a bad file."""
    try:
        return True, to_line(dump(path))
    except Exception as e:  # noqa: BLE001 - report every failure as JSON
        return False, to_line(error_json(e))


def serve_json_lines(answer: Callable[[Any], str], bad_json: Callable[[Exception], str]) -> int:
    """The --serve loop of the gguf-py adapters: one JSON request per stdin line, answered by
    `answer` (or, for a line that is not JSON, by `bad_json`) with one line on stdout.

    Blank lines are skipped and stdout is flushed after each answer, since the caller waits
    for it before sending the next request; ends at EOF.
    """
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except Exception as e:  # noqa: BLE001 - never die on a bad request
            out = bad_json(e)
        else:
            out = answer(req)
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


def answer_line(req: Any) -> str:
    """The --serve answer to one parsed request."""
    if not isinstance(req, dict) or not isinstance(req.get("path"), str):
        return to_line(error_json(ValueError('request must be a JSON object {"path": "<file>"}')))
    return dump_line(req["path"])[1]


def serve() -> int:
    return serve_json_lines(answer_line, lambda e: to_line(error_json(e)))


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
    sys.setrecursionlimit(ADAPTER_RECURSION_LIMIT)
    if argv == ["--serve"]:
        return serve()
    if len(argv) != 1 or argv[0].startswith("--"):
        print(f"usage: {sys.argv[0]} FILE.gguf | --serve", file=sys.stderr)
        return 2
    ok, out = dump_line(argv[0])
    print(out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
