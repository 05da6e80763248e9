"""transformers models where a hub-kernel mapping does not reach: Falcon's `nn.LayerNorm`s, and
the residual add between two decoder layers.

Decorated models (LLaMA, Mistral, Qwen, ...) need nothing here for their layers:
`kernels.kernelize` with a mapping to this package's `layers` (or `from_pretrained(...,
use_kernels=True, kernel_config=...)` on a GPU) replaces their forwards. Falcon builds plain
`torch.nn.LayerNorm` modules, which no mapping reaches, so they are patched per instance.
`fuse_decoder_residuals` fuses each residual add of LLaMA-style decoder layers with the RMSNorm
after it, also across layers, which no single layer's forward (or a per-layer torch.compile)
can do; `fuse_gated_mlp` runs their MLPs' `silu(gate) * up` in one pass (`silu_mul`) instead
of the SiLU layer and a multiply.
"""

import hashlib
import inspect
import re
import types
from typing import Optional, Tuple

import torch
from torch import nn

from ..activation import silu_mul
from ..adaln import adaln, gated_residual_adaln


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


# ---- residual add + RMSNorm across decoder layers ----------------------------------------------

# The decoder-layer forward this fusion re-implements: LlamaDecoderLayer.forward of transformers
# 5.22 (Mistral's, Qwen2's and Qwen3's are the same code), compared without comments, blank
# lines and indentation. Another forward (another model, another transformers version) is
# refused instead of being replaced by code that may not compute what it does.
_PRE_NORM_LAYER_SHA1 = "26d4eec045e4"
# The RMSNorm forward the fused op replaces: LlamaRMSNorm's (and its copies'), fp32 norm times
# a weight.
_LLAMA_RMS_NORM_SHA1 = "757fcd8b3476"
# Where this package has kernels; tensors elsewhere take the modules' own formulas.
_KERNEL_DEVICES = ("cpu", "cuda")


def _source_sha1(fn) -> Optional[str]:
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    lines = (line.split("#")[0].strip() for line in src.splitlines())
    return hashlib.sha1("\n".join(x for x in lines if x).encode()).hexdigest()[:12]


def _loop_passes_layer_outputs(owner: nn.Module) -> bool:
    """Whether `owner.forward` hands each decoder layer's output to the next layer and the last
    one's to `self.norm`, and reads it nowhere else: what lets a layer return its output as a
    pending `(residual, branch)` pair (LlamaModel, MistralModel, Qwen2Model, Qwen3Model in
    transformers 5.22)."""
    try:
        src = inspect.getsource(type(owner).forward)
    except (OSError, TypeError):
        return False
    m = re.search(r"for [^\n]*decoder_layer in [^\n]*self\.layers[^\n]*:\n(.*?)"
                  r"\n(\s*)hidden_states = self\.norm\(hidden_states\)\n", src, re.S)
    if m is None:
        return False
    loop = m.group(1)
    return (loop.count("hidden_states = decoder_layer(") == 1
            and len(re.findall(r"\bhidden_states\b", loop)) == 2)


def _add_rms_norm(norm: nn.Module, x: torch.Tensor, y: torch.Tensor
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    """`(s, norm(s))` for `s = x + y` and a LlamaRMSNorm-style `norm`, in one
    `gated_residual_adaln` pass (no gate, zero modulation) where it gives the module's dtypes:
    s rounded to x's dtype as `x + y` is, the norm computed from the rounded s in fp32 and
    rounded once after the weight (LlamaRMSNorm rounds before the weight too: the two differ in
    the last bit at most). Else the two steps in torch."""
    w = norm.weight
    if not (x.dtype == y.dtype == w.dtype and x.shape == y.shape and x.device == y.device
            and x.device.type in _KERNEL_DEVICES and x.stride(-1) == 1 and y.stride(-1) == 1):
        s = x + y
        return s, norm(s)
    zero = norm._ltx_zero
    return gated_residual_adaln(x, y, None, zero, zero, norm="rms", weight=w,
                                eps=norm.variance_epsilon)


def _wants_unfused(layer: nn.Module, h: torch.Tensor) -> bool:
    """Hooks see each layer's real output (transformers' `output_hidden_states` capture), and
    autograd needs torch's ops (the kernels have no backward)."""
    return bool(layer._forward_hooks or layer._forward_pre_hooks) or (
        torch.is_grad_enabled() and (h.requires_grad or layer.input_layernorm.weight.requires_grad))


def _fused_decoder_forward(self, hidden_states, attention_mask=None, position_ids=None,
                           past_key_values=None, use_cache=False, position_embeddings=None,
                           **kwargs):
    """LlamaDecoderLayer.forward with each residual add fused with the RMSNorm that follows
    it. `hidden_states` is a tensor, or the previous layer's output still pending as
    `(residual, mlp_output)`, which this layer adds while it normalizes (input_layernorm). It
    returns such a pair too (`self._ltx_defer`), except as the last layer or where
    `_wants_unfused`: then the sum, as transformers' layer does."""
    if isinstance(hidden_states, tuple):
        residual, normed = _add_rms_norm(self.input_layernorm, *hidden_states)
    else:
        residual, normed = hidden_states, self.input_layernorm(hidden_states)
    unfused = _wants_unfused(self, residual)
    attn, _ = self.self_attn(hidden_states=normed, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=past_key_values,
                             use_cache=use_cache, position_embeddings=position_embeddings,
                             **kwargs)
    if unfused:
        residual = residual + attn
        normed = self.post_attention_layernorm(residual)
    else:
        residual, normed = _add_rms_norm(self.post_attention_layernorm, residual, attn)
    mlp = self.mlp(normed)
    if self._ltx_defer and not unfused:
        return residual, mlp
    return residual + mlp


def fuse_decoder_residuals(model: nn.Module) -> int:
    """Fuses the residual adds of LLaMA-style decoder layers (LLaMA, Mistral, Qwen2, Qwen3 in
    transformers 5.22) with the RMSNorm after each: `x + attn` with post_attention_layernorm,
    and `x + mlp` at a layer's end with the next layer's input_layernorm (a layer hands its
    output on as a pending `(residual, mlp_output)` pair; the last layer returns the sum), each
    one `gated_residual_adaln` pass instead of an add and a norm. Per layer that is one read
    and one write of the hidden state fewer, and across layers it is what a per-layer
    `torch.compile` cannot fuse (each layer is its own graph).

    Works with `kernels.kernelize` (before or after; layer 0's input_layernorm and the final
    norm keep whatever forward they have) and with `torch.compile` of the layers or the model.
    Inference only: where autograd or forward hooks need the layers' real outputs (transformers'
    `output_hidden_states` installs hooks on every layer), the layers run the adds unfused; a
    hook on one layer alone sees, as that layer's input, the pending pair its predecessor
    hands on. Patches in place;
    returns the number of decoder layers patched. Raises ValueError if the model has no
    decoder stack of this form.
    """
    patched = 0
    refused = []
    for owner in model.modules():
        layers = getattr(owner, "layers", None)
        if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
            continue
        kinds = {type(layer) for layer in layers}
        if len(kinds) != 1:
            continue
        layer_cls = kinds.pop()
        if not all(hasattr(layers[0], a) for a in ("input_layernorm", "post_attention_layernorm",
                                                 "self_attn", "mlp")):
            continue
        norms = [n for layer in layers for n in (layer.input_layernorm,
                                                 layer.post_attention_layernorm)]
        why = None
        if _source_sha1(layer_cls.forward) != _PRE_NORM_LAYER_SHA1:
            why = f"{layer_cls.__name__}.forward is not LLaMA's pre-norm layer"
        elif any(_source_sha1(type(n).forward) != _LLAMA_RMS_NORM_SHA1 for n in norms):
            why = f"{layer_cls.__name__}'s norms are not LlamaRMSNorm"
        elif not _loop_passes_layer_outputs(owner):
            why = f"{type(owner).__name__}.forward reads the layers' outputs beyond the next layer"
        if why is not None:
            refused.append(why)
            continue
        last = min(len(layers), getattr(getattr(owner, "config", None), "num_hidden_layers",
                                        len(layers))) - 1
        for i, layer in enumerate(layers):
            for n in (layer.input_layernorm, layer.post_attention_layernorm):
                if "_ltx_zero" not in n._buffers:
                    n.register_buffer("_ltx_zero", torch.zeros_like(n.weight), persistent=False)
            layer._ltx_defer = i != last
            layer.forward = types.MethodType(_fused_decoder_forward, layer)
            patched += 1
    if not patched:
        raise ValueError("fuse_decoder_residuals: no LLaMA-style decoder stack in this model"
                         + (f" ({'; '.join(refused)})" if refused else ""))
    return patched


# ---- the gated MLP's SiLU and product ------------------------------------------------------------

# LlamaMLP.forward of transformers 5.22 (Mistral's, Qwen2's and Qwen3's are the same code):
# `down_proj(act_fn(gate_proj(x)) * up_proj(x))`.
_GATED_MLP_SHA1 = "6e149f775f69"


def _fused_mlp_forward(self, x):
    """LlamaMLP.forward with `silu(gate) * up` in one `silu_mul` pass where the kernel gives
    the module's dtypes and autograd is not needed; else the module's own formula."""
    gate, up = self.gate_proj(x), self.up_proj(x)
    if (gate.dtype == up.dtype and gate.shape == up.shape and gate.device == up.device
            and gate.device.type in _KERNEL_DEVICES and gate.stride(-1) == 1
            and up.stride(-1) == 1
            and not (torch.is_grad_enabled() and (gate.requires_grad or up.requires_grad))):
        return self.down_proj(silu_mul(gate, up))
    return self.down_proj(self.act_fn(gate) * up)


def fuse_gated_mlp(model: nn.Module) -> int:
    """Runs the SiLU-gated MLPs of LLaMA-style models (LLaMA, Mistral, Qwen2, Qwen3 in
    transformers 5.22: `down_proj(silu(gate_proj(x)) * up_proj(x))`) with `silu_mul`: the SiLU
    and the product in one pass over the two projections (one read of each, one write),
    instead of the SiLU (a kernelized one included) and a separate multiply. Under
    torch.compile inductor fuses the two itself; the kernel then stands in for inductor's.
    Inference only (autograd runs the module's formula). Patches in place; returns the number
    of MLPs patched. Raises ValueError if there is none (MLPs with another activation or
    another forward are left alone)."""
    patched = 0
    for m in model.modules():
        if not all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn")):
            continue
        act = m.act_fn
        if (_source_sha1(type(m).forward) != _GATED_MLP_SHA1
                or type(act).__name__ not in ("SiLUActivation", "SiLU")):
            continue
        m.forward = types.MethodType(_fused_mlp_forward, m)
        patched += 1
    if not patched:
        raise ValueError("fuse_gated_mlp: no SiLU-gated LLaMA-style MLP in this model")
    return patched
