"""Builds `kernels.benchmark.Benchmark` classes from one table of workloads, for the
`benchmarks/benchmark_<op>.py` scripts that `kernels benchmark .` runs.

Each workload is (name, make_inputs, run, reference): `make_inputs(device)` returns a dict of
tensors, `run(kernel, inputs)` calls this package's op and returns the output, `reference(inputs)`
computes it with PyTorch in fp32 and rounds to the output dtype. The runner compares
`self.out` with the reference with `torch.allclose(atol=1e-2)`, so workloads keep outputs
within about +-1, where one bf16 rounding (2^-8 relative) stays under that tolerance.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

import torch
from kernels.benchmark import Benchmark


@dataclass
class Workload:
    name: str
    make_inputs: Callable[[str], dict]
    run: Callable[[object, dict], torch.Tensor]
    reference: Callable[[dict], torch.Tensor]


def benchmark_class(class_name: str, workloads: list[Workload]) -> type:
    """A Benchmark subclass with setup_<name>, benchmark_<name> and verify_<name> for every
    workload, defined in the calling script's module (the runner only takes classes whose
    module is the script)."""
    attrs: dict = {"seed": 0, "__module__": inspect.stack()[1].frame.f_globals["__name__"]}
    for w in workloads:
        def setup(self, w=w):
            self.inputs = w.make_inputs(self.device)

        def bench(self, w=w):
            self.out = w.run(self.kernel, self.inputs)

        def verify(self, w=w):
            return w.reference(self.inputs)

        attrs[f"setup_{w.name}"] = setup
        attrs[f"benchmark_{w.name}"] = bench
        attrs[f"verify_{w.name}"] = verify
    return type(class_name, (Benchmark,), attrs)


def randn(shape, dtype, device, scale=1.0):
    return (scale * torch.randn(shape, device=device)).to(dtype)


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
