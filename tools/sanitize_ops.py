#!/usr/bin/env python3
"""Runs every CUDA op once on a few awkward shapes, for compute-sanitizer:

    compute-sanitizer --tool memcheck  python tools/sanitize_ops.py
    compute-sanitizer --tool racecheck python tools/sanitize_ops.py

The shapes cover the vector path, the scalar path (odd D), misaligned views (x[..., 1:]),
strided rows, one row, sub-warp groups (small D) and the streaming path (very long rows).
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def load():
    from kernels import get_kernel

    with open(ROOT / "build.toml", "rb") as f:
        repo_id = tomllib.load(f)["general"]["hub"]["repo-id"]
    os.environ.setdefault("LOCAL_KERNELS", f"{repo_id}={ROOT}")
    return get_kernel(repo_id, version=1)


def views(shape, dtype):
    """contiguous, misaligned (starts one element in) and strided-rows versions of `shape`."""
    *lead, D = shape
    yield "contiguous", torch.randn(shape, dtype=dtype, device="cuda")
    yield "misaligned", torch.randn(*lead, D + 1, dtype=dtype, device="cuda")[..., 1:]
    yield "strided", torch.randn(*lead, D + 8, dtype=dtype, device="cuda")[..., :D]


SHAPES = [(3, 7), (1, 2048), (4, 769), (2, 5, 3072), (2, 128), (1, 70000)]


def run_rms_norm(k, x):
    D = x.shape[-1]
    k.rms_norm(x, None)
    k.rms_norm(x, torch.randn(D, dtype=x.dtype, device="cuda"))
    k.rms_norm(x, torch.randn(D, device="cuda"), round_before_weight=True)


OPS = {
    "rms_norm": run_rms_norm,
}


def main() -> int:
    k = load()
    n = 0
    for name, fn in OPS.items():
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for shape in SHAPES:
                for layout, x in views(shape, dtype):
                    fn(k, x)
                    n += 1
    torch.cuda.synchronize()
    print(f"sanitize_ops: {n} op calls over {len(OPS)} op families finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
