#!/usr/bin/env python3
"""Runs every CUDA op once on a few awkward shapes, for compute-sanitizer:

    compute-sanitizer --tool memcheck  python tools/sanitize_ops.py
    compute-sanitizer --tool racecheck python tools/sanitize_ops.py

The shapes cover the vector path, the scalar path (odd D), misaligned views (x[..., 1:]),
strided rows, one row, sub-warp groups (small D) and the streaming path (very long rows);
the rms_norm_grids family a grid of several waves.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
DEVICE = "cuda"  # tests/test_benchmarks.py runs the same calls on the CPU to keep them valid


def load():
    from kernels import get_kernel

    with open(ROOT / "build.toml", "rb") as f:
        repo_id = tomllib.load(f)["general"]["hub"]["repo-id"]
    os.environ.setdefault("LOCAL_KERNELS", f"{repo_id}={ROOT}")
    return get_kernel(repo_id, version=1)


def views(shape, dtype):
    """contiguous, misaligned (starts one element in) and strided-rows versions of `shape`."""
    *lead, D = shape
    yield "contiguous", torch.randn(shape, dtype=dtype, device=DEVICE)
    yield "misaligned", torch.randn(*lead, D + 1, dtype=dtype, device=DEVICE)[..., 1:]
    yield "strided", torch.randn(*lead, D + 8, dtype=dtype, device=DEVICE)[..., :D]


# (3, 37, 1000): on sm_90 the dense paths with several rows a block, a last block part full
# and lanes past the row's end (125 bf16 vectors in 128 threads).
SHAPES = [(3, 7), (1, 2048), (4, 770), (2, 5, 3072), (2, 128), (1, 70000), (2, 8, 512),
          (3, 37, 1000)]


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def run_rms_norm(k, x):
    D = x.shape[-1]
    k.rms_norm(x, None)
    k.rms_norm(x, rnd(D, dtype=x.dtype))
    k.rms_norm(x, rnd(D), round_before_weight=True)
    xc, res = x.clone(), torch.randn_like(x)
    k.fused_add_rms_norm(xc, res, rnd(D, dtype=x.dtype))


def run_adaln(k, x):
    D = x.shape[-1]
    lead = x.shape[:-1]
    per_row = rnd(*lead, D, dtype=x.dtype)
    per_dim = rnd(D)
    # one row per sample ([B, 1, D]): with 8 rows a sample, the CUDA staged path stages it once
    # per block
    per_sample = rnd(lead[0], *([1] * (len(lead) - 1)), D, dtype=x.dtype)
    for norm in ("rms", "layer"):
        k.adaln(x, per_row, per_row, norm=norm)
        k.adaln(x, per_sample, per_sample, norm=norm)
        k.gated_residual_adaln(x, torch.randn_like(x), per_sample, per_sample, per_sample,
                               norm=norm)
        k.adaln(x, per_dim, per_dim, norm=norm, weight=rnd(D, dtype=x.dtype),
                bias=rnd(D, dtype=x.dtype))
        k.gated_residual_adaln(x, torch.randn_like(x), per_row, per_row, per_row, norm=norm)
        k.gated_residual_adaln(x, torch.randn_like(x), None, per_dim, per_dim, norm=norm)
    y = torch.randn_like(x)
    for gate in (per_row, per_sample, per_dim):
        k.gated_residual(x, y, gate)
    k.gated_residual(x, y, per_sample, out=x)  # in place


def run_activation(k, x):
    k.gelu_tanh(x)
    k.silu(x)
    if x.shape[-1] % 2 == 0:
        k.geglu(x, "tanh")
        k.geglu(x, "none")
        k.silu_and_mul(x)
    k.silu_mul(x, torch.randn_like(x))  # gate and up at their own strides
    k.silu_mul(x, x.clone())


def run_rope(k, x):
    D = x.shape[-1]
    if D % 2:
        return
    lead = x.shape[:-1]
    for R in sorted({D, max(2, D // 2 // 2 * 2)}):
        cos, sin = rnd(*lead, R), rnd(*lead, R)
        for inter in (True, False):
            k.rope(x, cos, sin, interleaved=inter)
            k.rope(x, cos.to(x.dtype), sin.to(x.dtype), interleaved=inter)
            k.rms_norm_rope(x, rnd(D, dtype=x.dtype), cos, sin, 1e-5, interleaved=inter)
            # q and k of one shape (one launch for both), and k of a different layout
            k.rms_norm_rope_qk(x, torch.randn_like(x), rnd(D, dtype=x.dtype), None, cos, sin,
                               1e-5, interleaved=inter)
            # pair tables ([..., R/2]), per row, and broadcast over the first dim (LTX's one
            # sample's tables [1, S, R/2] for the batch)
            ch, sh = cos[..., : R // 2].contiguous(), sin[..., : R // 2].contiguous()
            k.rms_norm_rope(x, None, ch, sh, 1e-5, interleaved=inter, pair_tables=True)
            k.rms_norm_rope_qk(x, torch.randn_like(x), None, None, ch[:1], sh[:1], 1e-5,
                               interleaved=inter, pair_tables=True)
    if D == 128:  # transformers' GQA layout with enough tokens for the CUDA heads path (under
        # LTX_ROPE_FLAT=0; the flat path at the defaults, walking the views in memory order)
        S, Hq, Hk = 6000, 4, 2
        qkv = rnd(1, S, (Hq + 2 * Hk) * D, dtype=x.dtype)
        q = qkv[..., : Hq * D].view(1, S, Hq, D).transpose(1, 2)
        kk = qkv[..., Hq * D : (Hq + Hk) * D].view(1, S, Hk, D).transpose(1, 2)
        cos, sin = rnd(1, 1, S, D, dtype=x.dtype), rnd(1, 1, S, D, dtype=x.dtype)
        for inter in (True, False):
            k.rope_qk(q, kk, cos, sin, interleaved=inter)
        # a pass-through tail of one 16-byte vector in 16 bits (R = 64 of 72): the last
        # split-halves item of a row holds one vector (its partner position is the row's end)
        q, kk = rnd(1, Hq, S, 72, dtype=x.dtype), rnd(1, Hk, S, 72, dtype=x.dtype)
        cos, sin = rnd(1, 1, S, 64, dtype=x.dtype), rnd(1, 1, S, 64, dtype=x.dtype)
        k.rope_qk(q, kk, cos, sin, interleaved=False)
    if D % 4 == 0:  # per head: two heads of D/2
        cos, sin = rnd(*lead, 1, D // 2), rnd(*lead, 1, D // 2)
        k.rms_norm_rope(x, rnd(D // 2), cos, sin, 1e-6, interleaved=False, per_head=True,
                        num_heads=2)
        # GQA-like: q with two heads, k with one (a strided view of x): one after the other
        k.rms_norm_rope_qk(x.unflatten(-1, (2, D // 2)), x[..., : D // 2].unsqueeze(-2),
                           rnd(D // 2), rnd(D // 2), cos, sin, 1e-6, interleaved=True,
                           per_head=True)


OPS = {
    "rms_norm": run_rms_norm,
    "adaln": run_adaln,
    "activation": run_activation,
    "rope": run_rope,
    "rms_norm_grids": run_rms_norm,
    "rms_norm_two_pass": run_rms_norm,
}
# Families with shapes of their own instead of SHAPES. rms_norm_grids: a grid of several waves
# of rows past the dense path's 8 MiB of x (9 MiB in 16 bits), rows of 513 vectors: on sm_90
# rms_norm.cu's register path beyond one wave (groups of 160 threads, lanes past the row's
# end), which SHAPES's one-wave grids never reach.
# rms_norm_two_pass: rows of 1024 and 2048 16-byte vectors for rms_norm.cu's two-pass path (two
# and four vectors a thread in 512 threads: D = 8192 and 16384 in 16 bits, 8192 in fp32; fp32's
# D = 16384, 4096 vectors, is beyond the path and goes the other way); at the defaults it takes
# only grids from 64 MiB of x in 16 bits, so sanitize it with LTX_RMS_TWO_PASS=1
# LTX_RMS_TWO_PASS_MIN_MB=0 LTX_RMS_TWO_PASS_MAX_VEC=4096 (read as its cap, 2048; every dtype;
# misaligned views take the scalar paths).
FAMILY_SHAPES = {"rms_norm_grids": [(1100, 4104)], "rms_norm_two_pass": [(6, 8192), (3, 16384)]}


def shapes_of(name):
    return FAMILY_SHAPES.get(name, SHAPES)


def main() -> int:
    """Every op family, or those named in the arguments (e.g. `rope rms_norm`)."""
    unknown = [a for a in sys.argv[1:] if a not in OPS]
    if unknown:
        raise SystemExit(f"unknown op families {unknown}; choose from {list(OPS)}")
    k = load()
    n = 0
    for name, fn in OPS.items():
        if sys.argv[1:] and name not in sys.argv[1:]:
            continue
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for shape in shapes_of(name):
                for layout, x in views(shape, dtype):
                    fn(k, x)
                    n += 1
    torch.cuda.synchronize()
    print(f"sanitize_ops: {n} op calls over {len(sys.argv[1:]) or len(OPS)} op families finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
