"""Activations: tanh GELU and SiLU (elementwise), GEGLU and SiLU-and-mul (gated, `[..., 2H]` ->
`[..., H]`); fp32 math, one rounding to the input dtype. `linear_gelu_tanh`: a projection and
its tanh GELU, the GELU in cuBLASLt's matmul epilogue on CUDA."""

from typing import Optional

import torch

from ._ops import add_op_namespace_prefix, ops


def _out_like(x: torch.Tensor, gated: bool) -> torch.Tensor:
    shape = x.shape
    if gated and x.dim() > 0:
        # An odd last dim is rejected by the op (naming `input`), after this allocation.
        shape = (*x.shape[:-1], x.shape[-1] // 2)
    return torch.empty(shape, dtype=x.dtype, device=x.device)


def gelu_tanh(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """tanh-approximate GELU, `F.gelu(x, approximate="tanh")`, elementwise.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; any leading dims, rows may be strided (the
            last dim must be contiguous).
        out: optional output `[..., D]`, x's dtype (rows may be strided; may be `x` itself).

    Returns:
        `out`, `[..., D]`.
    """
    if out is None:
        out = _out_like(x, gated=False)
    ops.gelu_tanh(out, x)
    return out


def linear_gelu_tanh(
    x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """`gelu_tanh(F.linear(x, weight, bias))`, with the GELU inside the matrix product where
    PyTorch has such an epilogue: on CUDA, with a bias, `torch._addmm_activation(use_gelu=True)`,
    which cuBLASLt runs as its GELU_BIAS epilogue (tanh GELU on the fp32 accumulator, one
    rounding to x's dtype; PyTorch falls back to the product then an in-place tanh GELU where
    cuBLASLt does not apply) and torch.compile keeps as one extern call. The activation's pass
    over the output (read and written once more) is gone. Elsewhere (the CPU, where
    `_addmm_activation` computes the erf GELU, or no bias) the product then `gelu_tanh`.

    Args:
        x: `[..., K]`, float32 / float16 / bfloat16.
        weight: `[N, K]`, x's dtype and device (an `nn.Linear`'s weight).
        bias: optional `[N]`, x's dtype.

    Returns:
        `[..., N]`, a new tensor.
    """
    if (x.is_cuda and bias is not None and x.dim() >= 2 and x.numel() > 0
            and x.shape[-1] == weight.shape[-1]
            and weight.dim() == 2 and bias.dim() == 1 and x.dtype == weight.dtype == bias.dtype):
        y = torch._addmm_activation(bias, x.reshape(-1, x.shape[-1]), weight.t(), use_gelu=True)
        return y.view(*x.shape[:-1], weight.shape[0])
    return gelu_tanh(torch.nn.functional.linear(x, weight, bias))


def silu(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """SiLU, `F.silu(x)` = `x * sigmoid(x)`, elementwise.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; rows may be strided.
        out: optional output `[..., D]`, x's dtype (may be `x` itself).

    Returns:
        `out`, `[..., D]`.
    """
    if out is None:
        out = _out_like(x, gated=False)
    ops.silu(out, x)
    return out


def geglu(
    x: torch.Tensor, approximate: str = "tanh", *, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """GEGLU in diffusers' order: `x[..., :H] * gelu(x[..., H:], approximate)`.

    Args:
        x: `[..., 2H]` (value half, then gate half), float32 / float16 / bfloat16; rows may be
            strided. H may be odd.
        approximate: `"tanh"` (tanh GELU) or `"none"` (erf GELU, diffusers' `GEGLU`), as in
            `F.gelu`. The erf GELU is computed as `x Phi(x)` without the cancellation of
            `F.gelu`'s `1 + erf` for negative x: within ~7.4 fp32 ulps of the exact value for
            x > -13, where `F.gelu` is up to thousands of ulps off below x = -1.2 and 0 below -5.5.
        out: optional output `[..., H]`, x's dtype.

    Returns:
        `out`, `[..., H]`.
    """
    if out is None:
        out = _out_like(x, gated=True)
    ops.geglu(out, x, approximate)
    return out


def silu_and_mul(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """SwiGLU in vLLM's order: `silu(x[..., :H]) * x[..., H:]` (LLaMA-family MLPs, with the
    gate and up projections fused as `[gate | up]`).

    Args:
        x: `[..., 2H]`, float32 / float16 / bfloat16; rows may be strided. H may be odd.
        out: optional output `[..., H]`, x's dtype.

    Returns:
        `out`, `[..., H]`.
    """
    if out is None:
        out = _out_like(x, gated=True)
    ops.silu_and_mul(out, x)
    return out


def silu_mul(
    gate: torch.Tensor, up: torch.Tensor, *, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """SwiGLU of a gated MLP whose two projections are separate tensors (transformers' LLaMA,
    Mistral, Qwen MLPs: `act_fn(gate_proj(x)) * up_proj(x)`): `silu(gate) * up` in one pass,
    fp32 math rounded once; `silu_and_mul`'s formula without concatenating the two.

    Args:
        gate: `[..., H]`, float32 / float16 / bfloat16; rows may be strided (the last dim
            contiguous).
        up: gate's shape and dtype, rows at their own strides.
        out: optional output, gate's shape and dtype.

    Returns:
        `out`.
    """
    if out is None:
        out = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device)
    ops.silu_mul(out, gate, up)
    return out


@torch.library.register_fake(add_op_namespace_prefix("gelu_tanh"))
def _gelu_tanh_fake(out, x) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("silu"))
def _silu_fake(out, x) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("geglu"))
def _geglu_fake(out, x, approximate) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("silu_and_mul"))
def _silu_and_mul_fake(out, x) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("silu_mul"))
def _silu_mul_fake(out, gate, up) -> None:
    return None
