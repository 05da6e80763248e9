"""Activation layers for transformers (`GELUTanh`, `SiLUActivation`), vLLM-style `SiluAndMul`,
and diffusers' feed-forward projections (`GELU`, `GEGLU`; `GELU` also with the GELU in the
projection's matmul epilogue)."""

import torch
import torch.nn.functional as F
from torch import nn

from ..activation import geglu, gelu_tanh, linear_gelu_tanh, silu, silu_and_mul


class GeluTanh(nn.Module):
    """transformers' `GELUTanh` (hub name "GeluTanh"): `F.gelu(input, approximate="tanh")`.
    Reads nothing from the module."""

    can_torch_compile = True
    has_backward = False

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return gelu_tanh(input)


class SiLU(nn.Module):
    """transformers' `SiLUActivation` (hub name "SiLU"): `F.silu(input)`. Reads nothing."""

    can_torch_compile = True
    has_backward = False

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return silu(input)


class SiluAndMul(nn.Module):
    """`silu(x[..., :H]) * x[..., H:]` (vLLM / kernels-community `SiluAndMul`). Reads nothing."""

    can_torch_compile = True
    has_backward = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return silu_and_mul(x)


class DiffusersGELU(nn.Module):
    """diffusers' `GELU` (the feed-forward input of LTX-Video, FLUX, SD3 with
    "gelu-approximate"): `gelu(proj(x), approximate)`. Reads `proj` and `approximate`; the tanh
    GELU runs in the kernel, any other `approximate` in PyTorch."""

    proj: nn.Linear
    approximate: str

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states):
        hidden_states = self.proj(hidden_states)
        if self.approximate == "tanh":
            return gelu_tanh(hidden_states)
        return F.gelu(hidden_states, approximate=self.approximate)


class DiffusersGELUInMatmul(DiffusersGELU):
    """`DiffusersGELU` with the tanh GELU inside the projection's matrix product
    (`linear_gelu_tanh`: cuBLASLt's GELU epilogue on CUDA, so the activation's extra pass over
    the `[..., inner]` output is gone). A projection that is not a plain `nn.Linear` (a LoRA or
    quantized wrapper with its own forward) keeps its forward, then `gelu_tanh`."""

    def forward(self, hidden_states):
        if self.approximate != "tanh":
            return F.gelu(self.proj(hidden_states), approximate=self.approximate)
        if type(self.proj) is nn.Linear:
            return linear_gelu_tanh(hidden_states, self.proj.weight, self.proj.bias)
        return gelu_tanh(self.proj(hidden_states))


class DiffusersGEGLU(nn.Module):
    """diffusers' `GEGLU`: `h, gate = proj(x).chunk(2, -1); h * gelu(gate)` with the erf GELU,
    fused into one kernel after the projection. Reads `proj`; extra arguments (the deprecated
    `scale`) are ignored, as diffusers does."""

    proj: nn.Linear

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states, *args, **kwargs) -> torch.Tensor:
        return geglu(self.proj(hidden_states), approximate="none")
