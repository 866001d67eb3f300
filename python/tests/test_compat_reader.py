"""ggufrw.compat's GGUFReader (and quants.dequantize) against gguf-py 0.19's, attribute by
attribute, on files written by gguf-py and by the native encoder, on Gemma, and on the hostile
corpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ggufrw import _native
from ggufrw import compat
from ggufrw.compat import quants as cq

from compat_support import files as F
from conftest import HOSTILE, hostile_files

HERE = os.path.dirname(os.path.abspath(__file__))


# constants


def test_types_and_sizes_are_the_native_layers(gguf):
    native = {row[0]: row for row in _native.types()}
    assert {int(t) for t in compat.GGMLQuantizationType} == set(native)
    for t in compat.GGMLQuantizationType:
        assert t.name.lower() == native[int(t)][1].lower()
        assert compat.GGML_QUANT_SIZES[t] == (native[int(t)][2], native[int(t)][3])
    # every gguf-py type is ours, with its name and (but Q8_1) its size
    for t in gguf.GGMLQuantizationType:
        assert compat.GGMLQuantizationType(int(t)).name == t.name
        if t.name != "Q8_1":
            assert compat.GGML_QUANT_SIZES[compat.GGMLQuantizationType(int(t))] == gguf.GGML_QUANT_SIZES[t]
    assert [(v.name, int(v)) for v in compat.GGUFValueType] == [(v.name, int(v)) for v in gguf.GGUFValueType]
    assert [(v.name, int(v)) for v in compat.GGUFEndian] == [(v.name, int(v)) for v in gguf.GGUFEndian]
    for val in ["s", b"b", [1], 1.5, True, 3]:
        assert compat.GGUFValueType.get_type(val) == gguf.GGUFValueType.get_type(val)


# files written by gguf-py


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("alignment", [None, 64, 8])
def test_files_gguf_py_writes(gguf, tmp, big, alignment):
    path = str(tmp / "sample.gguf")
    F.gguf_py_sample(gguf, path, big=big, alignment=alignment)
    ref, ours = gguf.GGUFReader(path), compat.GGUFReader(path)
    F.same_reader(ref, ours)
    assert len(ours.fields) > 35 and len(ours.tensors) >= 10
    assert ours.endianess == (compat.GGUFEndian.BIG if big else compat.GGUFEndian.LITTLE)
    assert ours.byte_order == ("S" if big else "I")


# files written by the native encoder: v2 and v3, both byte orders, nested arrays


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("order", ["little", "big"])
def test_files_the_native_encoder_writes(gguf, tmp, version, order):
    path = str(tmp / "n.gguf")
    types = [0, 1, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 24, 25, 26, 27, 28, 30]
    F.encode_native(path, version, order, F.native_metadata(alignment=16), F.sample_tensors(types))
    ref, ours = gguf.GGUFReader(path), compat.GGUFReader(path)
    F.same_reader(ref, ours)
    nested = ours.fields["n.deep"]
    assert [t.name for t in nested.types] == ["ARRAY", "ARRAY", "ARRAY", "INT16"]
    assert ours.fields["n.empty"].types == [compat.GGUFValueType.ARRAY]


def test_every_ggml_type_gguf_py_knows(gguf, tmp):
    path = str(tmp / "types.gguf")
    types = [int(t) for t in gguf.GGMLQuantizationType]
    F.encode_native(path, 3, "little", [("general.architecture", F.STR, "x", None)], F.sample_tensors(types))
    ref, ours = gguf.GGUFReader(path), compat.GGUFReader(path)
    F.same_reader(ref, ours, skip_types=(F.Q8_1,))
    for r, o in zip(ref.tensors, ours.tensors):
        if int(o.tensor_type) == F.Q8_1:
            # gguf-py sizes Q8_1 blocks as 40 bytes; ggml's are 36
            assert o.n_bytes == o.n_elements // 32 * 36
            assert r.n_bytes == r.n_elements // 32 * 40
            start, length = ours._native.tensor_range(ours.tensors.index(o))
            assert o.n_bytes == length == o.data.nbytes


def test_a_type_gguf_py_does_not_know(gguf, tmp):
    path = str(tmp / "q2_0.gguf")
    F.encode_native(path, 3, "little", [], F.sample_tensors([F.Q2_0, 0]))
    with pytest.raises(ValueError):
        gguf.GGUFReader(path)
    ours = compat.GGUFReader(path)
    t = ours.tensors[0]
    assert t.tensor_type == compat.GGMLQuantizationType.Q2_0
    assert t.n_bytes == t.n_elements // 64 * 18 == t.data.nbytes
    assert t.data.dtype == np.uint8 and t.data.shape == (2 * 18,)


def test_version_1_and_bad_magic_are_refused_as_gguf_py_refuses_them(gguf, tmp):
    v1 = tmp / "v1.gguf"
    F.encode_native(v1, 1, "little", [("a", F.U32, 1, None)], [])
    for mod in (gguf, compat):
        with pytest.raises(ValueError, match="version 1"):
            mod.GGUFReader(str(v1))
    bad = tmp / "bad.gguf"
    bad.write_bytes(b"GGUX" + bytes(60))
    for mod in (gguf, compat):
        with pytest.raises(ValueError, match="magic"):
            mod.GGUFReader(str(bad))
    for mod in (gguf, compat):
        with pytest.raises(FileNotFoundError):
            mod.GGUFReader(str(tmp / "missing.gguf"))


def test_duplicates_raise_what_gguf_py_raises(gguf, tmp):
    path = tmp / "dup.gguf"
    F.encode_native(path, 3, "little", [("k", F.U8, 1, None), ("k", F.U8, 2, None)], [])
    for mod in (gguf, compat):
        with pytest.raises(KeyError, match="Duplicate k"):
            mod.GGUFReader(str(path))
    t = F.sample_tensors([0])[0]
    F.encode_native(path, 3, "little", [], [t, t])
    for mod in (gguf, compat):
        with pytest.raises(ValueError, match="duplicated tensor"):
            mod.GGUFReader(str(path))


def test_decode_errors_are_value_errors_and_native_errors(tmp):
    path = tmp / "cut.gguf"
    data = F.encode_native(path, 3, "little", F.native_metadata(), [])
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(compat.DecodeError) as info:
        compat.GGUFReader(str(path))
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, _native.Error)


def test_fields_are_lazy_and_contents_does_not_build_parts(tmp):
    path = str(tmp / "lazy.gguf")
    F.encode_native(path, 3, "little", F.native_metadata(), F.sample_tensors([0, 2]))
    ours = compat.GGUFReader(path)
    for field in ours.fields.values():
        field.types, field.data, field.contents()
    # every field but the nested arrays (keys n.*), whose contents are read from their parts
    kv = [f for k, f in ours.fields.items() if not k.startswith(("GGUF.", "n."))]
    assert len(kv) >= 30 and all(f._parts is None for f in kv)
    assert all(t.field._parts is None for t in ours.tensors)
    tokens = ours.fields["a.str"]
    assert [p.tobytes() for p in tokens.parts[6::2]] == [s.encode() for s in tokens.contents()]


def test_field_behaves_as_a_named_tuple(gguf, tmp):
    path = str(tmp / "nt.gguf")
    F.encode_native(path, 3, "little", F.native_metadata(), [])
    ref = gguf.GGUFReader(path).fields["a.u32"]
    ours = compat.GGUFReader(path).fields["a.u32"]
    offset, name, parts, data, types = ours
    assert (offset, name, data, types) == (ref.offset, ref.name, ref.data, ref.types)
    assert ours[1] == ref[1] and len(ours) == len(ref) == 5
    assert ours._asdict().keys() == ref._asdict().keys()
    made = compat.ReaderField(3, "x")
    assert (made.parts, made.data, made.types, made.contents()) == ([], [-1], [], None)


# writes through parts (mode r+), as gguf_set_metadata makes them


def test_writes_through_parts_reach_the_file(gguf, tmp):
    src = str(tmp / "src.gguf")
    F.gguf_py_sample(gguf, src)
    copies = {}
    for mod in (gguf, compat):
        dst = str(tmp / f"{mod.__name__}.gguf")
        shutil.copyfile(src, dst)
        reader = mod.GGUFReader(dst, "r+")
        f = reader.fields["t.u32"]
        f.parts[f.data[0]][0] = 1234
        s = reader.fields["a.i32"]
        s.parts[s.data[2]][0] = -77
        t = reader.fields["t.str"]
        t.parts[t.data[0]][:] = ord("z")
        # contents() sees the write
        assert f.contents() == 1234 and s.contents()[2] == -77 and set(t.contents()) == {"z"}
        reader.tensors[0].data.reshape(-1)[0] = 0
        reader.data.flush()
        del reader, f, s, t
        copies[mod.__name__] = open(dst, "rb").read()
    assert copies["gguf"] == copies["ggufrw.compat"]
    assert copies["gguf"] != open(src, "rb").read()
    assert gguf.GGUFReader(str(tmp / "ggufrw.compat.gguf")).fields["t.u32"].contents() == 1234


def test_copy_on_write_and_read_only_modes(gguf, tmp):
    src = str(tmp / "src.gguf")
    F.gguf_py_sample(gguf, src)
    before = open(src, "rb").read()
    reader = compat.GGUFReader(src, "c")
    f = reader.fields["t.u32"]
    f.parts[f.data[0]][0] = 1
    assert f.contents() == 1
    del reader, f
    assert open(src, "rb").read() == before
    reader = compat.GGUFReader(src)
    f = reader.fields["t.u32"]
    with pytest.raises(ValueError):
        f.parts[f.data[0]][0] = 1


# dequantize


def _type_samples(t: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Blocks of type `t`: random bytes, and (when ggufrw quantizes it) quantized random floats."""
    block, size = F.TYPE_SIZES[t]
    rows, per_row = 3, 4
    samples = [rng.integers(0, 256, size=(rows, per_row * size), dtype=np.uint8)]
    if dict((r[0], r[5]) for r in _native.types())[t]:
        x = rng.standard_normal((rows, per_row * block)).astype(np.float32)
        q = _native.quantize(t, x.tobytes(), per_row * block)
        samples.append(np.frombuffer(q, dtype=np.uint8).reshape(rows, per_row * size))
    return samples


def _same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, but any NaN equals any NaN (their payloads come from arithmetic)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return bool((nan_a == nan_b).all() and (a.view(np.uint32)[~nan_a] == b.view(np.uint32)[~nan_b]).all())


def test_dequantize_equals_gguf_py_on_every_type_it_has(gguf):
    rng = np.random.default_rng(7)
    checked = []
    for t in gguf.GGMLQuantizationType:
        try:
            gguf.quants.dequantize(np.zeros(gguf.GGML_QUANT_SIZES[t][1], np.uint8), t)
        except NotImplementedError:
            continue
        if t.name == "Q8_1":
            continue
        for data in _type_samples(int(t), rng):
            theirs = gguf.quants.dequantize(data, t)
            ours = cq.dequantize(data, compat.GGMLQuantizationType(int(t)))
            assert ours.dtype == np.float32, t.name
            assert _same_floats(ours, np.asarray(theirs, dtype=np.float32)), t.name
        checked.append(t.name)
    assert {"F32", "F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ2_XXS", "IQ4_XS", "MXFP4"} <= set(checked)


def test_dequantize_types_gguf_py_lacks():
    rng = np.random.default_rng(8)
    for t in (compat.GGMLQuantizationType.Q8_1, compat.GGMLQuantizationType.Q2_0):
        data = _type_samples(int(t), rng)[-1]
        out = cq.dequantize(data, t)
        assert out.shape == cq.quant_shape_from_byte_shape(data.shape, t)
        assert out.tobytes() == bytes(_native.dequantize(int(t), data.tobytes()))
    with pytest.raises(ValueError):
        cq.dequantize(np.zeros((2, 35), np.uint8), compat.GGMLQuantizationType.Q8_0)


def test_gemma_tensors_dequantize_as_gguf_py(gguf, gemma, gemma_gguf_py):
    ref, ours = gemma_gguf_py, compat.GGUFReader(gemma)
    seen = set()
    for r, o in zip(ref.tensors, ours.tensors):
        if o.tensor_type.name in seen or o.n_bytes > 4 << 20:
            continue
        seen.add(o.tensor_type.name)
        theirs = gguf.quants.dequantize(r.data, r.tensor_type)
        assert _same_floats(cq.dequantize(o.data, o.tensor_type), np.asarray(theirs, np.float32)), o.name
    assert len(seen) >= 3


# Gemma


def read_every_field(reader):
    for field in reader.fields.values():
        field.types, field.data, field.contents()
    for t in reader.tensors:
        t.data, t.shape
    return reader


def test_gemma_every_field_and_tensor_as_gguf_py(gemma, gemma_gguf_py):
    ours = read_every_field(compat.GGUFReader(gemma))
    F.same_reader(read_every_field(gemma_gguf_py), ours)
    assert len(ours.fields["tokenizer.ggml.tokens"].data) == 262144


def test_gemma_contents_do_not_build_parts(gemma):
    """What makes opening fast (benches/python.py times it): reading every field's value and
    types builds no field's parts."""
    ours = compat.GGUFReader(gemma)
    for field in ours.fields.values():
        field.types, field.contents()
    assert all(field._parts is None for field in ours.fields.values() if field._lazy is not None)
    assert sum(field._lazy is not None for field in ours.fields.values()) >= 30
    tokens = ours.fields["tokenizer.ggml.tokens"]
    # key length, key, value type, element type, count; then each string's length and bytes.
    assert len(tokens.parts) == 5 + 2 * 262144 and tokens._parts is not None


# hostile files: never a hang, always gguf-py's exception types, gguf-py's view when both read


HOSTILE_SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    sys.path.insert(0, sys.argv[2])
    from compat_support import files as F
    import gguf
    from ggufrw import compat

    class Hang(Exception):
        pass

    def hang(*_):
        raise Hang()

    signal.signal(signal.SIGALRM, hang)
    out = {}
    for name in json.loads(sys.argv[1]):
        path = os.path.join(sys.argv[3], name)
        try:
            ours = compat.GGUFReader(path)
            for f in ours.fields.values():
                f.types, f.data, f.contents(), f.parts
            row = ["ok"]
        except Exception as e:
            out[name] = [type(e).__name__, [c.__name__ for c in type(e).__mro__]]
            continue
        signal.alarm(5)
        try:
            ref = gguf.GGUFReader(path)
            signal.alarm(0)
            F.same_reader(ref, ours)
            row.append("same")
        except Hang:
            row.append("gguf-py hangs")
        except AssertionError as e:
            row.append("differs: " + repr(e))
        except Exception as e:
            row.append("gguf-py raises " + type(e).__name__)
        finally:
            signal.alarm(0)
        out[name] = row
    print(json.dumps(out))
    """
)

# files gguf-py reads where ours (the native decoder) does not: gguf-py reads them wrong
# (strings past the end of the file, offsets that wrap) or past ggufrw's nesting limit
GGUF_PY_READS_WRONG = {
    "v3-string-value-length-max.gguf",
    "string-in-array-length-2-64-1.gguf",
    "nesting-one-past-the-limit.gguf",
    "offset-wraps-around.gguf",
}


def test_hostile_corpus_never_hangs_and_raises_gguf_py_exception_types():
    names = [name for name, _outcome, _prefix in hostile_files()]
    proc = subprocess.run(
        [sys.executable, "-c", HOSTILE_SCRIPT, json.dumps(names), HERE, str(HOSTILE)],
        capture_output=True,
        text=True,
        timeout=300,  # the compat reader takes milliseconds a file; gguf-py's hangs are cut at 5 s
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert set(results) == set(names)
    allowed = {"ValueError", "KeyError", "UnicodeDecodeError"}
    for name, row in results.items():
        if row[0] != "ok":
            assert allowed & set(row[1]), (name, row)
        else:
            assert row[1] in ("same", "gguf-py raises ValueError", "gguf-py raises IndexError"), (name, row)
    assert sum(row[0] == "ok" for row in results.values()) >= 40
    assert sum(row[-1] == "same" for row in results.values()) >= 40


@pytest.mark.parametrize("name,outcome,prefix", hostile_files())
def test_hostile_file_is_refused_only_where_the_native_decoder_refuses_it(gguf, name, outcome, prefix):
    path = str(HOSTILE / name)
    try:
        compat.GGUFReader(path)
        ours_ok = True
    except (ValueError, KeyError, UnicodeDecodeError):
        ours_ok = False
    if outcome == "reject":
        assert not ours_ok, name
    if name in GGUF_PY_READS_WRONG:
        assert not ours_ok
        gguf.GGUFReader(path)  # gguf-py reads it (wrong)
