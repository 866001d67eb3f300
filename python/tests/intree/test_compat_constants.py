"""ggufrw.compat's constants and tensor name maps against the pinned tree's gguf-py, name by
name; and the generated table module against a fresh run of its generator."""

from __future__ import annotations

import enum
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def plain(v, depth=0):
    """A value with enum members and classes turned into comparable data."""
    if isinstance(v, enum.Enum):
        return ("member", type(v).__name__, v.name, v.value)
    if inspect.isclass(v) and issubclass(v, enum.Enum):
        return ("enum", v.__name__, [b.__name__ for b in v.__mro__ if b.__module__ == "enum"],
                [(k, m.value) for k, m in v.__members__.items()])
    if inspect.isclass(v):
        return ("class", v.__name__, {k: plain(x, depth + 1) for k, x in vars(v).items() if not k.startswith("__")})
    if isinstance(v, dict):
        return ("dict", [(plain(k), plain(x)) for k, x in v.items()])
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [plain(x) for x in v])
    return v


def public(module):
    return {k: v for k, v in vars(module).items() if not k.startswith("_") and not inspect.ismodule(v)}


def test_every_constant_is_the_trees(ref, compat):
    theirs = {k: v for k, v in public(ref.constants).items() if k not in ("Enum", "IntEnum", "auto", "Any", "annotations")}
    ours = public(compat.constants)
    missing = sorted(set(theirs) - set(ours))
    assert not missing
    for name, v in theirs.items():
        assert plain(ours[name]) == plain(v), name
    assert list(theirs) == [k for k in ours if k in theirs], "definition order"


@pytest.mark.parametrize("value", ["x", b"x", 1, True, 1.5, [1], None, 2**40])
def test_get_type(ref, compat, value):
    def run(m):
        try:
            return m.GGUFValueType.get_type(value).name
        except ValueError as e:
            return str(e)

    assert run(compat.constants) == run(ref.constants)


def test_tensor_name_maps_of_every_architecture(ref, compat):
    # In the tree's order, so that gguf-py's class-wide merging of per-architecture overrides
    # happens alike on both sides.
    for arch in ref.MODEL_ARCH:
        theirs = ref.TensorNameMap(arch, 3)
        ours = compat.tensor_mapping.TensorNameMap(compat.constants.MODEL_ARCH[arch.name], 3)
        assert plain(ours.mapping) == plain(theirs.mapping), arch.name
        assert repr(ours).replace("compat.", "") == repr(theirs), arch.name
    assert plain(compat.tensor_mapping.TensorNameMap.block_mappings_cfg) == plain(ref.TensorNameMap.block_mappings_cfg)


@pytest.mark.parametrize("key", [
    "model.layers.0.self_attn.q_proj.weight", "model.layers.2.self_attn.q_proj", "model.embed_tokens",
    "model.embed_tokens.weight", "lm_head.weight", "model.layers.3.mlp.up_proj.weight", "nothing", "",
])
def test_lookups(ref, compat, key):
    theirs = ref.get_tensor_name_map(ref.MODEL_ARCH.LLAMA, 3)
    ours = compat.tensor_mapping.get_tensor_name_map(compat.constants.MODEL_ARCH.LLAMA, 3)
    for suffixes in [(), (".weight", ".bias")]:
        assert plain(ours.get_type_and_name(key, suffixes)) == plain(theirs.get_type_and_name(key, suffixes))
        assert ours.get_name(key, try_suffixes=suffixes) == theirs.get_name(key, try_suffixes=suffixes)
        assert plain(ours.get_type(key, suffixes)) == plain(theirs.get_type(key, suffixes))
    assert (key in ours) == (key in theirs)
    if key in theirs:
        assert ours[key] == theirs[key]
    else:
        with pytest.raises(KeyError):
            ours[key]


def test_the_generated_tables_are_the_trees(tree):
    fresh = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_compat_tables.py"), str(tree)],
                           capture_output=True, text=True, check=True).stdout
    committed = (ROOT / "python" / "ggufrw" / "compat" / "_tables.py").read_text()
    assert fresh == committed, "run scripts/gen_compat_tables.py again"


def test_the_writer_has_every_method_of_the_trees(ref, compat):
    theirs = {n for n in dir(ref.GGUFWriter) if not n.startswith("__")}
    ours = {n for n in dir(compat.GGUFWriter) if not n.startswith("__")}
    assert theirs <= ours, sorted(theirs - ours)


def every_setter(module, w):
    """Calls every typed setter the tree's writer has, with a value of its kind."""
    from types import SimpleNamespace

    from ggufrw.compat._tables import _SETTERS

    values = {"add_uint32": 7, "add_int32": -3, "add_float32": 0.25, "add_bool": True, "add_string": "named",
              "add_array": [1, 2, 3], "_add_u64_array": [1, 2, 3], "uint32_or_array": [4, 5]}
    for name, params, adder, _key, _formats, (_param, how) in _SETTERS:
        value = SimpleNamespace(value="yarn" if adder == "add_string" else 2) if how == "value" else values[adder]
        args = (3, value) if len(params) == 2 else (value,) if params else ()
        getattr(w, name)(*args)
    w.add_tensor_extra_prec_a4(["a", "b"], [True, False])
    w.add_indexer_types([True, False])
    w.add_sliding_window_pattern(4)
    w.add_dense_features_dims("dense_2", 8, 16)
    w.add_chat_template([{"name": "default", "template": "d"}, {"name": "x y", "template": "t"}])
    w.add_chat_template(None)
    w.remove_key("general.name")


def test_every_setter_writes_the_trees_bytes(ref, compat, tmp_path):
    out = {}
    for side in (ref, compat):
        path = tmp_path / f"{side.__name__}.gguf"
        w = side.GGUFWriter(str(path), "llama")
        every_setter(side, w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        w.close()
        out[side.__name__] = path.read_bytes()
    assert out["ggufrw.compat"] == out["gguf"]
    assert len(out["gguf"]) > 10000
