"""RMSNorm layers for transformers (`LlamaRMSNorm` and its copies) and diffusers (`RMSNorm`)."""

import torch
from torch import nn

from ..rms_norm import rms_norm


class RMSNorm(nn.Module):
    """transformers' `LlamaRMSNorm` (Mistral, Qwen2/3, ... use copies of it): normalizes in
    fp32, casts to the input dtype, then multiplies by `weight`; the result has the promoted
    dtype of weight and input. Reads `weight` and `variance_epsilon`."""

    weight: torch.Tensor
    variance_epsilon: float

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        w = self.weight
        out_dtype = torch.promote_types(w.dtype, hidden_states.dtype)
        if w.dtype != hidden_states.dtype and w.dtype != torch.float32:
            # A mix of two 16-bit dtypes: no kernel for it; LlamaRMSNorm's own formula.
            h = hidden_states.to(torch.float32)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return w * h.to(hidden_states.dtype)
        out = torch.empty(hidden_states.shape, dtype=out_dtype, device=hidden_states.device)
        return rms_norm(hidden_states, w, self.variance_epsilon, out=out, round_before_weight=True)


class DiffusersRMSNorm(nn.Module):
    """diffusers' `RMSNorm`: `weight` may be None (LTX-Video's block norms); with a 16-bit
    weight the normalized value is cast to the weight's dtype before the product, with an fp32
    weight the fp32 product is returned; an optional `bias` is added. Reads `weight`, `eps`
    and `bias`."""

    weight: torch.Tensor
    eps: float

    can_torch_compile = True
    has_backward = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if w is None:
            return rms_norm(hidden_states, None, self.eps)
        if w.dtype == torch.float32:
            out = torch.empty(hidden_states.shape, dtype=torch.float32, device=hidden_states.device)
            y = rms_norm(hidden_states, w, self.eps, out=out)
        elif w.dtype == hidden_states.dtype:
            y = rms_norm(hidden_states, w, self.eps, round_before_weight=True)
        else:
            # Input and weight in two different 16-bit dtypes: diffusers' own formula.
            v = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
            y = (hidden_states * torch.rsqrt(v + self.eps)).to(w.dtype) * w
        bias = getattr(self, "bias", None)
        return y + bias if bias is not None else y
