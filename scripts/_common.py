"""Shared by the scripts: load this checkout's kernel the way users load it from the Hub
(`kernels.get_kernel(<repo-id>, version=1)`), redirected to the local `build/` with
`LOCAL_KERNELS` unless the caller set it; pick device and dtype; time on the device."""

from __future__ import annotations

import os
import time
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
with open(ROOT / "build.toml", "rb") as _f:
    REPO_ID = tomllib.load(_f)["general"]["hub"]["repo-id"]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def load_kernel(device: str):
    """The kernel for `device`'s backend, from this checkout's build (LOCAL_KERNELS)."""
    os.environ.setdefault("LOCAL_KERNELS", f"{REPO_ID}={ROOT}")
    from kernels import get_kernel

    # On a CUDA torch the default variant is the CUDA one; the CPU variant is asked for.
    kw = {"backend": "cpu"} if torch.device(device).type == "cpu" and torch.version.cuda else {}
    try:
        return get_kernel(REPO_ID, version=1, **kw)
    except Exception as e:  # no build for this torch / backend
        raise SystemExit(f"cannot load {REPO_ID} from {ROOT}/build ({e}); "
                         f"build it first: python tools/build.py") from e


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def device_name(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    import platform

    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(torch.device(device))


class Timer:
    """Wall time of a block, synchronized with the device before and after."""

    def __init__(self, device: str):
        self.device = device
        self.seconds = 0.0

    def __enter__(self):
        sync(self.device)
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self._t


# transformers' hub layer names (as its decorators spell them) -> this package's layers
TRANSFORMERS_LAYERS = {
    "RMSNorm": "RMSNorm",
    "rotary_pos_emb": "RotaryPosEmb",
    "SiLU": "SiLU",
    "GeluTanh": "GeluTanh",
}


def transformers_kernel_mapping(kernel, device_type: str, mode=None):
    """A `kernels.use_kernel_mapping` mapping from transformers' layer names to this package's
    layers, in the exact build variant `kernel` was loaded from (LocalLayerRepository)."""
    from kernels import LocalLayerRepository, Mode

    variant = Path(kernel.__file__).parent
    mode = mode if mode is not None else Mode.INFERENCE
    return {
        hub_name: {device_type: {mode: LocalLayerRepository(repo_path=variant, layer_name=layer)}}
        for hub_name, layer in TRANSFORMERS_LAYERS.items()
    }
