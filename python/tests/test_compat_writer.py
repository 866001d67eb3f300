"""ggufrw.compat's GGUFWriter (and quants.quantize) against gguf-py 0.19's: the same calls give
the same bytes, and the same errors."""

from __future__ import annotations

import os
import struct
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import pytest

from ggufrw import _native
from ggufrw import compat
from ggufrw.compat import quants as cq
from ggufrw.compat._tables import _SETTERS



def write(mod: Any, path: str, calls: Callable[[Any, Any], None], big: bool = False,
          stages: str = "all", **kwargs: Any) -> None:
    endian = mod.GGUFEndian.BIG if big else mod.GGUFEndian.LITTLE
    w = mod.GGUFWriter(path, "llama", endianess=endian, **kwargs)
    calls(mod, w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    if stages == "all":
        w.write_tensors_to_file()
    elif stages == "ti":
        w.write_ti_data_to_file()
    w.close()


def both(gguf: Any, tmp: Any, calls: Callable[[Any, Any], None], **kwargs: Any) -> bytes:
    """Writes with gguf-py and with ours; asserts the bytes are equal; returns them."""
    out = []
    for mod in (gguf, compat):
        path = str(tmp / f"{mod.__name__}.gguf")
        write(mod, path, calls, **kwargs)
        with open(path, "rb") as f:
            out.append(f.read())
    assert len(out[0]) == len(out[1])
    assert out[0] == out[1]
    return out[0]


# scenarios: the same calls on either module's writer


def scalars(mod: Any, w: Any) -> None:
    w.add_uint8("u8", 255)
    w.add_int8("i8", -128)
    w.add_uint16("u16", 65535)
    w.add_int16("i16", -32768)
    w.add_uint32("u32", 4294967295)
    w.add_int32("i32", -(2**31))
    w.add_float32("f32", 0.1)
    w.add_float32("f32.int", 3)
    w.add_float32("f32.np", np.float32(2.5))
    w.add_float32("f32.nan", float("nan"))
    w.add_float32("f32.tiny", 1e-46)
    w.add_uint64("u64", 2**64 - 1)
    w.add_int64("i64", np.int64(-(2**63)))
    w.add_float64("f64", 1e-310)
    w.add_bool("b.true", True)
    w.add_bool("b.one", 1)
    w.add_bool("b.false", False)
    w.add_string("s", "héllo ✓")
    w.add_string("s.empty", "")  # skipped by add_string
    w.add_key_value("s.empty.kv", "", mod.GGUFValueType.STRING)
    w.add_key_value("s.bytes", b"\xffraw", mod.GGUFValueType.STRING)
    w.add_uint32("u32", 5)  # overwrites (with a warning)
    for t in mod.GGUFValueType:
        if t not in (mod.GGUFValueType.ARRAY, mod.GGUFValueType.STRING):
            w.add_key_value(f"kv.{t.name}", 1, t)


def arrays(mod: Any, w: Any) -> None:
    V = mod.GGUFValueType
    for t in V:
        if t == V.ARRAY:
            continue
        vals: list[Any] = {V.STRING: ["a", "", "ü"], V.BOOL: [True, False],
                           V.FLOAT32: [0.1, -2.0, 1e38], V.FLOAT64: [0.1, 1e300]}.get(t, [0, 1, 2])
        w.add_key_value(f"a.{t.name}", vals, V.ARRAY, sub_type=t)
    w.add_array("auto.int", [1, 2, -3])
    w.add_array("auto.float", [1.5, 2.0])
    w.add_array("auto.bool", [True, False, True])
    w.add_array("auto.str", ["x", "yy", "zzz"])
    w.add_array("auto.bytes", b"\x00\x01\x02")
    w.add_array("auto.bytes.list", [b"ab", b"\xff"])
    w.add_array("auto.nested", [[1, 2], [3], [4, 5, 6]])
    w.add_array("auto.nested.str", [["a"], ["b", "c"]])
    w.add_array("auto.deep", [[[1.5], [2.5]], [[3.5]]])
    w.add_array("auto.tuple", (1, 2, 3))
    w.add_array("empty", [])  # skipped by add_array
    w.add_token_list([f"tok{i}" for i in range(1000)])
    w.add_token_scores([float(-i) / 3 for i in range(1000)])
    w.add_token_types([1 + i % 5 for i in range(1000)])


def enum_value(v: Any) -> Any:
    return SimpleNamespace(value=v)


# a value for each adder a generated setter calls
SETTER_VALUES: dict[str, Callable[[], tuple[Any, ...]]] = {
    "add_uint32": lambda: (7,),
    "add_int32": lambda: (-3,),
    "add_float32": lambda: (0.25,),
    "add_bool": lambda: (True,),
    "add_string": lambda: ("named",),
    "add_array": lambda: ([1, 2, 3],),
    "_add_u64_array": lambda: ([1, 2, 3],),
    "uint32_or_array": lambda: (7,),
}


def setter_args(row: tuple) -> tuple:
    """Arguments for a generated setter row: an id first where it takes two."""
    name, params, adder, _key, _formats, (_param, how) = row
    if how == "value":
        value = enum_value("yarn" if adder == "add_string" else 2)
    else:
        value = SETTER_VALUES[adder]()[0]
    return (1, value) if len(params) == 2 else (value,) if params else ()


def shared_setters() -> list[tuple]:
    """The generated setters gguf-py 0.19 also has (the pinned tree's gguf-py has more)."""
    import gguf

    return [row for row in _SETTERS if hasattr(gguf.GGUFWriter, row[0])]


def standard_setters(mod: Any, w: Any) -> None:
    for row in shared_setters():
        getattr(w, row[0])(*setter_args(row))
    w.add_feed_forward_length(11008)
    w.add_head_count([32, 32, 16])
    w.add_head_count_kv(8)
    w.add_sliding_window_pattern([True, False])
    w.add_dense_features_dims("dense_2", 768, 3072)
    w.add_quantization_version(2)
    w.add_file_type(15)
    w.add_custom_alignment(64)
    w.add_chat_template([{"name": "default", "template": "{{ x }}"}, {"name": "tool use", "template": "t"},
                         {"name": "rag", "template": "r"}, {"name": "", "template": "ignored"}])


def chat_template_string(mod: Any, w: Any) -> None:
    w.add_chat_template("{% for m in messages %}{{ m }}{% endfor %}")
    w.add_chat_template([{"name": "only", "template": "o"}])


def tensors(mod: Any, w: Any) -> None:
    rng = np.random.default_rng(3)
    w.add_tensor("f32", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((7,)).astype(np.float16))
    w.add_tensor("f64", rng.standard_normal((2, 2)))
    for dt in (np.int8, np.int16, np.int32, np.int64):
        w.add_tensor(f"{np.dtype(dt).name}", rng.integers(-100, 100, size=(2, 3)).astype(dt))
    w.add_tensor("transposed", np.arange(12, dtype=np.float32).reshape(3, 4).T)
    for t in ("Q4_0", "Q8_0", "Q4_K", "Q6_K", "BF16", "IQ4_NL", "MXFP4", "TQ2_0"):
        q = mod.GGMLQuantizationType[t]
        block, size = mod.GGML_QUANT_SIZES[q]
        w.add_tensor(f"q.{t}", rng.integers(0, 256, size=(2, 2 * size), dtype=np.uint8), raw_dtype=q)
    w.add_tensor("raw.shape", np.zeros(34 * 4, np.uint8), raw_shape=(4, 34), raw_dtype=mod.GGMLQuantizationType.Q8_0)
    w.add_tensor("scalar.like", np.ones((1,), np.float32))
    w.add_tensor("empty", np.zeros((0, 4), np.float32))
    w.add_tensor("lora.a", np.zeros((4, 2), np.float32))


def metadata_only(mod: Any, w: Any) -> None:
    w.add_uint32("n", 1)
    w.add_string("general.name", "meta only")


def data_alignment_set_directly(mod: Any, w: Any) -> None:
    # as gguf_new_metadata copies a custom alignment
    w.data_alignment = 128
    w.add_uint32("general.alignment", 128)
    tensors(mod, w)


def odd_alignment(mod: Any, w: Any) -> None:
    # not a power of two: gguf-py writes it (its reader then refuses it), so does ours
    w.data_alignment = 48
    w.add_uint32("general.alignment", 48)
    tensors(mod, w)


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("calls", [scalars, arrays, standard_setters, chat_template_string, tensors,
                                   metadata_only, data_alignment_set_directly, odd_alignment],
                         ids=lambda f: f.__name__)
def test_same_bytes_as_gguf_py(gguf, tmp, calls, big):
    data = both(gguf, tmp, calls, big=big)
    if calls is not odd_alignment:
        assert gguf.GGUFReader(str(tmp / "gguf.gguf")).fields  # gguf-py reads what was written
    assert data[:4] == b"GGUF"


def test_every_standard_setter_is_gguf_pys(gguf, tmp):
    rows = shared_setters()
    assert len(rows) > 200
    theirs = {n for n in dir(gguf.GGUFWriter) if n.startswith("add_")}
    ours = {n for n in dir(compat.GGUFWriter) if n.startswith("add_")}
    assert theirs <= ours, theirs - ours
    data = both(gguf, tmp, standard_setters)
    reader = compat.GGUFReader(str(tmp / "ggufrw.compat.gguf"))
    assert reader.fields["llama.context_length"].contents() == 7
    assert reader.fields["general.base_model.1.name"].contents() == "named"
    assert reader.fields["llama.rope.scaling.type"].contents() == "yarn"
    assert len(data) % 64 == 0 or reader.alignment == 64


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
def test_no_tensor_stages(gguf, tmp, big):
    # header and metadata only (no tensor infos, no padding), then the infos without data
    both(gguf, tmp, metadata_only, big=big, stages="kv")
    both(gguf, tmp, metadata_only, big=big, stages="ti")
    both(gguf, tmp, tensors, big=big, stages="ti")


@pytest.mark.parametrize("big", [False, True], ids=["little", "big"])
def test_write_tensor_data_one_by_one(gguf, tmp, big):
    """gguf_new_metadata's path: tensor infos first, then each tensor's data."""
    rng = np.random.default_rng(5)
    arrays_ = [rng.standard_normal((3, 4)).astype(np.float32), rng.integers(0, 255, (2, 34), dtype=np.uint8),
               rng.standard_normal(5).astype(np.float16)]
    out = []
    for mod in (gguf, compat):
        path = str(tmp / f"{mod.__name__}.gguf")
        w = mod.GGUFWriter(path, "llama", endianess=mod.GGUFEndian.BIG if big else mod.GGUFEndian.LITTLE)
        w.data_alignment = 64
        w.add_uint32("general.alignment", 64)
        types = [mod.GGMLQuantizationType.F32, mod.GGMLQuantizationType.Q8_0, mod.GGMLQuantizationType.F16]
        for i, (a, t) in enumerate(zip(arrays_, types)):
            w.add_tensor_info(f"t{i}", a.shape, a.dtype, a.nbytes, t)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        for a in arrays_:
            w.write_tensor_data(a)
        w.close()
        out.append(open(path, "rb").read())
    assert out[0] == out[1]


def test_temp_file_and_splits(gguf, tmp):
    both(gguf, tmp, tensors, use_temp_file=True)
    for kwargs in ({"split_max_tensors": 4}, {"split_max_size": 200}, {"split_max_tensors": 3, "small_first_shard": True}):
        names = {}
        for mod in (gguf, compat):
            d = tmp / mod.__name__
            d.mkdir(exist_ok=True)
            write(mod, str(d / "model.gguf"), tensors, **kwargs)
            names[mod.__name__] = sorted(os.listdir(d))
        assert names["gguf"] == names["ggufrw.compat"] and len(names["gguf"]) > 1
        for name in names["gguf"]:
            assert (tmp / "gguf" / name).read_bytes() == (tmp / "ggufrw.compat" / name).read_bytes(), name
        for d in ("gguf", "ggufrw.compat"):
            for name in os.listdir(tmp / d):
                os.remove(tmp / d / name)


def test_parameter_counts_as_gguf_py(gguf, tmp):
    def calls(mod: Any, w: Any) -> None:
        w.add_tensor_info("blk.0.ffn_up_exps.weight", (8, 16, 32), np.float32, 8 * 16 * 32 * 4)
        w.add_tensor_info("blk.0.ffn_up_exps.bias", (8, 16), np.float32, 8 * 16 * 4)
        w.add_tensor_info("blk.0.attn_q.weight", (32, 32), np.float16, 32 * 32 * 2)
        w.add_tensor_info("x.lora_a", (4, 32), np.float32, 4 * 32 * 4)
        w.add_tensor_info("x.lora_b", (32, 4), np.float32, 4 * 32 * 4)

    counts = []
    for mod in (gguf, compat):
        w = mod.GGUFWriter(None, "llama")
        calls(mod, w)
        counts.append(w.get_total_parameter_count())
    assert counts[0] == counts[1]


# errors: the same exception types as gguf-py, at the same call


BAD_VALUES: list[tuple[str, Callable[[Any, Any], None]]] = [
    ("u8 range", lambda m, w: w.add_uint8("k", 256)),
    ("i32 range", lambda m, w: w.add_int32("k", 2**31)),
    ("u64 negative", lambda m, w: w.add_uint64("k", -1)),
    ("int as float", lambda m, w: w.add_uint32("k", 1.5)),
    ("f32 overflow", lambda m, w: w.add_float32("k", 1e39)),
    ("array range", lambda m, w: w.add_key_value("k", [1, 300], m.GGUFValueType.ARRAY, m.GGUFValueType.UINT8)),
    ("array f32 overflow", lambda m, w: w.add_array("k", [1.0, 1e300])),
    ("mixed array", lambda m, w: w.add_array("k", [1, "a"])),
    ("empty array", lambda m, w: w.add_key_value("k", [], m.GGUFValueType.ARRAY)),
    ("numpy array", lambda m, w: w.add_array("k", np.arange(3))),
    ("empty nested", lambda m, w: w.add_array("k", [[1], []])),
    ("unknown element", lambda m, w: w.add_array("k", [object()])),
    ("surrogate", lambda m, w: w.add_string("k", "\udc80")),
]


@pytest.mark.parametrize("case", BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_bad_values_raise_what_gguf_py_raises(gguf, tmp, case):
    _name, call = case
    raised = []
    for mod in (gguf, compat):
        w = mod.GGUFWriter(str(tmp / f"{mod.__name__}.gguf"), "llama")
        try:
            call(mod, w)
            w.write_header_to_file()
            w.write_kv_data_to_file()
        except Exception as e:  # noqa: BLE001
            raised.append(type(e))
        else:
            raised.append(None)
        finally:
            w.close()
    assert raised[0] is not None
    assert raised[1] is raised[0] or issubclass(raised[1], raised[0])


def test_state_errors_as_gguf_py(gguf, tmp):
    for mod in (gguf, compat):
        w = mod.GGUFWriter(str(tmp / "s.gguf"), "llama")
        w.add_tensor("t", np.zeros(4, np.float32))
        with pytest.raises(ValueError, match="Duplicated tensor name"):
            w.add_tensor("t", np.zeros(4, np.float32))
        with pytest.raises(ValueError):
            w.add_tensor_info("u", (2,), np.uint16, 4)
        with pytest.raises(ValueError, match="Expected output file to contain the header"):
            w.write_kv_data_to_file()
        w.write_header_to_file()
        with pytest.raises(ValueError, match="not yet opened"):
            w.add_tensor_info("late", (2,), np.float32, 8)
        with pytest.raises(ValueError, match="Expected output file to contain KV data"):
            w.write_ti_data_to_file()
        with pytest.raises(ValueError, match="power of two"):
            w.add_custom_alignment(48)
        w.close()


def test_a_size_mismatch_is_a_clean_error(tmp):
    w = compat.GGUFWriter(str(tmp / "m.gguf"), "llama")
    w.add_tensor_info("t", (4,), np.float32, 16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    with pytest.raises(ValueError, match="16"):
        w.write_tensor_data(np.zeros(3, np.float32))
    w.close()


def test_pack_val_as_gguf_py(gguf):
    cases = [(5, "UINT32", None), ("hé", "STRING", None), ([1, 2], "ARRAY", None), ([1.5], "ARRAY", "FLOAT64"),
             (True, "BOOL", None), ([["a"], ["b", "c"]], "ARRAY", None)]
    for big in (False, True):
        for val, t, sub in cases:
            outs = []
            for mod in (gguf, compat):
                w = mod.GGUFWriter(None, "x", endianess=mod.GGUFEndian.BIG if big else mod.GGUFEndian.LITTLE)
                V = mod.GGUFValueType
                for add in (False, True):
                    outs.append(w._pack_val(val, V[t], add, sub_type=V[sub] if sub else None))
            assert outs[:2] == outs[2:], (val, t)


# quantize


def test_quantize_equals_gguf_py_where_gguf_py_quantizes(gguf):
    rng = np.random.default_rng(11)
    checked = []
    for t in gguf.GGMLQuantizationType:
        block = gguf.GGML_QUANT_SIZES[t][0]
        x = (rng.standard_normal((4, block * 8)) * 3).astype(np.float32)
        x[0, :block] = 0  # an all-zero block
        x[1, 0] = 1e-30
        try:
            theirs = gguf.quants.quantize(x, t)
        except NotImplementedError:
            continue
        ours = cq.quantize(x, compat.GGMLQuantizationType(int(t)))
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, t.name
        assert ours.tobytes() == theirs.tobytes(), t.name
        checked.append(t.name)
    assert {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"} <= set(checked)


def test_quantize_beyond_gguf_py_and_its_errors():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    for name in ("Q4_K", "Q6_K", "Q8_1", "Q2_0", "IQ4_XS"):
        t = compat.GGMLQuantizationType[name]
        q = cq.quantize(x, t)
        assert q.dtype == np.uint8 and q.shape == cq.quant_shape_to_byte_shape(x.shape, t)
        back = cq.dequantize(q, t)
        # Q2_0 is ternary-like ({-d, 0, d, 2d}, d the block's largest magnitude)
        assert back.shape == x.shape and np.abs(back - x).mean() < (0.7 if name == "Q2_0" else 0.1)
    with pytest.raises(cq.QuantError):
        cq.quantize(np.zeros((2, 33), np.float32), compat.GGMLQuantizationType.Q8_0)
    with pytest.raises(NotImplementedError):
        cq.quantize(x, compat.GGMLQuantizationType.I8)
    assert struct.pack("<f", float(cq.quantize(x, compat.GGMLQuantizationType.F32)[0, 0])) == x[0, :1].tobytes()


def test_quantized_tensors_round_trip_through_the_writer_and_reader(tmp):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    w = compat.GGUFWriter(str(tmp / "q.gguf"), "llama")
    for name in ("Q4_K", "Q8_0", "Q8_1"):
        t = compat.GGMLQuantizationType[name]
        w.add_tensor(name, cq.quantize(x, t), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    r = compat.GGUFReader(str(tmp / "q.gguf"))
    for t in r.tensors:
        assert list(t.shape) == [256, 4]
        assert t.data.tobytes() == cq.quantize(x, t.tensor_type).tobytes()
        assert bytes(_native.dequantize(int(t.tensor_type), t.data.tobytes())) == cq.dequantize(t.data, t.tensor_type).tobytes()
