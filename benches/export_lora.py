#!/usr/bin/env python3
"""`ggufrw export-lora` against llama.cpp's `llama-export-lora` (the pinned tree's, built by
`scripts/ggml.sh --tools`).

Usage: benches/export_lora.py [--pairs 3] [--exe BUILD/ggufrw] [--threads 2] [--rank 128]

Uses the adapter of benches/convert_lora.py (made once by it: peft on a Qwen2-0.5B-shaped
model, rank `--rank` on every attention and MLP projection), converted to F16 by
`ggufrw convert-lora` (the reference's bytes), and a base of that shape written once with random
F16 weights (24 layers of width 896, MLP 4864: 0.72 GB; cached under
~/.cache/ggufrw/bench-export-lora). Each pair runs ours and the reference in turn, A B A B…,
with the same thread count, each as a whole process under /usr/bin/time; the outputs are
compared byte for byte after each pair; it prints the median wall time and peak RSS of each and
the median of the per-pair ratios (ours / reference) with their spread.
"""
import argparse, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from convert_hf import lines_of, timed  # noqa: E402

CACHE = os.path.expanduser("~/.cache/ggufrw/bench-export-lora")

MAKE_BASE = r'''
import sys, numpy as np
from gguf import GGUFWriter
out = sys.argv[1]
w = GGUFWriter(out, "qwen2")
w.add_block_count(24); w.add_context_length(4096); w.add_embedding_length(896)
w.add_feed_forward_length(4864); w.add_head_count(14); w.add_head_count_kv(2)
w.add_file_type(1)
rng = np.random.default_rng(0)
def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16))
t("token_embd.weight", 1024, 896)
for b in range(24):
    p = f"blk.{b}."
    w.add_tensor(p + "attn_norm.weight", np.ones(896, dtype=np.float32))
    t(p + "attn_q.weight", 896, 896); t(p + "attn_k.weight", 128, 896); t(p + "attn_v.weight", 128, 896)
    w.add_tensor(p + "attn_q.bias", np.zeros(896, dtype=np.float32))
    w.add_tensor(p + "attn_k.bias", np.zeros(128, dtype=np.float32))
    w.add_tensor(p + "attn_v.bias", np.zeros(128, dtype=np.float32))
    t(p + "attn_output.weight", 896, 896)
    w.add_tensor(p + "ffn_norm.weight", np.ones(896, dtype=np.float32))
    t(p + "ffn_gate.weight", 4864, 896); t(p + "ffn_up.weight", 4864, 896); t(p + "ffn_down.weight", 896, 4864)
w.add_tensor("output_norm.weight", np.ones(896, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--exe")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rank", type=int, default=128)
    a = ap.parse_args()
    exe = os.path.abspath(a.exe) if a.exe else None
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "ggufrw-cli"], cwd=ROOT, check=True)
        exe = os.path.join(ROOT, "target/release/ggufrw")
    tool = os.path.join(lines_of([os.path.join(ROOT, "scripts/ggml.sh"), "--tools"])[-1], "llama-export-lora")
    py = lines_of([os.path.join(ROOT, "scripts/peers.sh")])[-1]
    made = os.path.expanduser(f"~/.cache/ggufrw/bench-convert-lora/Qwen2-0.5B-shaped-r{a.rank}")
    if not os.path.exists(os.path.join(made, ".complete")):
        subprocess.run([sys.executable, os.path.join(ROOT, "benches/convert_lora.py"), "--pairs", "1",
                        "--only", "f16", "--rank", str(a.rank), "--exe", exe], check=True)
    os.makedirs(CACHE, exist_ok=True)
    base = os.path.join(CACHE, "base-qwen2-0.5B-shaped-f16.gguf")
    if not os.path.exists(base):
        print("making the base (once)…", file=sys.stderr)
        subprocess.run([py, "-c", MAKE_BASE, base + ".part"], check=True)
        os.rename(base + ".part", base)
    adapter = os.path.join(CACHE, f"adapter-r{a.rank}-f16.gguf")
    subprocess.run([exe, "convert-lora", os.path.join(made, "adapter"), "--base", os.path.join(made, "base"),
                    "--outtype", "f16", "-o", adapter], check=True, capture_output=True)
    for f in (base, adapter):
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass
    t = str(a.threads)
    print(f"base: {base} ({os.path.getsize(base) / 1e9:.2f} GB F16), adapter rank {a.rank} "
          f"({os.path.getsize(adapter) / 1e6:.0f} MB F16), {a.threads} threads, {a.pairs} pairs, warm page cache")
    print(f"{'row':8} {'ours s':>8} {'ref s':>8} {'wall ratio [spread]':>24} {'ours MiB':>9} {'ref MiB':>9} {'RSS ratio':>10}")
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        ours_w, ref_w, ours_m, ref_m, ratios = [], [], [], [], []
        for _ in range(a.pairs):
            w1, m1 = timed([[exe, "export-lora", "-m", base, "--lora", adapter, "-o", "ours.gguf", "-t", t]], work)
            w2, m2 = timed([[tool, "-m", base, "--lora", adapter, "-o", "ref.gguf", "-t", t]], work)
            if subprocess.run(["cmp", "-s", "ours.gguf", "ref.gguf"], cwd=work).returncode != 0:
                sys.exit("the outputs differ")
            ours_w.append(w1); ref_w.append(w2); ours_m.append(m1); ref_m.append(m2)
            ratios.append(w1 / w2)
            for f in os.listdir(work):
                os.remove(os.path.join(work, f))
        med = statistics.median
        print(f"{'merge':8} {med(ours_w):8.2f} {med(ref_w):8.2f} {med(ratios):10.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"
              f" {med(ours_m) / 1024:9.0f} {med(ref_m) / 1024:9.0f} {med(ours_m) / med(ref_m):10.3f}")


if __name__ == "__main__":
    main()
