"""A GGUF file's keys and values, read with struct: the harness reads the sdist's vocabulary
files and the converters' outputs many times a run, and gguf-py's reader, which makes a numpy
view per array element, takes half a minute on one 262,144-token vocabulary.
tests/export_hf/vocab_check.py checks it against that reader on every run."""
import struct
from pathlib import Path

# GGUF value types: struct codes of the scalars (8 is a string, 9 an array).
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_metadata(path) -> dict:
    """A little-endian GGUF file's keys and values as gguf-py's `GGUFReader(path).fields[k]
    .contents()` gives them: ints, floats widened from f32, bools, str, lists."""
    data = Path(path).read_bytes()
    pos = 0

    def take(code):
        nonlocal pos
        (v,) = struct.unpack_from("<" + code, data, pos)
        pos += struct.calcsize(code)
        return v

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return data[pos - n : pos].decode("utf-8")

    def value(ty):
        nonlocal pos
        if ty == 8:
            return string()
        if ty == 9:
            inner, n = take("I"), take("Q")
            if inner in SCALARS:
                code = f"{n}{SCALARS[inner]}"
                v = list(struct.unpack_from("<" + code, data, pos))
                pos += struct.calcsize(code)
                return v
            return [value(inner) for _ in range(n)]
        return take(SCALARS[ty])

    magic, version = data[:4], struct.unpack_from("<I", data, 4)[0]
    assert magic == b"GGUF" and version in (2, 3), (path, magic, version)
    pos = 8
    _tensors, n_kv = take("Q"), take("Q")
    out = {}
    for _ in range(n_kv):
        k = string()
        out[k] = value(take("I"))
    return out
