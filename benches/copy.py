#!/usr/bin/env python3
"""Copy benchmark: the streaming writer and `ggufrw edit` against `cp` of the same bytes.

Usage: benches/copy.py [--size-mib N] [--runs R] [--dir DIR]   (defaults: 2048 MiB, 3 runs, target/)

Builds the release binaries, then in one run, side by side, on the same file system:
  - cp SRC DST (and cp + fsync of DST, since every ggufrw write is synced before its rename)
  - write_f32 raw:    a plain write + fsync of the same bytes from memory (the floor for the next)
  - write_f32 memory: the writer with the tensor data in memory
  - write_f32 file:   the writer with the tensor data as ranges of another file
  - ggufrw edit -o:   a metadata change written to a new file
  - ggufrw edit --in-place, on the big file and on a 20 MB file
  - ggufrw convert-endian -o (every f32 swapped) and --in-place
  - ggufrw split into 4 shards (of 2 GiB: 2 tensors each) and merge them back
  - ggufrw hash --sha256 / --xxh64 / --all (per tensor and per file), against sha256sum
Prints the median wall time of each (for the in-memory writer, the write alone, not building
the data), its ratio to cp (and to cp + fsync), and its peak RSS (the in-memory writer's includes
the data it holds).
"""
import argparse, os, random, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


TIME = "/usr/bin/time"


def run(cmd, then_fsync=None, own_time=False):
    """Runs cmd, then fsyncs `then_fsync` if given; returns (seconds, peak RSS of cmd in MiB).
    With own_time, the seconds are what cmd printed (its write alone). Peak RSS comes from
    /usr/bin/time where installed (a process forked from Python would report Python's)."""
    measured = [TIME, "-f", "%M", *cmd] if os.path.exists(TIME) else cmd
    start = time.perf_counter()
    proc = subprocess.run(measured, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if then_fsync:
        fd = os.open(then_fsync, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed: {proc.stderr}")
    rss = float(proc.stderr.strip().splitlines()[-1]) / 1024 if measured[0] == TIME else float("nan")
    if own_time:
        elapsed = float(proc.stdout.strip())
    return elapsed, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=2048)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(ROOT, "target", "copy-bench"))
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "ggufrw", "--example", "write_f32"],
                   cwd=ROOT, check=True)
    ggufrw = os.path.join(ROOT, "target", "release", "ggufrw")
    write_f32 = os.path.join(ROOT, "target", "release", "examples", "write_f32")
    os.makedirs(args.dir, exist_ok=True)
    d = lambda name: os.path.join(args.dir, name)
    size = args.size_mib << 20

    # The source data: raw f32s, and a GGUF file holding them.
    with open(d("src.raw"), "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(args.size_mib):
            f.write(block)
    run([write_f32, "file", d("model.gguf"), d("src.raw")])
    run([write_f32, "memory", d("small.gguf"), str(20 << 20)])

    # Shards to merge, made once.
    shards = d("shards")
    os.makedirs(shards, exist_ok=True)
    per_shard = str(max(1, args.size_mib // 256 // 4))
    run([ggufrw, "split", "--max-tensors", per_shard, d("model.gguf"), os.path.join(shards, "m")])
    first = os.path.join(shards, sorted(os.listdir(shards))[0])

    def split_once():
        out = d("split-out")
        if os.path.exists(out):
            subprocess.run(["rm", "-rf", out], check=True)
        os.makedirs(out)
        return run([ggufrw, "split", "--max-tensors", per_shard, d("model.gguf"), os.path.join(out, "m")])

    cp = "/bin/cp"
    cases = {
        "cp": lambda: run([cp, d("model.gguf"), d("cp.gguf")]),
        "cp + fsync": lambda: run([cp, d("model.gguf"), d("cp.gguf")], then_fsync=d("cp.gguf")),
        "raw write, from memory": lambda: run([write_f32, "raw", d("out.gguf"), str(size)], own_time=True),
        "writer, data in memory": lambda: run([write_f32, "memory", d("out.gguf"), str(size)], own_time=True),
        "writer, data from a file": lambda: run([write_f32, "file", d("out.gguf"), d("src.raw")]),
        "edit -o": lambda: run([ggufrw, "edit", d("model.gguf"), "-o", d("out.gguf"),
                                "--set", "general.name=string:Edited"]),
        "edit --in-place (big)": lambda: run([ggufrw, "edit", d("model.gguf"), "--in-place",
                                              "--set", "general.architecture=string:gemma"]),
        "edit --in-place (20 MB)": lambda: run([ggufrw, "edit", d("small.gguf"), "--in-place",
                                                "--set", "general.architecture=string:gemma"]),
        "convert-endian -o": lambda: run([ggufrw, "convert-endian", d("model.gguf"), "-o", d("out.gguf")]),
        "convert-endian --in-place": lambda: run([ggufrw, "convert-endian", d("small.gguf"), "--in-place"]),
        "split": split_once,
        "merge": lambda: run([ggufrw, "merge", first, d("out.gguf")]),
        "sha256sum": lambda: run(["sha256sum", d("model.gguf")]),
        "hash --sha256 --no-layer": lambda: run([ggufrw, "hash", "--sha256", "--no-layer", d("model.gguf")]),
        "hash --sha256": lambda: run([ggufrw, "hash", "--sha256", d("model.gguf")]),
        "hash --xxh64": lambda: run([ggufrw, "hash", "--xxh64", d("model.gguf")]),
        "hash --all": lambda: run([ggufrw, "hash", "--all", d("model.gguf")]),
    }
    results = {name: [] for name in cases}
    for run_no in range(args.runs):
        # Whichever case follows the deletion of a 2 GiB file pays for the kernel reclaiming it
        # (seen on tmpfs: seconds): shuffle the order so that no case always pays, and settle
        # the page cache before each case where allowed.
        order = list(cases)
        random.Random(run_no).shuffle(order)
        for name in order:
            for stale in ("cp.gguf", "out.gguf"):
                if os.path.exists(d(stale)):
                    os.remove(d(stale))
            subprocess.run(["sync"], check=True)
            try:
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("1\n")
            except OSError:
                pass
            results[name].append(cases[name]())
    cp = statistics.median(t for t, _ in results["cp"])
    cp_sync_t = statistics.median(t for t, _ in results["cp + fsync"])
    print(f"{args.size_mib} MiB, median of {args.runs} runs, in {args.dir}")
    print(f"{'case':<26} {'seconds':>9} {'× cp':>7} {'× cp+fsync':>11} {'GB/s':>6} {'peak RSS MiB':>13}")
    for name, samples in results.items():
        t = statistics.median(s for s, _ in samples)
        rss = max(m for _, m in samples)
        rate = size / t / 1e9
        print(f"{name:<26} {t:>9.3f} {t / cp:>7.2f} {t / cp_sync_t:>11.2f} {rate:>6.2f} {rss:>13.1f}")
    for name in ("src.raw", "model.gguf", "small.gguf", "cp.gguf", "out.gguf"):
        if os.path.exists(d(name)):
            os.remove(d(name))
    subprocess.run(["rm", "-rf", shards, d("split-out")], check=True)


if __name__ == "__main__":
    main()
