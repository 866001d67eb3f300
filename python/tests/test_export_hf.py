"""`ggufrw.export_hf`: the exporter of `ggufrw export-hf` from Python. The export itself is held
to transformers and llama.cpp by the Rust suite (tests/export_hf.rs, tests/export_vocab.rs);
here, that a checkpoint converted by `ggufrw.convert_hf` at f32 comes back tensor for tensor (the
q/k permutation undone), that the binding writes what the command writes, and that bad input
raises `ggufrw.Error` leaving nothing behind."""

from __future__ import annotations

import json
import pathlib
import struct
import subprocess

import pytest

import ggufrw

from conftest import ROOT
from test_convert_hf import _checkpoint


def _tensors(path: pathlib.Path) -> dict[str, tuple[str, list[int], bytes]]:
    data = path.read_bytes()
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    return {
        name: (h["dtype"], h["shape"], data[8 + n + h["data_offsets"][0] : 8 + n + h["data_offsets"][1]])
        for name, h in header.items()
    }


def test_a_converted_checkpoint_comes_back(tmp: pathlib.Path) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    ggufrw.convert_hf(model, tmp / "m.gguf", outtype="f32")
    done = ggufrw.export_hf(tmp / "m.gguf", tmp / "out", dtype="f32")
    assert "model.safetensors" in done.files and "config.json" in done.files
    original = _tensors(model / "model.safetensors")
    exported = _tensors(tmp / "out" / "model.safetensors")
    # lm_head is its own tensor here (not tied), so every tensor comes back.
    assert done.tensors == len(original)
    assert sorted(exported) == sorted(original)
    for name, t in original.items():
        assert exported[name] == t, name
    config = json.loads((tmp / "out" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (4, 2)
    # The command, where the suite has built it (the newest build), writes the same folder.
    built = [p for p in (ROOT / "target" / d / "ggufrw" for d in ("debug", "release")) if p.exists()]
    for exe in sorted(built, key=lambda p: p.stat().st_mtime, reverse=True)[:1]:
        if exe.exists():
            subprocess.run(
                [str(exe), "export-hf", str(tmp / "m.gguf"), "-o", str(tmp / "cli"), "--dtype", "f32"],
                check=True, capture_output=True,
            )
            for f in done.files:
                assert (tmp / "cli" / f).read_bytes() == (tmp / "out" / f).read_bytes(), f


def test_bad_input_raises_and_leaves_nothing(tmp: pathlib.Path) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    ggufrw.convert_hf(model, tmp / "m.gguf", outtype="f16")
    used = tmp / "used"
    used.mkdir()
    (used / "keep.txt").write_text("mine")
    with pytest.raises(ggufrw.Error, match="not empty"):
        ggufrw.export_hf(tmp / "m.gguf", used)
    assert [p.name for p in used.iterdir()] == ["keep.txt"]
    # A file cut short: refused naming it, no folder made.
    data = (tmp / "m.gguf").read_bytes()
    (tmp / "cut.gguf").write_bytes(data[: len(data) - 100])
    with pytest.raises(ggufrw.Error) as e:
        ggufrw.export_hf(tmp / "cut.gguf", tmp / "out")
    assert "cut.gguf" in str(e.value)
    assert not (tmp / "out").exists()
    assert not [p for p in tmp.iterdir() if p.name.startswith(".")]
    with pytest.raises(ValueError, match="dtype"):
        ggufrw.export_hf(tmp / "m.gguf", tmp / "out", dtype="q4_0")


@pytest.mark.parametrize(
    "change, field, why",
    [
        ({"delete_tensors": ["blk.0.attn_q.weight"]}, "blk.0.attn_q.weight", "missing"),
        ({"set": {"llama.attention.head_count": ggufrw.Value(8, ggufrw.ValueType.UINT32)}},
         "blk.0.attn_q.weight", "heads"),
        ({"set": {"llama.block_count": ggufrw.Value(0, ggufrw.ValueType.UINT32)}}, None, "block_count"),
        ({"set": {"general.architecture": "bert"}}, None, "not exported"),
    ],
)
def test_a_model_the_config_does_not_describe_is_refused(
    tmp: pathlib.Path, change: dict, field: str, why: str
) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    ggufrw.convert_hf(model, tmp / "m.gguf", outtype="f32")
    ggufrw.edit(tmp / "m.gguf", tmp / "bad.gguf", force=True, **change)
    with pytest.raises(ggufrw.Error, match=why) as e:
        ggufrw.export_hf(tmp / "bad.gguf", tmp / "out")
    if field is not None:
        assert e.value.path == field
        assert e.value.file == str(tmp / "bad.gguf")
    assert not (tmp / "out").exists()
