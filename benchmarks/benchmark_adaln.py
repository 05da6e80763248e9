"""`kernels benchmark .` workloads for adaln, gated_residual_adaln and gated_residual at
LTX-Video shapes (per-sample scale/shift/gate [B,1,D] and per-token [B,S,D])."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import DTYPES, Workload, benchmark_class, randn  # noqa: E402

SHAPES = [(2, 2688, 2048), (2, 6144, 2048), (2, 2688, 4096)]


def rms(x):
    h = x.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


def inputs(dev, shape, dt, per_token):
    B, S, D = shape
    m = (B, S, D) if per_token else (B, 1, D)
    dtype = DTYPES[dt]
    return {"x": randn(shape, dtype, dev), "y": randn(shape, dtype, dev),
            "gate": randn(m, dtype, dev, 0.1), "scale": randn(m, dtype, dev, 0.1) - 0.7,
            "shift": randn(m, dtype, dev, 0.1)}  # 1 + scale around 0.3: |out| around 1


def adaln_ref(i):
    return (rms(i["x"]) * (1 + i["scale"].float()) + i["shift"].float()).to(i["x"].dtype)


def residual_ref(i):
    # x + y * gate in fp32, rounded once to x's dtype (the op's rounding)
    return (i["x"].float() + i["y"].float() * i["gate"].float()).to(i["x"].dtype)


def gated_ref(i):
    x = residual_ref(i)  # then the norm of the rounded sum
    return (rms(x) * (1 + i["scale"].float()) + i["shift"].float()).to(x.dtype)


WORKLOADS = []
for shape in SHAPES:
    for dt in DTYPES:
        for per_token in (False, True):
            tag = f"{'x'.join(map(str, shape))}_{dt}_{'token' if per_token else 'sample'}"
            make = (lambda dev, s=shape, d=dt, p=per_token: inputs(dev, s, d, p))
            WORKLOADS.append(Workload(
                f"adaln_{tag}", make,
                lambda k, i: k.adaln(i["x"], i["scale"], i["shift"], norm="rms", eps=1e-6),
                adaln_ref))
            WORKLOADS.append(Workload(
                f"gated_residual_adaln_{tag}", make,
                lambda k, i: k.gated_residual_adaln(i["x"], i["y"], i["gate"], i["scale"],
                                                    i["shift"], norm="rms", eps=1e-6)[1],
                gated_ref))
            WORKLOADS.append(Workload(
                f"gated_residual_{tag}", make,
                lambda k, i: k.gated_residual(i["x"], i["y"], i["gate"]), residual_ref))

AdaLNBenchmark = benchmark_class("AdaLNBenchmark", WORKLOADS)
