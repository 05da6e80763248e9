"""`kernels benchmark .` workloads for rms_norm (LLaMA's rounding) over the seed, LLM and
LTX-Video shapes; benchmarks/sweep.py compares the same op against its peers."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import DTYPES, Workload, benchmark_class, randn  # noqa: E402

SHAPES = [(1, 1024, 2048), (4, 1024, 2048), (4, 4096, 3072), (1, 4096, 4096), (2, 2688, 2048)]


def reference(i):
    x, w = i["x"], i["w"]
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * h.to(x.dtype)


WORKLOADS = [
    Workload(
        name=f"{'x'.join(map(str, shape))}_{dt}",
        make_inputs=lambda dev, shape=shape, dt=dt: {
            "x": randn(shape, DTYPES[dt], dev),
            "w": randn(shape[-1], DTYPES[dt], dev, 0.2),  # keeps |out| around 1 (see workloads.py)
        },
        run=lambda k, i: k.rms_norm(i["x"], i["w"], 1e-6, round_before_weight=True),
        reference=reference,
    )
    for shape in SHAPES
    for dt in DTYPES
]

RmsNormBenchmark = benchmark_class("RmsNormBenchmark", WORKLOADS)
