#!/usr/bin/env python3
"""How often the steps ggufrw takes for Gemma 3n's `activation_sparsity_scale` (torch's
`Normal(0, 1).icdf` of an f32 probability: `2p - 1` in f32, the inverse error function of it
in double from a rational start and two Newton steps with the C library's `erf`, rounded to
f32, times √2 in f32; hf/src/models/gemma.rs) give torch's own value.

Run with the reference's Python (scripts/convert-ref.sh), which has torch:
    PY tests/convert_hf/normal_quantile.py [--count N] [--seed S]
Prints the published values' results and the count of random probabilities that differ.
"""
import argparse
import ctypes
import ctypes.util
import math
import random

import numpy as np
import torch

LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
LIBM.erf.restype, LIBM.erf.argtypes = ctypes.c_double, [ctypes.c_double]
F = np.float32


def erfinv(y: float) -> float:
    a = [0.886226899, -1.645349621, 0.914624893, -0.140543331]
    b = [-2.118377725, 1.442710462, -0.329097515, 0.012229801]
    c = [-1.970840454, -1.624906493, 3.429567803, 1.641345311]
    d = [3.543889200, 1.637067800]
    ya = abs(y)
    if ya >= 1.0:
        return math.nan if ya > 1.0 else math.copysign(math.inf, y)
    if ya <= 0.7:
        z = y * y
        x = y * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0)
    else:
        z = math.sqrt(-math.log((1.0 - ya) / 2.0))
        x = math.copysign(((c[3] * z + c[2]) * z + c[1]) * z + c[0], y) / ((d[1] * z + d[0]) * z + 1.0)
    for _ in range(2):
        x = x - (LIBM.erf(x) - y) / ((2.0 / math.sqrt(math.pi)) * math.exp(-x * x))
    return x


def ours(p: float) -> float:
    t = F(2) * F(p) - F(1)
    return float(F(erfinv(float(t))) * F(math.sqrt(2)))


def torchs(p: float) -> float:
    return torch.distributions.normal.Normal(0, 1).icdf(torch.tensor(p, dtype=torch.float32)).item()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for p in (0.95, 0.0):
        print(f"p={p}: torch {torchs(p)!r}, ggufrw's steps {ours(p)!r}")
    rng = random.Random(args.seed)
    values = [rng.random() for _ in range(args.count)]
    differ = [p for p in values if ours(p) != torchs(p)]
    print(f"{len(differ)} of {len(values)} random probabilities differ from torch {torch.__version__}")
    for p in differ[:5]:
        print(f"  p={p!r}: torch {torchs(p)!r}, ggufrw's steps {ours(p)!r}")


if __name__ == "__main__":
    main()
