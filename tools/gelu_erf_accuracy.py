"""The erf GELU's error in fp32 ulps, per range of x, on every backend present:

    python3 tools/gelu_erf_accuracy.py [--points 2000000]

gelu(x) = x * Phi(x) through `geglu(.., "none")` with a value half of ones, in fp32, against
x * erfc(-x / sqrt(2)) / 2 in float64, over x in [-15, 15] (evenly spaced, then as many
4 * randn). A range's largest error counts only points whose exact value is above 1e-30 and,
below x = -13, none: there Phi(x) is an fp32 denormal and loses bits in any formula. PyTorch's
own `F.gelu` is measured beside ours on the same device. Prints a markdown table
(PERFORMANCE.md, "The CPU backend", run GG).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

RANGES = ((-13.0, -4.0), (-4.0, -1.2), (-1.2, 0.0), (0.0, 1.2), (1.2, 15.0))


def ulp_errors(y: torch.Tensor, x: torch.Tensor) -> list[tuple[float, float]]:
    """(largest, mean) error in fp32 ulps of the exact value, per range of RANGES."""
    x64 = x.double().cpu()
    exact = x64 * 0.5 * torch.special.erfc(-x64 / math.sqrt(2))
    ulp = torch.finfo(torch.float32).eps * torch.pow(2.0, torch.floor(torch.log2(exact.abs())))
    err = (y.double().cpu() - exact).abs() / ulp
    out = []
    for lo, hi in RANGES:
        m = (x64 >= lo) & (x64 < hi) & (exact.abs() > 1e-30)
        out.append((err[m].max().item(), err[m].mean().item()))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=2_000_000)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from scripts._common import load_kernel

    n = args.points // 2
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.linspace(-15, 15, n), 4 * torch.randn(n, generator=g)])
    rows = []
    for backend in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        k = load_kernel(backend)
        xd = x.to(backend)
        y = k.geglu(torch.cat([torch.ones_like(xd), xd]).view(1, -1), "none").view(-1)
        rows.append((f"ltx-kernels, {backend}", ulp_errors(y, x)))
        rows.append((f"F.gelu, {backend}", ulp_errors(torch.nn.functional.gelu(xd), x)))
    head = " | ".join(f"[{lo:g}, {hi:g})" for lo, hi in RANGES)
    print(f"fp32 erf GELU, error in ulps of the exact value (largest / mean), {2 * n} points\n")
    print(f"| implementation | {head} |")
    print("| --- |" + " --- |" * len(RANGES))
    for name, errs in rows:
        print(f"| {name} | " + " | ".join(f"{mx:.3g} / {mean:.3g}" for mx, mean in errs) + " |")


if __name__ == "__main__":
    main()
