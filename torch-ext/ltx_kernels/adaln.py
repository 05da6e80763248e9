"""AdaLN: `norm(x) * (1 + scale) + shift`, and the gated residual step fused with it or alone,
as diffusion transformers (DiT, LTX-Video, FLUX, SD3) compute them; fp32 math, one pass."""

from typing import Optional, Tuple

import torch

from ._ops import add_op_namespace_prefix, ops


def adaln(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    *,
    norm: str = "rms",
    weight: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Adaptive norm: `(norm(x) [* weight] [+ bias]) * (1 + scale) + shift` over the last dim.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; any leading dims, rows may be strided
            (the last dim must be contiguous).
        scale, shift: broadcast against x as in torch (never materialized): `[D]`, per sample
            `[B, 1, D]`, per token `[B, S, D]` for x `[B, S, D]`, ...; the last dim must be
            contiguous. x's dtype or float32, both the same.
        norm: `"rms"` (`x * rsqrt(mean(x^2) + eps)`) or `"layer"` (`(x - mean) *
            rsqrt(var + eps)`, biased variance, computed in two passes over the row).
        weight, bias: optional `[D]` affine of the norm, applied before the modulation; x's
            dtype or float32, both the same. A bias is allowed with either norm (diffusers'
            `RMSNorm(bias=True)` adds one after its weight).
        eps: added to the variance; must be >= 0.
        out: optional output, x's shape and dtype (rows may be strided).

    Returns:
        `out`, `[..., D]`, x's dtype, rounded once from fp32.
    """
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    ops.adaln(out, x, scale, shift, weight, bias, norm, float(eps))
    return out


def gated_residual_adaln(
    x: torch.Tensor,
    y: torch.Tensor,
    gate: Optional[torch.Tensor],
    scale: torch.Tensor,
    shift: torch.Tensor,
    *,
    norm: str = "rms",
    weight: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
    residual_out: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The residual step of a DiT / LTX-Video block fused with the next norm:
    `x_new = x + y * gate` and `h = adaln(x_new, scale, shift, ...)`, in one pass.

    x_new is rounded to x's dtype and h is computed from the rounded x_new, as the unfused
    `x = x + y * gate; h = norm(x) * (1 + scale) + shift` does in the model's dtype.

    Args:
        x: the residual stream `[..., D]`, float32 / float16 / bfloat16 (rows may be strided).
        y: the branch output (attention, feed-forward), x's shape and dtype.
        gate: optional; broadcasts like scale, with scale's dtype. None: `x_new = x + y`.
        scale, shift, norm, weight, bias, eps: as in `adaln`.
        out: optional output for h, x's shape and dtype.
        residual_out: optional output for x_new, x's shape and dtype, not sharing memory with
            `out`.

    Returns:
        `(x_new, h)`.
    """
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if residual_out is None:
        residual_out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    ops.gated_residual_adaln(
        out, residual_out, x, y, gate, scale, shift, weight, bias, norm, float(eps)
    )
    return residual_out, out


def gated_residual(
    x: torch.Tensor,
    y: torch.Tensor,
    gate: torch.Tensor,
    *,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """The gated residual step of a DiT / LTX-Video block where no norm follows it:
    `x + y * gate`, in one pass.

    fp32 math (the product, then the sum), rounded once to x's dtype: bit for bit
    `gated_residual_adaln`'s `x_new` for the same inputs.

    Args:
        x: the residual stream `[..., D]`, float32 / float16 / bfloat16 (rows may be strided).
        y: the branch output (attention, feed-forward), x's shape and dtype.
        gate: broadcasts like adaln's scale (`[D]`, per sample `[B, 1, D]`, per token
            `[B, S, D]`, never materialized); x's dtype or float32.
        out: optional output, x's shape and dtype (rows may be strided); may be `x` itself
            (in place), must not share memory with y or gate otherwise.

    Returns:
        `out`, `[..., D]`, x's dtype.
    """
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    ops.gated_residual(out, x, y, gate)
    return out


@torch.library.register_fake(add_op_namespace_prefix("adaln"))
def _adaln_fake(out, x, scale, shift, weight, bias, norm, eps) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("gated_residual_adaln"))
def _gated_residual_adaln_fake(
    out, residual_out, x, y, gate, scale, shift, weight, bias, norm, eps
) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("gated_residual"))
def _gated_residual_fake(out, x, y, gate) -> None:
    return None
