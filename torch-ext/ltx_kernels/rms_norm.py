"""RMSNorm: `x * rsqrt(mean(x^2, -1) + eps) [* weight]`, fp32 math, fused in one pass."""

from typing import Optional

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
