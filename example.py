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


def cases(k, device, dtype):
    """(name, ours, PyTorch's) for every op, on LTX-Video / LLaMA-sized inputs."""
    B, S, D = (2, 2688, 2048) if device.type == "cuda" else (1, 256, 2048)
    x = torch.randn(B, S, D, device=device, dtype=dtype)
    w = (1 + 0.1 * torch.randn(D, device=device)).to(dtype)
    yield ("rms_norm", lambda: k.rms_norm(x, w, 1e-6, round_before_weight=True),
           lambda: llama_rms_norm(x, w, 1e-6))
    yield ("rms_norm (no weight)", lambda: k.rms_norm(x, None, 1e-6),
           lambda: F.rms_norm(x.float(), (D,), eps=1e-6).to(dtype))


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
