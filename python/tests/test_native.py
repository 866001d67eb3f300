"""The native API against gguf-py 0.19 (the reference), against itself (round trips), and
against the hostile corpus."""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ggufrw
from ggufrw import GGMLType, Value, ValueType

from conftest import HOSTILE, hostile_files

# gguf-py value types by ours.
SCALARS = [
    (ValueType.UINT8, 200),
    (ValueType.INT8, -100),
    (ValueType.UINT16, 65000),
    (ValueType.INT16, -32000),
    (ValueType.UINT32, 4_000_000_000),
    (ValueType.INT32, -2_000_000_000),
    (ValueType.FLOAT32, 0.1),
    (ValueType.BOOL, True),
    (ValueType.STRING, "héllo"),
    (ValueType.UINT64, 2**64 - 1),
    (ValueType.INT64, -(2**63)),
    (ValueType.FLOAT64, math.pi),
]


def write_with_gguf_py(gguf, path, endian="little", tensors=()):
    """A file of every value type (scalars and arrays) and the given tensors, by gguf-py."""
    order = gguf.GGUFEndian.BIG if endian == "big" else gguf.GGUFEndian.LITTLE
    w = gguf.GGUFWriter(str(path), "llama", endianess=order)
    for ty, v in SCALARS:
        w.add_key_value(f"test.{ty.name.lower()}", v, gguf.GGUFValueType(int(ty)))
        if ty != ValueType.STRING:
            w.add_key_value(
                f"test.array.{ty.name.lower()}",
                [v, v],
                gguf.GGUFValueType.ARRAY,
                gguf.GGUFValueType(int(ty)),
            )
    w.add_array("test.array.string", ["a", "bé", ""])
    w.add_array("test.array.empty", [])
    for name, arr, raw_dtype, raw_shape in tensors:
        if raw_dtype is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_shape=raw_shape, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def plain(value):
    """gguf-py's contents() and ours compared as plain Python values (float32 as its bits)."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (np.generic,)):
        return plain(value.item())
    return value


def assert_same_as_gguf_py(gguf, path, theirs=None):
    """Every field and tensor attribute of ours equals gguf-py's on `path`."""
    theirs = theirs or gguf.GGUFReader(str(path))
    ours = ggufrw.open(path)
    # gguf-py puts the fixed part first, as pseudo-fields (GGUF.version, …).
    keys = [k for k in theirs.fields if not k.startswith("GGUF.")]
    assert [f.key for f in ours.metadata.fields] == keys
    for field in ours.metadata.fields:
        ref = theirs.fields[field.key]
        assert int(field.type) == int(ref.types[0]), field.key
        if field.element_type is not None:
            assert len(ref.types) >= 2 or not field.value
            if len(ref.types) >= 2:
                assert int(field.element_type) == int(ref.types[1]), field.key
        assert plain(field.value) == plain(ref.contents()), field.key
    assert len(ours.tensors) == len(theirs.tensors)
    for t, ref in zip(ours.tensors, theirs.tensors):
        assert t.name == ref.name
        assert int(t.type) == int(ref.tensor_type)
        assert list(t.shape) == [int(d) for d in ref.shape]
        assert t.n_elements == int(ref.n_elements)
        assert t.size == int(ref.n_bytes)
        assert t.offset == int(ref.data_offset)
        assert bytes(t.bytes()) == ref.data.tobytes()
    return ours, theirs


@pytest.mark.parametrize("endian", ["little", "big"])
def test_every_value_type_as_gguf_py_reads_it(gguf, tmp, endian):
    f32 = np.arange(32, dtype=np.float32).reshape(4, 8)
    f16 = np.linspace(-1, 1, 64, dtype=np.float16).reshape(8, 8)
    i32 = np.arange(-8, 8, dtype=np.int32)
    tensors = [("f32", f32, None, None), ("f16", f16, None, None), ("i32", i32, None, None)]
    # gguf-py swaps the arrays it is given in place for a big-endian file: give it copies.
    write_with_gguf_py(gguf, tmp / "t.gguf", endian, [(n, a.copy(), d, s) for n, a, d, s in tensors])
    ours, _ = assert_same_as_gguf_py(gguf, tmp / "t.gguf")
    assert ours.byte_order == endian
    assert ours.metadata.type("test.uint64") == ValueType.UINT64
    assert ours.metadata["test.float32"] == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert ours.metadata["test.array.string"] == ["a", "bé", ""]
    # Typed data in the file's byte order, without a copy of the map.
    np.testing.assert_array_equal(ours.tensor("f32").data, f32)
    np.testing.assert_array_equal(ours.tensor("f32").dequantize(), f32)
    np.testing.assert_array_equal(ours.tensor("f16").dequantize(), f16.astype(np.float32))
    assert (tmp / "t.gguf").read_bytes() == ours.to_bytes()


def test_every_ggml_type_as_gguf_py_reads_it(gguf, tmp):
    """A tensor of each type gguf-py knows (random blocks), read by both."""
    rng = np.random.default_rng(7)
    tensors = []
    for info in (ggufrw.type_info(t) for t in GGMLType):
        if info.type.name not in gguf.GGMLQuantizationType.__members__:
            continue  # gguf-py does not know it (Q2_0 and newer)
        ref_size = gguf.GGML_QUANT_SIZES.get(gguf.GGMLQuantizationType[info.type.name])
        if ref_size != (info.block_size, info.type_size):
            continue  # gguf-py sizes it wrongly (Q8_1): checked below
        rows, blocks = 2, 2
        raw = rng.integers(0, 256, size=(rows, blocks * info.type_size), dtype=np.uint8)
        # gguf-py takes the byte shape and works out the element shape.
        tensors.append((f"t.{info.type.name}", raw, gguf.GGMLQuantizationType[info.type.name], None))
    write_with_gguf_py(gguf, tmp / "types.gguf", "little", tensors)
    ours, _ = assert_same_as_gguf_py(gguf, tmp / "types.gguf")
    assert len(ours.tensors) >= 30


def test_q8_1_has_ggml_size(gguf):
    """gguf-py 0.19 gives Q8_1 a 36-byte block; ggml's is 36 bytes of 2 halves + 32 quants:
    whichever gguf-py says, ours is ggml's (block_q8_1: d, s as fp16, 32 int8)."""
    assert ggufrw.type_info("Q8_1")[1:3] == (32, 36)


def test_gemma_as_gguf_py_reads_it(gguf, gemma, gemma_gguf_py):
    ours, theirs = assert_same_as_gguf_py(gguf, gemma, gemma_gguf_py)
    assert ours.metadata["general.architecture"] == "gemma3"
    assert len(ours.metadata["tokenizer.ggml.tokens"]) == 262144
    assert ours.check("ggml") == []


def test_gemma_dequantizes_as_gguf_py(gguf, gemma, gemma_gguf_py):
    """Every tensor of Gemma: ours bit-identical with gguf-py's quants.dequantize."""
    ours = ggufrw.open(gemma)
    theirs = gemma_gguf_py
    seen = set()
    for t, ref in zip(ours.tensors, theirs.tensors):
        got = t.dequantize()
        want = gguf.quants.dequantize(ref.data, ref.tensor_type).astype(np.float32)
        assert got.shape == want.shape, t.name
        assert got.tobytes() == want.tobytes(), t.name
        seen.add(t.type_name)
    assert {"Q4_K", "Q8_0", "F32"} <= seen


def test_dequantize_equals_gguf_py_on_every_type(gguf):
    """Random blocks of every type both dequantize: bit-identical (NaN payloads aside, which
    numpy's half conversion may quieten: compared as values there)."""
    rng = np.random.default_rng(1)
    compared = []
    for info in (ggufrw.type_info(t) for t in GGMLType):
        name = info.type.name
        if not info.dequantizes or name not in gguf.GGMLQuantizationType.__members__:
            continue
        qtype = gguf.GGMLQuantizationType[name]
        if gguf.GGML_QUANT_SIZES.get(qtype) != (info.block_size, info.type_size):
            continue
        raw = rng.integers(0, 256, size=(4, 8 * info.type_size), dtype=np.uint8)
        if name in ("F16", "BF16", "F32", "F64") or info.block_size > 1:
            # Keep the block scales finite: random halves are NaN or infinite 1 in 32.
            pass
        try:
            want = gguf.quants.dequantize(raw, qtype)
        except NotImplementedError:
            continue
        got = ggufrw.dequantize(raw.tobytes(), name, want.shape)
        want = np.asarray(want, dtype=np.float32)
        both_nan = np.isnan(got) & np.isnan(want)
        assert np.array_equal(np.where(both_nan, 0, got).view(np.uint32), np.where(both_nan, 0, want).view(np.uint32)), name
        compared.append(name)
    assert len(compared) >= 25, compared


def test_quantize_equals_gguf_py(gguf):
    """Where gguf-py has a quantizer, the same bytes."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((8, 256)) * 3).astype(np.float32)
    compared = []
    for info in (ggufrw.type_info(t) for t in GGMLType):
        name = info.type.name
        if not info.quantizes or name not in gguf.GGMLQuantizationType.__members__:
            continue
        try:
            want = gguf.quants.quantize(x, gguf.GGMLQuantizationType[name])
        except NotImplementedError:
            continue
        got = ggufrw.quantize(x, name)
        if name == "F16":
            got = got.view(np.float16).reshape(want.shape)
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), name
        compared.append(name)
    assert {"Q8_0", "Q4_0", "F16"} <= set(compared), compared


def test_threads_give_the_same_bytes(gemma):
    f = ggufrw.open(gemma)
    t = f.tensor("token_embd.weight")
    one = t.dequantize(threads=1)
    assert one.tobytes() == t.dequantize(threads=2).tobytes()
    rows = one[:512].reshape(-1, 256)
    q1 = ggufrw.quantize(rows, "Q4_K", threads=1)
    assert q1.tobytes() == ggufrw.quantize(rows, "Q4_K", threads=2).tobytes()


def test_builder_round_trips_and_gguf_py_reads_it(gguf, tmp):
    b = ggufrw.Builder()
    b.add("general.architecture", "llama")
    b.add("n", 5)
    b.add("wide", 2**40)
    b.add("u64", Value(7, ValueType.UINT64))
    b.add("pi", math.pi, ValueType.FLOAT64)
    b.add("names", ["a", "b"])
    b.add("nested", Value([[1, 2], [3]], ValueType.ARRAY, ValueType.ARRAY))
    b.add("bytes", b"\xff\x00")
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b.tensor("w", w)
    q = ggufrw.quantize(np.ones((2, 32), np.float32), "Q8_0")
    b.tensor("q", q, "Q8_0", (32, 2))
    size = b.write("b.gguf")
    data = (tmp / "b.gguf").read_bytes()
    assert size == len(data) and data == b.to_bytes()
    f = ggufrw.open("b.gguf")
    assert f.to_bytes() == data
    assert f.metadata["n"] == 5 and f.metadata.type("n") == ValueType.INT32
    assert f.metadata.type("wide") == ValueType.INT64
    assert f.metadata.type("u64") == ValueType.UINT64
    assert f.metadata["nested"] == [[1, 2], [3]]
    assert f.metadata["bytes"] == b"\xff\x00"
    np.testing.assert_array_equal(f.tensor("w").data, w)
    np.testing.assert_array_equal(f.tensor("q").dequantize(), ggufrw.dequantize(q, "Q8_0", (2, 32)))
    theirs = gguf.GGUFReader("b.gguf")
    assert theirs.fields["names"].contents() == ["a", "b"]
    assert theirs.tensors[1].data_offset == f.tensor("q").offset
    assert oct(os.stat("b.gguf").st_mode & 0o777) == oct(0o666 & ~current_umask())


def current_umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_builder_refuses_bad_data_and_leaves_nothing(tmp):
    b = ggufrw.Builder()
    b.tensor("w", b"\0" * 10, "F32", (4,))
    with pytest.raises(ggufrw.Error) as e:
        b.write("out.gguf")
    assert "w" in str(e.value)
    assert os.listdir(tmp) == []


def test_write_cut_short_leaves_nothing(tmp):
    """A write the file-size limit stops: an error, no output, no temporary file."""
    script = textwrap.dedent(
        """
        import resource, signal, sys, numpy as np, ggufrw
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        b = ggufrw.Builder()
        b.tensor("w", np.zeros(1 << 16, np.float32))
        try:
            b.write("big.gguf")
        except OSError as e:
            print("refused:", e.errno)
            sys.exit(0)
        sys.exit("written past the limit")
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("refused")
    assert os.listdir(tmp) == []


def small_model(path):
    """A model of 300 small tensors of three types, with padding between them."""
    b = ggufrw.Builder()
    b.add("general.architecture", "llama")
    b.add("general.name", "small")
    b.add("general.license", "mit")
    rows = np.linspace(-2, 2, 64, dtype=np.float32).reshape(2, 32)
    for i in range(100):
        b.tensor(f"blk.{i}.a.weight", rows * i)
        b.tensor(f"blk.{i}.b.weight", rows.astype(np.float16))
        b.tensor(f"blk.{i}.c.weight", ggufrw.quantize(rows, "Q8_0"), "Q8_0", (32, 2))
    b.write(path)
    return str(path)


def test_edit_split_merge_hash(gguf, tmp):
    model = small_model(tmp / "model.gguf")
    ggufrw.edit(model, "e.gguf", set={"general.name": "edited", "extra.n": Value(3, ValueType.UINT8)}, delete=["general.license"])
    e = ggufrw.open("e.gguf")
    assert e.metadata["general.name"] == "edited" and e.metadata.type("extra.n") == ValueType.UINT8
    assert gguf.GGUFReader("e.gguf").fields["general.name"].contents() == "edited"
    before = (tmp / "e.gguf").read_bytes()
    with pytest.raises(ValueError):
        ggufrw.edit("e.gguf", set={"x": 1})
    ggufrw.edit("e.gguf", set={"general.name": "editeD"}, in_place=True)
    after = (tmp / "e.gguf").read_bytes()
    assert len(after) == len(before) and after != before
    assert ggufrw.open("e.gguf").metadata["general.name"] == "editeD"

    assert "general.license" not in e.metadata
    shards = ggufrw.split(model, "s", max_tensors=128)
    assert [s.path for s in shards] == [f"s-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert [s.tensors for s in shards] == [128, 128, 44]
    assert gguf.GGUFReader(shards[1].path).fields["split.no"].contents() == 1
    ggufrw.merge(shards[0].path, "m.gguf")
    assert (tmp / "m.gguf").read_bytes() == (tmp / "model.gguf").read_bytes()

    gemma = model
    lines = ggufrw.hash(gemma, ["sha256"])
    f = ggufrw.open(gemma)
    import hashlib

    first = f.tensors[0]
    assert lines[0].split() == ["sha256", hashlib.sha256(first.bytes()).hexdigest(), f"{gemma}:{first.name}"]
    assert lines[-1].split()[::2] == ["sha256", gemma]
    assert len(lines) == 301


def test_errors_carry_kind_field_offset_and_file(tmp):
    # One tensor said, no bytes for its info.
    (tmp / "bad.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 0))
    with pytest.raises(ggufrw.DecodeError) as e:
        ggufrw.open("bad.gguf")
    err = e.value
    assert isinstance(err, ggufrw.Error)
    assert err.kind == "count_too_large"
    assert err.path == "tensor_count"
    assert err.offset == 8
    assert err.file == "bad.gguf"
    assert "bad.gguf" in str(err) and "0x" not in err.kind
    with pytest.raises(ggufrw.Error) as e:
        ggufrw.open("missing.gguf")
    assert e.value.kind == "io" and e.value.file == "missing.gguf"
    with pytest.raises(ggufrw.DecodeError):
        ggufrw.open(b"GGUF")


@pytest.mark.parametrize("name,outcome,prefix", hostile_files())
def test_hostile_corpus(name, outcome, prefix):
    """Each file of the corpus: refused with a DecodeError at its field, or read and judged as
    the corpus says; its tensors' data handed out or refused with a ggufrw.Error."""
    path = str(HOSTILE / name)
    if outcome == "reject":
        with pytest.raises(ggufrw.DecodeError) as e:
            ggufrw.open(path)
        assert e.value.path.startswith(prefix), (e.value.path, prefix)
        assert e.value.file == path
        return
    f = ggufrw.open(path)
    spec = [x for x in f.check("spec") if x.severity == "error"]
    ggml = [x for x in f.check("ggml") if x.severity == "error"]
    if outcome == "accept":
        assert spec == []
    elif outcome == "invalid-spec" or outcome == "spec-only":
        assert any(x.path.startswith(prefix) for x in spec), (spec, prefix)
    elif outcome in ("invalid-ggml", "ggml-only"):
        assert any(x.path.startswith(prefix) for x in ggml), (ggml, prefix)
    assert f.to_bytes() == open(path, "rb").read()
    dict(f.metadata)
    for t in f.tensors:
        for read in (t.bytes, t.dequantize):
            try:
                read()
            except ggufrw.Error:
                pass


def test_hostile_corpus_never_hangs_or_crashes():
    """The whole corpus in a fresh interpreter with a deadline: it exits normally."""
    script = textwrap.dedent(
        f"""
        import os, ggufrw
        raised = 0
        for name in sorted(os.listdir({str(HOSTILE)!r})):
            if not name.endswith(".gguf"):
                continue
            try:
                f = ggufrw.open(os.path.join({str(HOSTILE)!r}, name))
                dict(f.metadata); f.check(); [t.dequantize() for t in f.tensors if t.size]
            except ggufrw.Error:
                raised += 1
        print(raised)
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 78


def test_without_numpy_data_is_memoryview(gemma):
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["numpy"] = None  # import numpy fails
        import ggufrw
        f = ggufrw.open({gemma!r})
        t = f.tensor("output_norm.weight")
        d, v = t.data, t.dequantize()
        assert isinstance(d, memoryview) and isinstance(v, memoryview) and v.format == "f"
        assert len(v) == t.n_elements and d.nbytes == t.size
        q = ggufrw.quantize(v.tobytes(), "Q8_0")
        assert isinstance(q, bytes) and len(q) == t.n_elements // 32 * 34
        try:
            import ggufrw.compat
        except ImportError as e:
            assert "needs numpy" in str(e)
        else:
            raise AssertionError("ggufrw.compat imported without numpy")
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_data_is_a_view_of_the_map(gemma):
    f = ggufrw.open(gemma)
    t = f.tensor("token_embd.weight")
    a = t.data
    assert not a.flags.owndata and not a.flags.writeable
    assert a.shape == (262144, 640 // 32 * 34)


class _RangeHandler:
    """An HTTP server that answers Range requests for one file, as model hubs do."""

    @staticmethod
    def serve(data: bytes):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()

            def do_GET(self):
                spec = self.headers.get("Range", "")
                if spec.startswith("bytes="):
                    first, _, last = spec[6:].partition("-")
                    start = int(first)
                    end = min(int(last) if last else len(data) - 1, len(data) - 1)
                    body = data[start : end + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                else:
                    body = data
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def test_url_reads_the_header_only(gemma):
    data = open(gemma, "rb").read()
    server = _RangeHandler.serve(data)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/gemma.gguf"
        f = ggufrw.open(url)
        local = ggufrw.open(gemma)
        assert f.path == url and f.size == len(data)
        assert dict(f.metadata) == dict(local.metadata)
        assert [(t.name, t.shape, t.offset) for t in f.tensors] == [
            (t.name, t.shape, t.offset) for t in local.tensors
        ]
        assert f.check() == local.check()
        with pytest.raises(ggufrw.Error):
            f.tensors[0].bytes()
        with pytest.raises(ggufrw.Error) as e:
            ggufrw.open(url.replace("gemma", "missing").replace(str(server.server_address[1]), "1"))
        assert e.value.kind == "remote"
    finally:
        server.shutdown()


def test_in_place_edit_fails_while_another_writer_holds_the_lock(tmp):
    """The library's in-place writes take the file's flock: held elsewhere, the edit fails at
    once, names the file and changes nothing."""
    import fcntl

    model = small_model(tmp / "m.gguf")
    before = (tmp / "m.gguf").read_bytes()
    with open(model, "r+b") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ggufrw.Error) as e:
            ggufrw.edit(model, set={"general.name": "x"}, in_place=True)
        assert "another process is writing this file in place" in str(e.value)
        assert e.value.file == model and e.value.kind == "io"
        assert (tmp / "m.gguf").read_bytes() == before
    ggufrw.edit(model, set={"general.name": "x"}, in_place=True)
    assert ggufrw.open(model).metadata["general.name"] == "x"
