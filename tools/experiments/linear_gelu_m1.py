#!/usr/bin/env python3
"""Run M: the LTX feed-forward's first half, `gelu(x @ W.T + b, tanh)`, four ways on one GPU:
eager torch (addmm, then F.gelu), the projection then our gelu_tanh, `linear_gelu_tanh` (the GELU
in cuBLASLt's epilogue) and torch.compile of the torch formula; each timed by benchmarks/sweep.py's
`bench` (CUDA-graph replays, L2 flushed), with its relative L2 error against float64.

    python tools/experiments/linear_gelu_m1.py [tokens x dim x inner ...]   # default: LTX 2B / 13B
"""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sweep  # noqa: E402


def main(argv):
    k = sweep.load_kernel()
    shapes = [tuple(int(n) for n in a.split("x")) for a in argv] or [(5376, 2048, 8192),
                                                                     (5376, 4096, 16384)]
    print("tokens x dim x inner | impl | us | rel err vs fp64")
    for M, K, N in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(M, K, device="cuda", generator=g).bfloat16()
        w = (torch.randn(N, K, device="cuda", generator=g) / K**0.5).bfloat16()
        b = (0.1 * torch.randn(N, device="cuda", generator=g)).bfloat16()
        ref = F.gelu(F.linear(x.double(), w.double(), b.double()), approximate="tanh")

        def eager():
            return F.gelu(F.linear(x, w, b), approximate="tanh")

        compiled = torch.compile(eager)
        impls = {
            "eager": eager,
            "linear + ltx gelu_tanh": lambda: k.gelu_tanh(F.linear(x, w, b)),
            "ltx linear_gelu_tanh (epilogue)": lambda: k.linear_gelu_tanh(x, w, b),
            "compile": compiled,
            "linear alone": lambda: F.linear(x, w, b),
        }
        for name, fn in impls.items():
            us = sweep.bench(fn)
            out = fn()
            err = ((out.double() - ref).norm() / ref.norm()).item() if name != "linear alone" \
                else float("nan")
            print(f"{M}x{K}x{N} | {name} | {us:.1f} | {err:.2e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
