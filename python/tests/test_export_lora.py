"""ggufrw.export_lora: a LoRA adapter merged into its base (llama-export-lora's merge, held to
its bytes by tests/convert_lora.rs). Here: the merged weight is W + alpha / r * B @ A, written
F16 from an F16 base; an unadapted tensor is copied as it is; an adapter of another
architecture is refused and nothing is written."""

from __future__ import annotations

import pytest

import ggufrw


def write(gguf, path, arch, keys, tensors):
    w = gguf.GGUFWriter(str(path), arch)
    for k, v in keys.items():
        if isinstance(v, float):
            w.add_float32(k, v)
        else:
            w.add_string(k, v)
    for name, data in tensors.items():
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def pair(gguf, tmp_path):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((48, 64)) * 0.1).astype(np.float16)
    norm = rng.standard_normal(64).astype(np.float32)
    a = rng.standard_normal((8, 64)).astype(np.float32)  # [r, in]
    b = rng.standard_normal((48, 8)).astype(np.float32)  # [out, r]
    base, lora = tmp_path / "base.gguf", tmp_path / "lora.gguf"
    write(gguf, base, "llama", {}, {"blk.0.attn_q.weight": w, "blk.0.attn_norm.weight": norm})
    adapter = {"general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 4.0}
    write(gguf, lora, "llama", adapter,
          {"blk.0.attn_q.weight.lora_a": a, "blk.0.attn_q.weight.lora_b": b})
    return np, base, lora, (w, norm, a, b)


def test_export_lora_merges_w_plus_the_scaled_product(pair, tmp_path):
    np, base, lora, (w, norm, a, b) = pair
    out = tmp_path / "merged.gguf"
    merge = ggufrw.export_lora(base, [(lora, 0.5)], out, threads=2)
    assert (merge.merged, merge.tensors, merge.ignored) == (1, 2, [])
    f = ggufrw.open(out)
    assert f.metadata["general.file_type"] == 1
    got = np.asarray(f.tensor("blk.0.attn_q.weight").dequantize()).reshape(48, 64)
    want = w.astype(np.float32) + np.float32(0.5 * 4.0 / 8) * (b @ a)
    np.testing.assert_allclose(got, want.astype(np.float16).astype(np.float32), rtol=2e-3, atol=2e-3)
    assert f.tensor("blk.0.attn_norm.weight").type_name == "F32"
    np.testing.assert_array_equal(np.asarray(f.tensor("blk.0.attn_norm.weight").dequantize()), norm)


def test_export_lora_refuses_another_architecture_and_writes_nothing(gguf, pair, tmp_path):
    np, base, _, (w, norm, a, b) = pair
    other = tmp_path / "other.gguf"
    write(gguf, other, "qwen2", {"general.type": "adapter", "adapter.type": "lora"},
          {"blk.0.attn_q.weight.lora_a": a, "blk.0.attn_q.weight.lora_b": b})
    out = tmp_path / "merged.gguf"
    with pytest.raises(ggufrw.Error, match="arch"):
        ggufrw.export_lora(base, [other], out)
    assert not out.exists()
