#!/usr/bin/env python3
"""A short tour of ltx-kernels: load it the way users do, run every op on the best device
present, check it against PyTorch and print the error and the time of each.

    python tools/build.py && python example.py      # or: bash tools/run_example.sh

Loads with `kernels.get_kernel("<repo-id>", version=1)`; unless LOCAL_KERNELS is already set,
it points LOCAL_KERNELS at this checkout so that the local build/ is used instead of the Hub.
"""

from __future__ import annotations

import os
import time
import tomllib
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent
with open(ROOT / "build.toml", "rb") as f:
    REPO_ID = tomllib.load(f)["general"]["hub"]["repo-id"]


def load():
    from kernels import get_kernel

    if "LOCAL_KERNELS" not in os.environ and (ROOT / "build").is_dir():
        os.environ["LOCAL_KERNELS"] = f"{REPO_ID}={ROOT}"
        print(f"LOCAL_KERNELS={os.environ['LOCAL_KERNELS']} (the local build)")
    return get_kernel(REPO_ID, version=1)


def timeit(fn, device: torch.device, reps: int = 20) -> float:
    """Mean time per call in microseconds (after warm-up)."""
    for _ in range(3):
        fn()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3 / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) * 1e6 / reps


def llama_rms_norm(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def ltx_rope(x, cos, sin):  # diffusers' LTX-Video apply_rotary_emb (interleaved pairs)
    re, im = x.unflatten(2, (-1, 2)).unbind(-1)
    rot = torch.stack([-im, re], dim=-1).flatten(2)
    return (x.float() * cos + rot.float() * sin).to(x.dtype)


def cases(k, device, dtype):
    """(name, ours, PyTorch's) for every op, on LTX-Video / LLaMA-shaped inputs."""
    B, S, D = (2, 2688, 2048) if device.type == "cuda" else (1, 256, 2048)
    x = torch.randn(B, S, D, device=device, dtype=dtype)
    y = torch.randn(B, S, D, device=device, dtype=dtype)
    w = (1 + 0.1 * torch.randn(D, device=device)).to(dtype)
    scale, shift, gate = (0.1 * torch.randn(B, 1, D, device=device, dtype=dtype) for _ in "abc")
    ff = torch.randn(B, S, 2 * D, device=device, dtype=dtype)
    ang = torch.rand(B, S, D // 2, device=device) * 6.28
    cos_i, sin_i = ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)
    H, Dh = 32, 64
    q = torch.randn(B, H, S, Dh, device=device, dtype=dtype)
    kk = torch.randn(B, H, S, Dh, device=device, dtype=dtype)
    a2 = torch.rand(B, S, Dh // 2, device=device) * 6.28
    cos_h = torch.cat((a2, a2), -1).cos().to(dtype)
    sin_h = torch.cat((a2, a2), -1).sin().to(dtype)

    def rms(t):
        return F.rms_norm(t.float(), (t.shape[-1],), eps=1e-6).to(t.dtype)

    def fused_add(xc, rc):
        k.fused_add_rms_norm(xc, rc, w, 1e-6)
        return xc

    yield ("rms_norm", lambda: k.rms_norm(x, w, 1e-6, round_before_weight=True),
           lambda: llama_rms_norm(x, w, 1e-6))
    yield ("rms_norm (no weight)", lambda: k.rms_norm(x, None, 1e-6), lambda: rms(x))
    yield ("fused_add_rms_norm", lambda: fused_add(x.clone(), y.clone()),
           lambda: llama_rms_norm(x + y, w, 1e-6))
    yield ("adaln", lambda: k.adaln(x, scale, shift, norm="rms", eps=1e-6),
           lambda: rms(x) * (1 + scale) + shift)
    yield ("adaln (layer norm)", lambda: k.adaln(x, scale, shift, norm="layer", eps=1e-6),
           lambda: F.layer_norm(x.float(), (D,), eps=1e-6).to(dtype) * (1 + scale) + shift)
    yield ("gated_residual_adaln",
           lambda: k.gated_residual_adaln(x, y, gate, scale, shift, norm="rms", eps=1e-6),
           lambda: (x + y * gate, rms(x + y * gate) * (1 + scale) + shift))
    yield ("gated_residual", lambda: k.gated_residual(x, y, gate), lambda: x + y * gate)
    yield ("gelu_tanh", lambda: k.gelu_tanh(ff), lambda: F.gelu(ff, approximate="tanh"))
    # the LTX feed-forward's projection + GELU (4 x dim on CUDA; a narrower one on the CPU)
    n_ff = 4 * D if device.type == "cuda" else 512
    w_ff = (torch.randn(n_ff, D, device=device) / D**0.5).to(dtype)
    b_ff = (0.1 * torch.randn(n_ff, device=device)).to(dtype)
    yield ("linear_gelu_tanh", lambda: k.linear_gelu_tanh(x, w_ff, b_ff),
           lambda: F.gelu(F.linear(x, w_ff, b_ff), approximate="tanh"))
    yield ("silu", lambda: k.silu(ff), lambda: F.silu(ff))
    yield ("geglu", lambda: k.geglu(ff, "tanh"),
           lambda: ff[..., :D] * F.gelu(ff[..., D:], approximate="tanh"))
    yield ("silu_and_mul", lambda: k.silu_and_mul(ff), lambda: F.silu(ff[..., :D]) * ff[..., D:])
    yield ("rope (LTX, interleaved)", lambda: k.rope(x, cos_i, sin_i, interleaved=True),
           lambda: ltx_rope(x, cos_i, sin_i))
    yield ("rope_qk (LLaMA, halves)",
           lambda: k.rope_qk(q, kk, cos_h.unsqueeze(1), sin_h.unsqueeze(1), interleaved=False),
           lambda: (q * cos_h.unsqueeze(1) + rotate_half(q) * sin_h.unsqueeze(1),
                    kk * cos_h.unsqueeze(1) + rotate_half(kk) * sin_h.unsqueeze(1)))
    yield ("rms_norm_rope (LTX q/k)",
           lambda: k.rms_norm_rope(x, w, cos_i, sin_i, 1e-5, interleaved=True),
           lambda: ltx_rope(F.rms_norm(x, (D,), w, 1e-5), cos_i, sin_i))
    yield ("rms_norm_rope_qk (LTX)",
           lambda: k.rms_norm_rope_qk(x, y, w, None, cos_i, sin_i, 1e-5, interleaved=True),
           lambda: (ltx_rope(F.rms_norm(x, (D,), w, 1e-5), cos_i, sin_i),
                    ltx_rope(F.rms_norm(y, (D,), None, 1e-5), cos_i, sin_i)))


def main() -> int:
    k = load()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"ltx-kernels on {name} ({device.type}), {dtype}, torch {torch.__version__}")
    print(f"{'op':<28} {'max abs err':>12} {'rel err':>10} {'ours us':>10} {'torch us':>10}")
    worst = 0.0
    for op, ours, ref in cases(k, device, dtype):
        got, want = ours(), ref()
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        err = max((g.double() - w_.double()).abs().max().item() for g, w_ in zip(got, want))
        rel = max(((g.double() - w_.double()).norm() / w_.double().norm()).item()
                  for g, w_ in zip(got, want))
        worst = max(worst, rel)
        print(f"{op:<28} {err:>12.3e} {rel:>10.2e} {timeit(ours, device):>10.1f} "
              f"{timeit(ref, device):>10.1f}")
    ok = worst < 1e-2
    print("all ops match PyTorch" if ok else f"MISMATCH: worst relative error {worst:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
