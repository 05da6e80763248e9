"""AdaLN layers for diffusers: the adaptive norms of DiT / PixArt / FLUX / SD3 blocks and output
heads, `norm(x) * (1 + scale) + shift` in one pass (`adaln`).

Each class replaces the forward of the diffusers module of the same name and reads that
module's state: `silu`, `linear` (the projection of the conditioning embedding, left to torch),
`norm` (a LayerNorm or RMSNorm) and, for `AdaLayerNormZero`, `emb`. Where the kernel cannot
reproduce the module's result dtype (the projection in another dtype than x, an RMSNorm weight
in another dtype, a norm of another kind), the module's own formula runs instead.
"""

from typing import Optional, Tuple

import torch
from torch import nn

from ..adaln import adaln


def _norm_args(norm: nn.Module, x: torch.Tensor, mod: torch.Tensor):
    """`(kind, weight, bias, eps)` for `adaln` when `norm` over x's last dim, followed by the
    modulation with `mod`'s dtype, gives x's dtype and the kernel computes it; else None."""
    if mod.dtype != x.dtype or mod.device != x.device:
        return None  # the eager product would promote to mod's dtype
    weight = getattr(norm, "weight", None)
    bias = getattr(norm, "bias", None)
    if isinstance(norm, nn.LayerNorm) or type(norm).__name__ == "LayerNorm":
        # torch's (diffusers' own on old torch), and diffusers' FP32LayerNorm (a subclass),
        # which normalizes in fp32 and casts back, as the kernel does.
        kind, eps, affine_dtypes = "layer", norm.eps, (x.dtype, torch.float32)
    elif type(norm).__name__ == "RMSNorm":
        # diffusers' RMSNorm (eps, optional weight and bias) or torch.nn.RMSNorm (eps may be
        # None: the dtype's epsilon). A weight in another dtype changes the result's dtype.
        eps = norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps
        kind, affine_dtypes = "rms", (x.dtype,)
    else:
        return None
    D = x.shape[-1]
    for t in (weight, bias):
        if t is not None and (t.dtype not in affine_dtypes or tuple(t.shape) != (D,)):
            return None
    return kind, weight, bias, eps


def _norm_modulate(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor,
                   mod: torch.Tensor) -> torch.Tensor:
    """`norm(x) * (1 + scale) + shift` (scale/shift already broadcastable to x): one `adaln`
    pass where `_norm_args` allows it, else the module's own formula."""
    args = _norm_args(norm, x, mod)
    if args is None:
        return norm(x) * (1 + scale) + shift
    kind, w, b, eps = args
    return adaln(x, scale, shift, norm=kind, weight=w, bias=b, eps=eps)


class AdaLayerNormZero(nn.Module):
    """diffusers' `AdaLayerNormZero` (DiT, FLUX double-stream and SD3 joint blocks):
    `norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]` with the six modulation chunks of
    `linear(silu(emb))`; returns `(x, gate_msa, shift_mlp, scale_mlp, gate_mlp)`."""

    emb: Optional[nn.Module]
    silu: nn.Module
    linear: nn.Linear
    norm: nn.Module

    can_torch_compile = True
    has_backward = False

    def forward(
        self,
        x: torch.Tensor,
        timestep: Optional[torch.Tensor] = None,
        class_labels: Optional[torch.LongTensor] = None,
        hidden_dtype: Optional[torch.dtype] = None,
        emb: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.emb is not None:
            emb = self.emb(timestep, class_labels, hidden_dtype=hidden_dtype)
        emb = self.linear(self.silu(emb))
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6, dim=1)
        x = _norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None], emb)
        return x, gate_msa, shift_mlp, scale_mlp, gate_mlp


class AdaLayerNormZeroSingle(nn.Module):
    """diffusers' `AdaLayerNormZeroSingle` (FLUX single-stream blocks): three chunks, returns
    `(x, gate_msa)`."""

    silu: nn.Module
    linear: nn.Linear
    norm: nn.Module

    can_torch_compile = True
    has_backward = False

    def forward(
        self,
        x: torch.Tensor,
        emb: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        emb = self.linear(self.silu(emb))
        shift_msa, scale_msa, gate_msa = emb.chunk(3, dim=1)
        x = _norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None], emb)
        return x, gate_msa


class AdaLayerNormContinuous(nn.Module):
    """diffusers' `AdaLayerNormContinuous` (the output heads of FLUX, SD3 and others):
    `norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]`, norm a LayerNorm or RMSNorm with
    optional affine, `(scale, shift)` from `linear(silu(conditioning_embedding).to(x.dtype))`."""

    silu: nn.Module
    linear: nn.Linear
    norm: nn.Module

    can_torch_compile = True
    has_backward = False

    def forward(self, x: torch.Tensor, conditioning_embedding: torch.Tensor) -> torch.Tensor:
        emb = self.linear(self.silu(conditioning_embedding).to(x.dtype))
        scale, shift = torch.chunk(emb, 2, dim=1)
        return _norm_modulate(self.norm, x, scale[:, None, :], shift[:, None, :], emb)
