#!/usr/bin/env python3
"""Peer adapter: gguf-py (PyPI ``gguf``, pinned to 0.19.0 by scripts/peers.sh)
speaking the generic peer protocol of conform/peers/README.md ("Generic peer
protocol"), the same JSON lines as the ggml adapter (ggml_peer.cpp).

It reuses gguf_py_read.py (``dump``) and gguf_py_write.py (``write``), which
must sit in the same directory; they are imported as modules, unchanged.

Usage:
    gguf_py_peer.py --serve          one JSON request per stdin line, exactly one
                                     JSON response line per request on stdout
    gguf_py_peer.py --capabilities   print the "capabilities" response
    gguf_py_peer.py --types          print the "types" response
    gguf_py_peer.py FILE.gguf        print the "read" response; exit 0 if ok

Requests (every response is {"ok": true, ...} or {"ok": false, "error": "..."};
a request's "id" is echoed; a field an op does not know is refused):
    {"op":"capabilities"}
    {"op":"read","path":P,"full":false}      -> {"ok":true,"file":<gguf_py_read.dump(P)>}
    {"op":"write","desc":D,"out":P}          -> gguf_py_write.write(D, P); {"ok":true,"bytes":N,"data_offset":O}
    {"op":"types"}                           -> GGML_QUANT_SIZES + what gguf.quants converts
    {"op":"dequantize","type":T,"input":IN,"output":OUT,"n":N}
    {"op":"quantize","type":T,"input":IN,"output":OUT,"nrows":R,"n_per_row":K,"ref":false}
    {"op":"bench","what":"dequantize"|"quantize","type":T,"input":IN,"reps":K,...}

Never dies on a bad request: bad JSON, unknown op, bad fields, gguf-py
exceptions all give {"ok": false, "error": "ExcType: message"}. Blank lines
are ignored; stdout is flushed after each line; EOF ends the process (0).
Only the standard library, numpy and gguf are used.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import time
from typing import Any, Callable

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import gguf  # noqa: E402
import gguf.quants  # noqa: E402
from gguf import GGMLQuantizationType  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES  # noqa: E402

import gguf_py_read  # noqa: E402  (captures the default recursion limit: import before changing it)
import gguf_py_write  # noqa: E402

GGUF_PY_VERSION = "0.19.0"
MAX_ELEMENTS = 1 << 40  # the ggml adapter's bound on n / nrows * n_per_row

# ggml spelling (q4_K, iq2_xxs, bf16) -> gguf-py member; ids too
TYPE_BY_NAME: dict[str, GGMLQuantizationType] = {gguf_py_read.ggml_type_name(t): t for t in GGMLQuantizationType}
TYPE_BY_ID: dict[int, GGMLQuantizationType] = {int(t): t for t in GGMLQuantizationType}

# ggml's block_q8_1 is 36 bytes; gguf-py 0.19's GGML_QUANT_SIZES says 40, so
# gguf-py mis-sizes every q8_1 tensor (reads 40 bytes per block, refuses the
# description of a 36-byte block): it is left out of the declared types.
MISSIZED_TYPES = {GGMLQuantizationType.Q8_1}

# 0-dimension tensors: GGUFReader reads them only for these types (an
# IndexError for the others, bf16 included) and GGUFWriter can only be given
# them as typed 0-d numpy arrays of these types (gguf_py_write.PLAIN_NUMPY_TYPES)
SCALAR_TYPES = list(gguf_py_write.PLAIN_NUMPY_TYPES)


class Refused(ValueError):
    """A request the adapter refuses before calling gguf-py."""


# ---------------------------------------------------------------------------
# request fields


def check_fields(req: dict, allowed: set[str], where: str) -> None:
    for k in req:
        if k not in allowed:
            raise Refused(f"{where}: unexpected field {json.dumps(k)}")


def get_str(req: dict, name: str) -> str:
    if name not in req:
        raise Refused(f"missing field {json.dumps(name)}")
    v = req[name]
    if not isinstance(v, str):
        raise Refused(f"field {json.dumps(name)}: expected a string, got {json.dumps(v)}")
    return v


def get_bool(req: dict, name: str, default: bool) -> bool:
    v = req.get(name, default)
    if not isinstance(v, bool):
        raise Refused(f"field {json.dumps(name)}: expected true/false, got {json.dumps(v)}")
    return v


def get_int(req: dict, name: str, lo: int, hi: int) -> int:
    if name not in req:
        raise Refused(f"missing field {json.dumps(name)}")
    v = req[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise Refused(f"field {json.dumps(name)}: expected an integer, got {json.dumps(v)}")
    if not lo <= v <= hi:
        raise Refused(f"field {json.dumps(name)}: {v} out of range [{lo}, {hi}]")
    return v


def get_type(req: dict) -> GGMLQuantizationType:
    if "type" not in req:
        raise Refused('missing field "type"')
    v = req["type"]
    if isinstance(v, int) and not isinstance(v, bool):
        if v not in TYPE_BY_ID:
            raise Refused(f"type: ggml type id {v} is unknown to gguf-py {GGUF_PY_VERSION} "
                          f"(GGMLQuantizationType has {sorted(TYPE_BY_ID)})")
        return TYPE_BY_ID[v]
    if isinstance(v, str):
        if v not in TYPE_BY_NAME:
            raise Refused(f"type: unknown ggml type name {json.dumps(v)} (use ggml_type_name spelling, "
                          f"e.g. \"q4_K\", or the id)")
        return TYPE_BY_NAME[v]
    raise Refused(f"type: expected a ggml type id or name, got {json.dumps(v)}")


def read_input(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def write_output(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


# ---------------------------------------------------------------------------
# what gguf.quants converts


def _overrides(qtype: GGMLQuantizationType, method: str) -> bool:
    cls = gguf.quants._type_traits.get(qtype)
    return cls is not None and method in cls.__dict__


def can_dequantize(qtype: GGMLQuantizationType) -> bool:
    # gguf.quants.dequantize: F32 (view), F16 (astype), else a class with dequantize_blocks
    return qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16) or _overrides(qtype, "dequantize_blocks")


def can_quantize(qtype: GGMLQuantizationType) -> bool:
    # gguf.quants.quantize: F32, F16 (astype), else a class with quantize_blocks
    return qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16) or _overrides(qtype, "quantize_blocks")


def op_types(req: dict) -> dict:
    check_fields(req, {"op", "id"}, "types")
    types = []
    for t in GGMLQuantizationType:
        blck, size = GGML_QUANT_SIZES[t]
        types.append({"id": int(t), "name": gguf_py_read.ggml_type_name(t), "blck": blck, "size": size,
                      "quantized": blck > 1, "dequantize": can_dequantize(t), "quantize": can_quantize(t)})
    return {"ok": True, "count": len(types), "gguf_py_version": importlib.metadata.version("gguf"),
            "gguf_version": gguf.GGUF_VERSION, "default_alignment": gguf.GGUF_DEFAULT_ALIGNMENT,
            "types": types}


# ---------------------------------------------------------------------------
# dequantize / quantize / bench


def prepare_dequantize(req: dict) -> tuple[GGMLQuantizationType, int, np.ndarray]:
    qtype = get_type(req)
    n = get_int(req, "n", 0, MAX_ELEMENTS)
    blck, size = GGML_QUANT_SIZES[qtype]
    name = gguf_py_read.ggml_type_name(qtype)
    if n % blck:
        raise Refused(f"n = {n} is not a multiple of the {name} block size {blck}")
    if not can_dequantize(qtype):
        raise Refused(f"gguf.quants cannot dequantize {name} (no dequantize_blocks; "
                      f"gguf.quants.dequantize raises NotImplementedError)")
    data = read_input(get_str(req, "input"))
    need = n // blck * size
    if len(data) != need:
        raise Refused(f"input has {len(data)} bytes, {n} elements of {name} are {need} "
                      f"(gguf-py's GGML_QUANT_SIZES: {size} bytes per {blck})")
    return qtype, n, np.frombuffer(data, dtype=np.uint8)


def run_dequantize(qtype: GGMLQuantizationType, n: int, blocks: np.ndarray) -> bytes:
    if n == 0:
        return b""
    out = gguf.quants.dequantize(blocks, qtype)
    out = np.asarray(out, dtype=np.float32).reshape(-1)
    if out.size != n:
        raise AssertionError(f"internal: gguf.quants.dequantize gave {out.size} values, expected {n}")
    return out.astype("<f4", copy=False).tobytes()


def prepare_quantize(req: dict) -> tuple[GGMLQuantizationType, int, int, np.ndarray]:
    qtype = get_type(req)
    nrows = get_int(req, "nrows", 0, MAX_ELEMENTS)
    n_per_row = get_int(req, "n_per_row", 1, MAX_ELEMENTS)
    get_bool(req, "ref", False)  # one quantizer in gguf.quants (a port of ggml's reference ones)
    blck, _ = GGML_QUANT_SIZES[qtype]
    name = gguf_py_read.ggml_type_name(qtype)
    if n_per_row % blck:
        raise Refused(f"n_per_row = {n_per_row} is not a multiple of the {name} block size {blck}")
    if nrows * n_per_row > MAX_ELEMENTS:
        raise Refused("nrows * n_per_row too large")
    if not can_quantize(qtype):
        raise Refused(f"gguf.quants cannot quantize {name} (no quantize_blocks; "
                      f"gguf.quants.quantize raises NotImplementedError)")
    raw = read_input(get_str(req, "input"))
    need = nrows * n_per_row * 4
    if len(raw) != need:
        raise Refused(f"input has {len(raw)} bytes, {nrows} rows of {n_per_row} f32 are {need}")
    return qtype, nrows, n_per_row, np.frombuffer(raw, dtype="<f4").reshape(nrows, n_per_row)


def run_quantize(qtype: GGMLQuantizationType, nrows: int, n_per_row: int, rows: np.ndarray) -> bytes:
    blck, size = GGML_QUANT_SIZES[qtype]
    expect = nrows * (n_per_row // blck) * size
    if nrows == 0:
        return b""
    out = np.asarray(gguf.quants.quantize(rows, qtype))
    if out.dtype.byteorder == ">":
        raise AssertionError("internal: big-endian result")
    data = out.tobytes()
    if len(data) != expect:
        raise AssertionError(f"internal: gguf.quants.quantize gave {len(data)} bytes, expected {expect}")
    return data


def op_dequantize(req: dict) -> dict:
    check_fields(req, {"op", "id", "type", "input", "output", "n"}, "dequantize")
    output = get_str(req, "output")
    qtype, n, blocks = prepare_dequantize(req)
    data = run_dequantize(qtype, n, blocks)
    write_output(output, data)
    return {"ok": True, "bytes": len(data)}


def op_quantize(req: dict) -> dict:
    check_fields(req, {"op", "id", "type", "input", "output", "nrows", "n_per_row", "ref"}, "quantize")
    output = get_str(req, "output")
    qtype, nrows, n_per_row, rows = prepare_quantize(req)
    data = run_quantize(qtype, nrows, n_per_row, rows)
    write_output(output, data)
    return {"ok": True, "bytes": len(data)}


def op_bench(req: dict) -> dict:
    what = get_str(req, "what")
    reps = get_int(req, "reps", 1, 1_000_000)
    run: Callable[[], Any]
    if what == "dequantize":
        check_fields(req, {"op", "id", "what", "type", "input", "n", "reps"}, "bench dequantize")
        qtype, n, blocks = prepare_dequantize(req)
        run = lambda: run_dequantize(qtype, n, blocks)  # noqa: E731
    elif what == "quantize":
        check_fields(req, {"op", "id", "what", "type", "input", "nrows", "n_per_row", "ref", "reps"}, "bench quantize")
        qtype, nrows, n_per_row, rows = prepare_quantize(req)
        run = lambda: run_quantize(qtype, nrows, n_per_row, rows)  # noqa: E731
    else:
        raise Refused(f"bench: \"what\" must be \"dequantize\" or \"quantize\", got {json.dumps(what)}")
    ns = []
    clock = time.perf_counter_ns
    for _ in range(reps):
        t0 = clock()
        run()
        ns.append(clock() - t0)
    return {"ok": True, "ns": ns}


# ---------------------------------------------------------------------------
# read / write


def op_read(req: dict) -> dict:
    check_fields(req, {"op", "id", "path", "full"}, "read")
    path = get_str(req, "path")
    # GGUFReader always memory-maps the data and makes a view of every tensor
    # (a tensor whose data is not inside the file fails), so "full" changes nothing
    get_bool(req, "full", False)
    return {"ok": True, "file": gguf_py_read.dump(path)}


def op_write(req: dict) -> dict:
    check_fields(req, {"op", "id", "desc", "out", "force"}, "write")
    out = get_str(req, "out")
    if get_bool(req, "force", False):
        raise Refused("\"force\":true: gguf_py_write.py writes a description faithfully or not at all "
                      "(it has no unfaithful mode)")
    if "desc" not in req:
        raise Refused('missing field "desc"')
    # gguf_py_write.verify reads the file back with gguf_py_read.dump: keep
    # what it read (for data_offset) instead of reading the file again
    seen: list[dict] = []
    real_dump = gguf_py_read.dump

    def capturing_dump(path: str) -> dict:
        got = real_dump(path)
        seen.append(got)
        return got

    gguf_py_read.dump = capturing_dump
    try:
        gguf_py_write.write(req["desc"], out)
    finally:
        gguf_py_read.dump = real_dump
    resp: dict[str, Any] = {"ok": True, "bytes": os.path.getsize(out)}
    if seen:
        resp["data_offset"] = seen[-1]["data_offset"]
    return resp


# ---------------------------------------------------------------------------
# capabilities (each value verified by running this adapter: README.md,
# "Capabilities of the gguf-py adapter")


def declared_types() -> list[str]:
    return [gguf_py_read.ggml_type_name(t) for t in GGMLQuantizationType if t not in MISSIZED_TYPES]


def op_capabilities(req: dict) -> dict:
    check_fields(req, {"op", "id"}, "capabilities")
    types = declared_types()
    scalars = [gguf_py_read.ggml_type_name(t) for t in SCALAR_TYPES]
    # Arrays nest as deep as Python's default recursion limit lets GGUFReader
    # (_get_field_parts) and GGUFWriter (_pack_val, then the read-back)
    # recurse, measured by bisection through this adapter's --serve read and
    # write ops: 985 levels read (986: RecursionError), 982 written (983:
    # RecursionError).
    return {
        "ok": True, "name": "gguf-py", "version": importlib.metadata.version("gguf"),
        "ops": ["capabilities", "read", "write", "types", "dequantize", "quantize", "bench"],
        # GGUFValueType's members, by the spec's names
        "value_types": [gguf_py_read.VALUE_TYPE_NAMES[t] for t in gguf.GGUFValueType],
        "read": {
            "versions": [2, 3],                     # READER_SUPPORTED_VERSIONS
            "byte_orders": ["little", "big"],
            "max_array_depth": 985,
            "strict_utf8": True,                    # UnicodeDecodeError (keys, names); values: the adapter's ValueError
            "strict_bools": False,                  # np.bool_: any non-zero byte is true
            "keeps_dimension_count": True,
            "alignment": "power_of_two",            # "Invalid alignment"; "Bad type" unless uint32
            "layout": "any",                        # offsets not checked (data must be inside the file)
            "magic_fugg": False,                    # "GGUF magic invalid"
            "tensor_types": types,
            "scalar_tensor_types": scalars,
            "full_load": True,                      # accepted; GGUFReader always maps the data
            "tensor_size": True,
            "nested_element_types": True,
            "strings_with_nul": True,
            "leading_bom_kept": True,
            "padded_data_offset_without_tensors": True,
            "key_order": "file",
            "unreadable_keys": ["GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"],  # KeyError: Duplicate
            "limits": {},
        },
        "write": {
            "versions": [3],
            "byte_orders": ["little", "big"],
            "empty_arrays": False,                  # "Invalid GGUF metadata array. Empty array"
            "max_array_depth": 982,
            "inner_array_types": ["int32", "float32", "bool", "string", "array"],
            "top_inner_array_types": ["uint8", "int32", "float32", "bool", "string", "array"],
            "nan_payloads": False,                  # "nan" -> struct.pack: the quiet NaN
            "alignments": None,                     # any power of two, via add_custom_alignment
            "layout": "ggml",
            "tensor_types": types,
            "scalar_tensor_types": scalars,
            "zero_size_tensors": True,
            "keeps_dimension_count": True,
            "strings_with_nul": True,
            "empty_keys": True,
            "limits": {},
        },
    }


# ---------------------------------------------------------------------------
# dispatch

OPS: dict[str, Callable[[dict], dict]] = {
    "capabilities": op_capabilities, "read": op_read, "write": op_write, "types": op_types,
    "dequantize": op_dequantize, "quantize": op_quantize, "bench": op_bench,
}


def handle(req: Any) -> dict:
    try:
        if not isinstance(req, dict):
            raise Refused("request must be a JSON object")
        op = req.get("op")
        if not isinstance(op, str):
            raise Refused(f"request needs \"op\": {', '.join(OPS)}")
        if op not in OPS:
            raise Refused(f"unknown op {json.dumps(op)} ({', '.join(OPS)})")
        resp = OPS[op](req)
    except Exception as e:  # noqa: BLE001 - never die on a bad request
        resp = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    if isinstance(req, dict) and "id" in req:
        resp["id"] = req["id"]
    return resp


def to_line(obj: dict) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except Exception as e:  # noqa: BLE001
        return json.dumps({"ok": False, "error": f"adapter: cannot encode the response: {type(e).__name__}: {e}"})


def serve() -> int:
    return gguf_py_read.serve_json_lines(
        lambda req: to_line(handle(req)),
        lambda e: to_line({"ok": False, "error": f"bad JSON request: {type(e).__name__}: {e}"}),
    )


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")  # type: ignore[attr-defined]
    sys.setrecursionlimit(gguf_py_read.ADAPTER_RECURSION_LIMIT)
    if argv == ["--serve"]:
        return serve()
    if argv == ["--capabilities"]:
        req: dict = {"op": "capabilities"}
    elif argv == ["--types"]:
        req = {"op": "types"}
    elif len(argv) == 1 and not argv[0].startswith("--"):
        req = {"op": "read", "path": argv[0]}
    else:
        print(f"usage: {sys.argv[0]} --serve | --capabilities | --types | FILE.gguf", file=sys.stderr)
        return 2
    resp = handle(req)
    print(to_line(resp))
    return 0 if resp.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
