"""RMSNorm: `x * rsqrt(mean(x^2, -1) + eps) [* weight]`, fp32 math, fused in one pass."""

from typing import Optional, Tuple

import torch

from ._ops import add_op_namespace_prefix, ops


def rms_norm(
    x: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    *,
    out: Optional[torch.Tensor] = None,
    round_before_weight: bool = False,
) -> torch.Tensor:
    """RMSNorm over the last dim.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; any leading dims, rows may be strided
            (the last dim must be contiguous).
        weight: optional `[D]`, x's dtype or float32.
        eps: added to the mean square; must be >= 0.
        out: optional output `[..., D]` (rows may be strided). Its dtype is x's, or float32
            when `weight` is float32 (then the fp32 product is kept, as diffusers' RMSNorm does).
        round_before_weight: round the normalized value to x's dtype before multiplying by
            `weight`, as transformers' `LlamaRMSNorm` does (`weight * x_normed.to(dtype)`).
            By default the result is rounded once.

    Returns:
        `out`, `[..., D]`.
    """
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    ops.rms_norm(out, x, weight, float(eps), round_before_weight)
    return out


@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
def _rms_norm_fake(out, x, weight, eps, round_before_weight) -> None:
    return None


def fused_add_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: Optional[torch.Tensor],
    eps: float = 1e-6,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """In place, as vLLM's and FlashInfer's `fused_add_rms_norm`:
    `residual += x; x = rms_norm(residual) [* weight]`.

    The sum is rounded to residual's dtype and stored there, and the norm is computed from that
    rounded sum (what `residual = residual + x; x = norm(residual)` computes unfused); the
    output is rounded once, after the weight.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; overwritten with the normalized output.
            Rows may be strided (the last dim must be contiguous).
        residual: x's shape and dtype, not sharing memory with x; overwritten with x + residual.
        weight: optional `[D]`, x's dtype or float32.
        eps: added to the mean square; must be >= 0.

    Returns:
        `(x, residual)`, the same tensors, updated.
    """
    ops.fused_add_rms_norm(x, residual, weight, float(eps))
    return x, residual


@torch.library.register_fake(add_op_namespace_prefix("fused_add_rms_norm"))
def _fused_add_rms_norm_fake(x, residual, weight, eps) -> None:
    return None
