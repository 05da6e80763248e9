"""`kernels benchmark .` workloads for gelu_tanh (LTX-Video FF), geglu (tanh; erf: diffusers'
default, Stable Diffusion's FF), silu_and_mul and silu_mul (LLaMA-8B MLP). Inputs are scaled by
0.25 so that outputs stay below about 2, where one bf16 rounding stays under the runner's atol
of 1e-2 (see workloads.py)."""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import DTYPES, Workload, benchmark_class, randn  # noqa: E402


def halves(x):
    return x.chunk(2, dim=-1)


WORKLOADS = []
for dt in DTYPES:
    WORKLOADS += [
        Workload(f"gelu_tanh_2x2688x8192_{dt}",
                 lambda dev, d=dt: {"x": randn((2, 2688, 8192), DTYPES[d], dev, 0.25)},
                 lambda k, i: k.gelu_tanh(i["x"]),
                 lambda i: F.gelu(i["x"].float(), approximate="tanh").to(i["x"].dtype)),
        Workload(f"geglu_2x4096x16384_{dt}",
                 lambda dev, d=dt: {"x": randn((2, 4096, 16384), DTYPES[d], dev, 0.25)},
                 lambda k, i: k.geglu(i["x"], "tanh"),
                 lambda i: (halves(i["x"].float())[0] * F.gelu(halves(i["x"].float())[1],
                            approximate="tanh")).to(i["x"].dtype)),
        Workload(f"geglu_erf_2x4096x10240_{dt}",
                 lambda dev, d=dt: {"x": randn((2, 4096, 10240), DTYPES[d], dev, 0.25)},
                 lambda k, i: k.geglu(i["x"], "none"),
                 lambda i: (halves(i["x"].float())[0] * F.gelu(halves(i["x"].float())[1])
                            ).to(i["x"].dtype)),
        Workload(f"silu_and_mul_4096x28672_{dt}",
                 lambda dev, d=dt: {"x": randn((4096, 28672), DTYPES[d], dev, 0.25)},
                 lambda k, i: k.silu_and_mul(i["x"]),
                 lambda i: (F.silu(halves(i["x"].float())[0]) * halves(i["x"].float())[1]
                            ).to(i["x"].dtype)),
        Workload(f"silu_mul_4096x14336_{dt}",
                 lambda dev, d=dt: {"g": randn((4096, 14336), DTYPES[d], dev, 0.25),
                                    "u": randn((4096, 14336), DTYPES[d], dev, 0.25)},
                 lambda k, i: k.silu_mul(i["g"], i["u"]),
                 lambda i: (F.silu(i["g"].float()) * i["u"].float()).to(i["g"].dtype)),
    ]

ActivationBenchmark = benchmark_class("ActivationBenchmark", WORKLOADS)
