"""Rotary-embedding layer for transformers' `apply_rotary_pos_emb` (hub name "rotary_pos_emb").

transformers decorates `apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)` with
`use_kernel_forward_from_hub("rotary_pos_emb")`, which turns the function into an `nn.Module`
instance whose `forward` has the function's signature; attention classes attach it with
`use_kernelized_func`, so `kernels.kernelize` replaces that `forward` with the one below.

That module is one instance for the whole process, not one per model: kernelizing any model
replaces the forward for every model that calls `apply_rotary_pos_emb`, on every device, even
models that were never kernelized. So this forward can see tensors on a device this build has
no kernel for (a CPU build's layer called by a CUDA model, or the reverse); it then uses the
eager formula, with a warning, instead of failing.
"""

import warnings

import torch
from torch import nn

from .._ops import add_op_namespace_prefix
from ..rope import rope_qk

# Device types this build runs rope_qk on, found once at import (a constant under torch.compile).
_KERNEL_DEVICES = frozenset(
    device for device, key in (("cpu", "CPU"), ("cuda", "CUDA"))
    if torch._C._dispatch_has_kernel_for_dispatch_key(add_op_namespace_prefix("rope_qk"), key))
_warned = set()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def _eager(q, k, cos, sin):
    """transformers' formula (cos / sin already unsqueezed)."""
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


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
        if q.device.type not in _KERNEL_DEVICES:
            if q.device.type not in _warned:
                _warned.add(q.device.type)
                warnings.warn(
                    f"ltx_kernels RotaryPosEmb: this build has no {q.device.type} kernel (it runs "
                    f"on {sorted(_KERNEL_DEVICES)}); apply_rotary_pos_emb is one module for the "
                    f"whole process, kernelized for another device, so {q.device.type} tensors "
                    f"take the eager formula.", stacklevel=2)
            return _eager(q, k, cos, sin)
        if cos.dtype != q.dtype or sin.dtype != q.dtype or k.dtype != q.dtype:
            # Mixed dtypes: the eager result has the promoted dtype, which the kernel (x's dtype
            # out) does not produce; use the eager formula.
            return _eager(q, k, cos, sin)
        return rope_qk(q, k, cos, sin, interleaved=False)
