#!/usr/bin/env python3
"""`ggufrw convert-lora` against the reference, llama.cpp's `convert_lora_to_gguf.py`.

Usage: benches/convert_lora.py [--pairs 3] [--exe BUILD/ggufrw] [--only f32,f16,q8_0] [--rank 128]

Needs the reference's environment (`scripts/convert-ref.sh`: torch, transformers, peft). Makes
(once, cached under ~/.cache/ggufrw/bench-convert-lora) the adapter peft itself makes on a
Qwen2-0.5B-shaped model (transformers' class from its config, random weights: width 896, 24
layers, MLP 4864) with rank `--rank` on every attention and MLP projection, both factors random
(`init_lora_weights=False`; rank 128: ~282 MB of float32), and a base folder of its config
alone; then for each row runs ours and the reference in turn, A B A B…, each as a whole process
under /usr/bin/time, compares the outputs byte for byte after each pair, and prints the median
wall time and peak RSS of each and the median of the per-pair ratios (ours / reference) with
their spread. The page cache is warm (the adapter is read once before the first pair).
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from convert_hf import lines_of, timed  # noqa: E402

CACHE = os.path.expanduser("~/.cache/ggufrw/bench-convert-lora")

MAKE = r'''
import sys, torch, warnings
from pathlib import Path
from transformers import Qwen2Config, AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
out, rank = Path(sys.argv[1]), int(sys.argv[2])
cfg = Qwen2Config(vocab_size=1024, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                  tie_word_embeddings=True, architectures=["Qwen2ForCausalLM"])
(out / "base").mkdir(parents=True, exist_ok=True)
cfg.save_pretrained(str(out / "base"))
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
lora = LoraConfig(r=rank, lora_alpha=2 * rank, init_lora_weights=False,
                  target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    get_peft_model(model, lora).save_pretrained(str(out / "adapter"))
(out / ".complete").write_text("")
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--exe")
    ap.add_argument("--only", default="f32,f16,q8_0")
    ap.add_argument("--rank", type=int, default=128)
    a = ap.parse_args()
    made = os.path.join(CACHE, f"Qwen2-0.5B-shaped-r{a.rank}")
    adapter, base = os.path.join(made, "adapter"), os.path.join(made, "base")
    py, tree = lines_of([os.path.join(ROOT, "scripts/convert-ref.sh")])[:2]
    exe = os.path.abspath(a.exe) if a.exe else None
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "ggufrw-cli"], cwd=ROOT, check=True)
        exe = os.path.join(ROOT, "target/release/ggufrw")
    if not os.path.exists(os.path.join(made, ".complete")):
        print("making the adapter (once)…", file=sys.stderr)
        shutil.rmtree(made, ignore_errors=True)
        subprocess.run([py, "-c", MAKE, made, str(a.rank)], check=True)
    weights = os.path.join(adapter, "adapter_model.safetensors")
    size = os.path.getsize(weights)
    with open(weights, "rb") as fh:
        while fh.read(1 << 24):
            pass
    ref = [py, os.path.join(tree, "convert_lora_to_gguf.py"), adapter, "--base", base]
    print(f"adapter: {adapter} ({size / 1e6:.0f} MB float32, rank {a.rank}), {a.pairs} pairs, warm page cache")
    print(f"{'row':8} {'ours s':>8} {'ref s':>8} {'wall ratio [spread]':>24} {'ours MiB':>9} {'ref MiB':>9} {'RSS ratio':>10}")
    os.makedirs(CACHE, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        for row in a.only.split(","):
            ours_w, ref_w, ours_m, ref_m, ratios = [], [], [], [], []
            for _ in range(a.pairs):
                w1, m1 = timed([[exe, "convert-lora", adapter, "--base", base, "--outtype", row,
                                 "-o", "ours.gguf"]], work)
                w2, m2 = timed([ref + ["--outtype", row, "--outfile", "ref.gguf"]], work)
                if subprocess.run(["cmp", "-s", "ours.gguf", "ref.gguf"], cwd=work).returncode != 0:
                    sys.exit(f"{row}: the outputs differ")
                ours_w.append(w1); ref_w.append(w2); ours_m.append(m1); ref_m.append(m2)
                ratios.append(w1 / w2)
                for f in os.listdir(work):
                    os.remove(os.path.join(work, f))
            med = statistics.median
            print(f"{row:8} {med(ours_w):8.2f} {med(ref_w):8.2f} {med(ratios):10.3f} [{min(ratios):.3f}–{max(ratios):.3f}]"
                  f" {med(ours_m) / 1024:9.0f} {med(ref_m) / 1024:9.0f} {med(ours_m) / med(ref_m):10.3f}")


if __name__ == "__main__":
    main()
