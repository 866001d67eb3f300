"""`ggufrw.convert_hf`: the converter of `ggufrw convert-hf` from Python. The conversion itself
is held to the reference `convert_hf_to_gguf.py` by the Rust suite (tests/convert_hf.rs); here,
that the binding hands the options through (the same bytes as the command, on any thread count)
and that bad input raises `ggufrw.Error` naming the file and the field, leaving nothing behind."""

from __future__ import annotations

import json
import pathlib
import struct
import subprocess

import pytest

import ggufrw

from conftest import ROOT


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v == 0:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def _sentencepiece(pieces: list[str]) -> bytes:
    """A SentencePiece model proto: pieces with scores, the first three unknown and control."""
    out = bytearray()
    for i, p in enumerate(pieces):
        m = b"\x0a" + _varint(len(p.encode())) + p.encode() + b"\x15" + struct.pack("<f", -float(i))
        if i < 3:
            m += bytes([0x18, 2 if i == 0 else 3])
        out += b"\x0a" + _varint(len(m)) + m
    return bytes(out)


def _safetensors(tensors: dict[str, list[int]]) -> bytes:
    """F32 tensors of the given shapes, each filled with distinct values."""
    header, data, at = {}, bytearray(), 0
    for name, shape in tensors.items():
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + 4 * n]}
        data += struct.pack(f"<{n}f", *[(at // 4 + i) * 0.001 - 0.5 for i in range(n)])
        at += 4 * n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def _checkpoint(folder: pathlib.Path, hidden: int = 64) -> pathlib.Path:
    """A one-layer Llama with a 4-piece SentencePiece vocabulary."""
    folder.mkdir()
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 4, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5,
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer.model").write_bytes(_sentencepiece(["<unk>", "<s>", "</s>", "a"]))
    kv = 2 * hidden // 4
    tensors = {
        "model.embed_tokens.weight": [4, hidden],
        "model.norm.weight": [hidden],
        "lm_head.weight": [4, hidden],
        "model.layers.0.input_layernorm.weight": [hidden],
        "model.layers.0.post_attention_layernorm.weight": [hidden],
        "model.layers.0.self_attn.q_proj.weight": [hidden, hidden],
        "model.layers.0.self_attn.k_proj.weight": [kv, hidden],
        "model.layers.0.self_attn.v_proj.weight": [kv, hidden],
        "model.layers.0.self_attn.o_proj.weight": [hidden, hidden],
        "model.layers.0.mlp.gate_proj.weight": [128, hidden],
        "model.layers.0.mlp.up_proj.weight": [128, hidden],
        "model.layers.0.mlp.down_proj.weight": [hidden, 128],
    }
    (folder / "model.safetensors").write_bytes(_safetensors(tensors))
    return folder


@pytest.mark.parametrize("outtype", ["f32", "f16", "q8_0"])
def test_the_same_bytes_on_every_thread_count_and_as_the_command(tmp: pathlib.Path, outtype: str) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    one = ggufrw.convert_hf(model, tmp / "one.gguf", outtype=outtype, threads=1)
    two = ggufrw.convert_hf(model, tmp / "two.gguf", outtype=outtype, threads=2)
    assert one.outputs == [str(tmp / "one.gguf")] and two.outputs == [str(tmp / "two.gguf")]
    assert one.parameters == two.parameters > 0
    data = (tmp / "one.gguf").read_bytes()
    assert data == (tmp / "two.gguf").read_bytes()
    f = ggufrw.open(tmp / "one.gguf")
    assert f.metadata["general.architecture"] == "llama"
    q = next(t for t in f.tensors if t.name == "blk.0.attn_q.weight")
    assert q.type_name == outtype.upper()
    assert q.shape[0] == 64
    # The command, where the test suite has built it, writes the same bytes.
    for exe in (ROOT / "target" / "debug" / "ggufrw", ROOT / "target" / "release" / "ggufrw"):
        if exe.exists():
            subprocess.run(
                [str(exe), "convert-hf", str(model), "-o", str(tmp / "cli.gguf"), "--outtype", outtype],
                check=True, capture_output=True,
            )
            assert (tmp / "cli.gguf").read_bytes() == data, exe
            break


def test_dry_run_writes_nothing_and_names_the_file(tmp: pathlib.Path) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    plan = ggufrw.convert_hf(model, dry_run=True, outtype="bf16")
    assert [pathlib.Path(p).name for p in plan.outputs] == ["Tiny-Llama-38K-BF16.gguf"]
    assert not any(p.suffix == ".gguf" for p in model.iterdir())


def test_bad_input_names_the_file_and_field_and_leaves_nothing(tmp: pathlib.Path) -> None:
    model = _checkpoint(tmp / "Tiny-Llama")
    part = model / "model.safetensors"
    part.write_bytes(part.read_bytes()[:-10])  # the last tensor's data is cut short
    with pytest.raises(ggufrw.Error) as e:
        ggufrw.convert_hf(model, tmp / "out.gguf")
    assert e.value.kind == "field"
    assert e.value.file == str(part)
    assert "data_offsets" in e.value.path
    assert sorted(p.name for p in tmp.iterdir()) == ["Tiny-Llama"]
    with pytest.raises(ValueError, match="outtype"):
        ggufrw.convert_hf(model, tmp / "out.gguf", outtype="q4_k")


def llama_quantize() -> pathlib.Path:
    import os

    tools = os.environ.get("GGUFRW_LLAMA_TOOLS")
    if not tools:
        if os.environ.get("GGUFRW_REQUIRE_PEERS"):
            pytest.fail("GGUFRW_LLAMA_TOOLS is unset (scripts/ggml.sh --tools)")
        pytest.skip("GGUFRW_LLAMA_TOOLS is unset: llama-quantize is not built (scripts/ggml.sh --tools)")
    return pathlib.Path(tools) / "llama-quantize"


@pytest.mark.parametrize("preset,via,options", [
    ("Q4_K_M", "f16", []),
    ("Q8_0", "bf16", ["--leave-output-tensor"]),
    ("IQ4_NL", "auto", ["--output-tensor-type", "q6_k", "--token-embedding-type", "q8_0"]),
])
def test_quantize_in_one_pass_as_llama_quantize_after_converting(tmp: pathlib.Path, preset, via, options) -> None:
    tool = llama_quantize()
    model = _checkpoint(tmp / "Tiny-Llama", hidden=256)
    ours = ggufrw.convert_hf(model, tmp / "ours.gguf", quantize=preset, via=via, quantize_options=options)
    assert ours.outputs == [str(tmp / "ours.gguf")]
    # the two official steps: the conversion to `via`, then llama-quantize with the same options
    ggufrw.convert_hf(model, tmp / "converted.gguf", outtype=via)
    subprocess.run([str(tool), *options, str(tmp / "converted.gguf"), str(tmp / "theirs.gguf"), preset],
                   check=True, capture_output=True)
    assert (tmp / "ours.gguf").read_bytes() == (tmp / "theirs.gguf").read_bytes()
    with pytest.raises(ValueError, match="via"):
        ggufrw.convert_hf(model, tmp / "bad.gguf", quantize=preset, via="q4_k")
    assert not (tmp / "bad.gguf").exists()
