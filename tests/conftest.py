"""Shared test fixtures: load the kernel the way users do, on every backend this machine has.

The kernel is loaded with `kernels.get_kernel(<repo-id>, version=1)`, redirected to this
checkout's `build/` by `LOCAL_KERNELS` (set here unless the caller set it). Build first:
`python tools/build.py` (and `--backends cuda,cpu` on a GPU machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
with open(ROOT / "build.toml", "rb") as _f:
    REPO_ID = tomllib.load(_f)["general"]["hub"]["repo-id"]
os.environ.setdefault("LOCAL_KERNELS", f"{REPO_ID}={ROOT}")

HAS_CUDA = torch.cuda.is_available()
BACKENDS = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")),
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]

_kernels: dict[str, object] = {}


def restore_transformers_kernel_funcs() -> None:
    """transformers' kernel functions (`apply_rotary_pos_emb` of LLaMA and Qwen3) are one
    module each for the whole process, and kernelize sets their `forward` on the instance:
    drop it, so that later models run transformers' own formula again."""
    from transformers.models.llama import modeling_llama
    from transformers.models.qwen3 import modeling_qwen3

    for fn in (modeling_llama.apply_rotary_pos_emb, modeling_qwen3.apply_rotary_pos_emb):
        fn.__dict__.pop("forward", None)


def load_kernel(backend: str):
    """The kernel module for `backend`, loaded through get_kernel + LOCAL_KERNELS."""
    if backend not in _kernels:
        from kernels import get_kernel

        # On a CUDA torch the default variant is the CUDA one; the CPU variant is asked for.
        kw = {"backend": "cpu"} if backend == "cpu" and torch.version.cuda else {}
        _kernels[backend] = get_kernel(REPO_ID, version=1, **kw)
    return _kernels[backend]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def kernel(backend):
    return load_kernel(backend)


@pytest.fixture
def device(backend) -> torch.device:
    return torch.device(backend)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ---- tolerances ------------------------------------------------------------------------------
# Element-wise |out - ref| <= atol + rtol * |ref| against a float64 reference. A 16-bit output
# carries up to half an ulp of rounding (2^-11 relative for fp16, 2^-8 for bf16); a second
# rounding where the target model rounds twice (LlamaRMSNorm) adds another. rtol allows two
# ulps, about twice the error of PyTorch's own 16-bit computation; atol covers values near 0.
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float16: dict(atol=1e-3, rtol=2 * 2.0**-10),
    torch.bfloat16: dict(atol=1e-2, rtol=2 * 2.0**-7),
}


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype | None = None, *,
                 scale: float = 1.0) -> None:
    """Compare `out` with a float64 (or fp32) reference, using the tolerance of `dtype`
    (default: out's dtype), multiplied by `scale` for ops whose references round more than once
    (the reason is given at each call site)."""
    dtype = dtype or out.dtype
    assert out.shape == ref.shape, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    o, r = out.double().cpu(), ref.double().cpu()
    assert not torch.isnan(o).any(), "NaN in output (unwritten poisoned element?)"
    tol = TOL[dtype]
    torch.testing.assert_close(o, r, atol=tol["atol"] * scale, rtol=tol["rtol"] * scale)


def poisoned(shape, dtype, device, layout: str = "contiguous") -> torch.Tensor:
    """An output buffer full of NaN: an element the kernel does not write stays NaN; laid out
    as `make_input` lays out inputs."""
    if layout == "contiguous":
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return make_input(shape, dtype, device, layout).fill_(float("nan"))


def make_input(shape, dtype, device, layout: str = "contiguous") -> torch.Tensor:
    """Random input of `shape` laid out as asked: `contiguous`; `strided` (rows padded: every
    row starts after a gap); `misaligned` (a view starting one element in, so no row is
    16-byte aligned: forces the scalar path)."""
    *lead, D = shape
    if layout == "contiguous":
        return torch.randn(shape, dtype=dtype, device=device)
    if layout == "strided":
        base = torch.randn(*lead, D + 8, dtype=dtype, device=device)
        return base[..., :D]
    if layout == "misaligned":
        base = torch.randn(*lead, D + 1, dtype=dtype, device=device)
        return base[..., 1:]
    raise ValueError(layout)


LAYOUTS = ["contiguous", "strided", "misaligned"]


# The CPU kernels' LTX_CPU_SIMD settings: 0 (scalar loops), 1 (at most AVX2 + FMA + F16C), None
# (unset: the widest ISA the CPU has). The setting is read once per process.
CPU_SIMD_SETTINGS = ("0", "1", None)


def run_under_cpu_simd_settings(child: str, tmp_path: Path) -> dict:
    """Runs the Python source `child` once per LTX_CPU_SIMD setting, each in its own process
    (argv: the output path, REPO_ID), and returns {setting: torch.load(what it saved)}."""
    results = {}
    for setting in CPU_SIMD_SETTINGS:
        env = {k: v for k, v in os.environ.items() if k != "LTX_CPU_SIMD"}
        if setting is not None:
            env["LTX_CPU_SIMD"] = setting
        path = tmp_path / f"simd-{setting}.pt"
        p = subprocess.run([sys.executable, "-c", child, str(path), REPO_ID], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        results[setting] = torch.load(path)
    return results

