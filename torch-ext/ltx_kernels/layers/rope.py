"""Rotary-embedding layer for transformers' `apply_rotary_pos_emb` (hub name "rotary_pos_emb").

transformers decorates `apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)` with
`use_kernel_forward_from_hub("rotary_pos_emb")`, which turns the function into an `nn.Module`
instance whose `forward` has the function's signature; attention classes attach it with
`use_kernelized_func`, so `kernels.kernelize` replaces that `forward` with the one below.
"""

import torch
from torch import nn

from ..rope import rope_qk


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class RotaryPosEmb(nn.Module):
    """transformers' `apply_rotary_pos_emb` (LLaMA and its copies: Mistral, Qwen2/3, ...):
    split-halves rotation of q and k (`[B, H, S, D]` with `unsqueeze_dim=1`, or `[B, S, H, D]`
    with `unsqueeze_dim=2`) by cos / sin `[B, S, D]`, in one launch, rounded once (the eager
    formula rounds each product and the sum). Returns `(q_embed, k_embed)`."""

    can_torch_compile = True
    has_backward = False

    def forward(self, q, k, cos, sin, unsqueeze_dim=1):
        cos = cos.unsqueeze(unsqueeze_dim)
        sin = sin.unsqueeze(unsqueeze_dim)
        if cos.dtype != q.dtype or sin.dtype != q.dtype or k.dtype != q.dtype:
            # Mixed dtypes: the eager result has the promoted dtype, which the kernel (x's dtype
            # out) does not produce; use the eager formula.
            return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        return rope_qk(q, k, cos, sin, interleaved=False)
