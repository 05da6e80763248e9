"""transformers models whose norms carry no hub-kernel decorator: Falcon's `nn.LayerNorm`s.

Decorated models (LLaMA, Mistral, Qwen, ...) need nothing here: `kernels.kernelize` with a
mapping to this package's `layers` (or `from_pretrained(..., use_kernels=True,
kernel_config=...)` on a GPU) replaces their forwards. Falcon builds plain `torch.nn.LayerNorm`
modules, which no mapping reaches, so they are patched per instance.
"""

import types

import torch
from torch import nn

from ..adaln import adaln


def _layer_norm_forward(self, input: torch.Tensor) -> torch.Tensor:
    """`nn.LayerNorm.forward` through `adaln(norm="layer")` with a zero modulation (there is no
    plain LayerNorm op; `(1 + 0)` and `+ 0` are exact in fp32, so this is the affine LayerNorm,
    computed in fp32 and rounded once, as torch's LayerNorm kernels do). Inputs the kernel
    does not take (an affine in a third dtype, a non-contiguous last dim) run torch's own."""
    w, b = self.weight, self.bias
    dtypes = (input.dtype, torch.float32)
    if ((w is not None and w.dtype not in dtypes) or (b is not None and b.dtype not in dtypes)
            or (w is not None and b is not None and w.dtype != b.dtype)
            or (input.size(-1) > 1 and input.stride(-1) != 1)):
        return nn.LayerNorm.forward(self, input)
    zero = torch.zeros(input.shape[-1], dtype=input.dtype, device=input.device)
    return adaln(input, zero, zero, norm="layer", weight=w, bias=b, eps=self.eps)


def patch_falcon_layernorm(model: nn.Module) -> int:
    """Route every `torch.nn.LayerNorm` over the last dim in `model` (Falcon's
    `input_layernorm`, `post_attention_layernorm`, `ln_attn`, `ln_mlp`, `ln_f`; any model's
    plain LayerNorms) through the kernels, in place. Call it before offloading hooks and
    `torch.compile`. Returns the number of modules patched (those already patched included).
    """
    n = 0
    for m in model.modules():
        if type(m) is not nn.LayerNorm or len(m.normalized_shape) != 1:
            continue
        current = m.__dict__.get("forward")
        if current is not None and getattr(current, "__func__", None) is not _layer_norm_forward:
            raise RuntimeError("LayerNorm: its forward is already wrapped (an offloading hook?); "
                               "patch before adding hooks")
        m.forward = types.MethodType(_layer_norm_forward, m)
        n += 1
    return n
