#!/usr/bin/env python3
"""Peer adapter: gguf-py's file-name convention and parameter counts, for
differential tests (gguf-py 0.19.0, pinned by scripts/peers.sh).

Usage:
    gguf_py_naming.py --serve
        One JSON request per stdin line, one JSON answer line per request on
        stdout: {"ok": <result>} or {"error": "ExcType: message"}. Never dies
        on a bad request; flushes after each answer; ignores blank lines;
        ends at EOF.

Requests:
    {"fn": "size_label", "args": [total, shared, expert, expert_count]}
        -> gguf.size_label(...) (utility.py), a string.
    {"fn": "rounded", "args": [count, min_digits]}
        -> gguf.utility.model_weight_count_rounded_notation(count, min_digits).
    {"fn": "naming_convention", "args": [model_name, base_name, finetune,
                                         version, size_label, output_type,
                                         model_type]}
        each a string or null -> gguf.naming_convention(...), a string.
    {"fn": "parameter_count", "tensors": [{"name": "w", "shape": [ne0, ne1]}]}
        shapes in GGUF order (ne[0] first) -> [total, shared, expert,
        expert_count] from GGUFWriter.get_total_parameter_count(), as decimal
        strings (Python's integers are unbounded, JSON readers' often not), after
        adding each tensor with GGUFWriter.add_tensor_info(name,
        reversed shape (numpy order), float32, 0) to a writer that never
        opens a file (path=None, arch="", no splitting).
    {"fn": "format", "args": [x, decimals]}
        -> f"{x:.{decimals}f}" (x a JSON number, read as a Python float).
    {"fn": "batch", "calls": [request, ...]}
        -> a list with each request's answer object, in order.

Only the standard library, numpy and gguf are used. Logging is disabled
(GGUFWriter warns on stderr when it cannot measure a LoRA adapter).
"""
from __future__ import annotations

import json
import logging
import sys
from typing import Any

import numpy as np

import gguf
from gguf.utility import model_weight_count_rounded_notation


def _str_or_none(v: Any, what: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise TypeError(f"{what} must be a string or null, not {type(v).__name__}")


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} must be an integer, not {type(v).__name__}")
    return v


def parameter_count(tensors: Any) -> list[int]:
    if not isinstance(tensors, list):
        raise TypeError("tensors must be a list")
    writer = gguf.GGUFWriter(path=None, arch="")
    for t in tensors:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) \
                or not isinstance(t.get("shape"), list):
            raise TypeError('each tensor must be {"name": str, "shape": [int, ...]}')
        ne = [_int(d, "a dimension") for d in t["shape"]]
        writer.add_tensor_info(t["name"], tuple(reversed(ne)), np.dtype(np.float32), 0)
    return [str(n) for n in writer.get_total_parameter_count()]


def call(req: Any) -> Any:
    if not isinstance(req, dict) or not isinstance(req.get("fn"), str):
        raise ValueError('request must be a JSON object {"fn": "...", ...}')
    fn = req["fn"]
    if fn not in ("batch", "parameter_count", "size_label", "rounded", "naming_convention", "format"):
        raise ValueError(f"unknown fn {fn!r}")
    if fn == "batch":
        calls = req.get("calls")
        if not isinstance(calls, list):
            raise TypeError("calls must be a list")
        return [answer(c) for c in calls]
    if fn == "parameter_count":
        return parameter_count(req.get("tensors"))
    args = req.get("args")
    if not isinstance(args, list):
        raise TypeError("args must be a list")
    if fn == "size_label":
        if len(args) != 4:
            raise TypeError("size_label takes 4 arguments")
        return gguf.size_label(*(_int(a, "an argument") for a in args))
    if fn == "rounded":
        if len(args) != 2:
            raise TypeError("rounded takes 2 arguments")
        return model_weight_count_rounded_notation(_int(args[0], "count"), _int(args[1], "min_digits"))
    if fn == "naming_convention":
        if len(args) != 7:
            raise TypeError("naming_convention takes 7 arguments")
        return gguf.naming_convention(*(_str_or_none(a, "an argument") for a in args))
    if fn == "format":
        if len(args) != 2 or not isinstance(args[0], (int, float)) or isinstance(args[0], bool):
            raise TypeError("format takes a number and a count of decimals")
        return f"{float(args[0]):.{_int(args[1], 'decimals')}f}"
    raise AssertionError(fn)


def answer(req: Any) -> dict[str, Any]:
    try:
        return {"ok": call(req)}
    except Exception as e:  # noqa: BLE001 - never die on a bad request
        return {"error": f"{type(e).__name__}: {e}"}


def serve() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except Exception as e:  # noqa: BLE001
            out = {"error": f"{type(e).__name__}: {e}"}
        else:
            out = answer(req)
        sys.stdout.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
    sys.stdin.reconfigure(encoding="utf-8")  # type: ignore[attr-defined]
    logging.disable(logging.CRITICAL)
    if argv != ["--serve"]:
        print(f"usage: {sys.argv[0]} --serve", file=sys.stderr)
        return 2
    return serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
