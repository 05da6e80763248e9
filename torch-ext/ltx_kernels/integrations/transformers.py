"""transformers models where a hub-kernel mapping does not reach: Falcon's `nn.LayerNorm`s, and
the residual add between two decoder layers.

Decorated models (LLaMA, Mistral, Qwen, ...) need nothing here for their layers:
`kernels.kernelize` with a mapping to this package's `layers` (or `from_pretrained(...,
use_kernels=True, kernel_config=...)` on a GPU) replaces their forwards. Falcon builds plain
`torch.nn.LayerNorm` modules, which no mapping reaches, so they are patched per instance.
`fuse_decoder_residuals` fuses each residual add of LLaMA-style decoder layers with the RMSNorm
after it, also across layers, which no single layer's forward (or a per-layer torch.compile)
can do; `fuse_gated_mlp` runs their MLPs' `silu(gate) * up` in one pass (`silu_mul`) instead
of the SiLU layer and a multiply; `fuse_projections` makes their q / k / v projections one
matrix product, and gate / up another.
"""

import hashlib
import inspect
import re
import types
from typing import Optional, Tuple

import torch
from torch import nn

from ..activation import silu_and_mul, silu_mul
from ..adaln import adaln, gated_residual_adaln
from .diffusers import _instance_wrapped


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
# Where this package has kernels, and the dtypes they take; other tensors take the modules'
# own formulas.
_KERNEL_DEVICES = ("cpu", "cuda")
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _kernel_takes(*ts: torch.Tensor) -> bool:
    """Whether this package's kernels can stand in for a module's formula over `ts`: one dtype
    they take, one device where they run, unit stride in the last dim, no autograd needed."""
    t0 = ts[0]
    return (t0.dtype in _KERNEL_DTYPES and t0.device.type in _KERNEL_DEVICES
            and all(t.dtype == t0.dtype and t.device == t0.device and t.stride(-1) == 1
                    for t in ts)
            and not (torch.is_grad_enabled() and any(t.requires_grad for t in ts)))


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
    if not (w.dtype == x.dtype and x.shape == y.shape and _kernel_takes(x, y)):
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


def _nothing_patched(fn: str, what: str, refused: list) -> ValueError:
    """The error of a fuse_* helper that found nothing to patch: what it looked for, and each
    distinct reason it refused a candidate, in the order met."""
    reasons = "; ".join(dict.fromkeys(refused))
    return ValueError(f"{fn}: no {what} in this model" + (f" ({reasons})" if reasons else ""))


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
        raise _nothing_patched("fuse_decoder_residuals", "LLaMA-style decoder stack", refused)
    return patched


# ---- the gated MLP's SiLU and product ------------------------------------------------------------

# LlamaMLP.forward of transformers 5.22 (Mistral's, Qwen2's and Qwen3's are the same code):
# `down_proj(act_fn(gate_proj(x)) * up_proj(x))`.
_GATED_MLP_SHA1 = "6e149f775f69"


def _is_silu_gated_mlp(m: nn.Module) -> bool:
    """Whether `m` is such an MLP with a SiLU: the forward by its source hash (taken last, only
    for modules that have the projections)."""
    return (all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn"))
            and type(m.act_fn).__name__ in ("SiLUActivation", "SiLU")
            and _source_sha1(type(m).forward) == _GATED_MLP_SHA1)


def _fused_mlp_forward(self, x):
    """LlamaMLP.forward with `silu(gate) * up` in one `silu_mul` pass where the kernel gives
    the module's dtypes and autograd is not needed; else the module's own formula."""
    gate, up = self.gate_proj(x), self.up_proj(x)
    if gate.shape == up.shape and _kernel_takes(gate, up):
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
        if _patched_with(m, _fused_gate_up_forward):
            patched += 1  # fuse_projections' gate_up_proj: already one silu_and_mul pass
            continue
        if not _is_silu_gated_mlp(m):
            continue
        m.forward = types.MethodType(_fused_mlp_forward, m)
        patched += 1
    if not patched:
        raise ValueError("fuse_gated_mlp: no SiLU-gated LLaMA-style MLP in this model")
    return patched


# ---- one matrix product for q, k, v and one for gate, up ----------------------------------------

# The attention forwards `fuse_projections` re-implements (transformers 5.22), by source hash:
# how each passes the sliding window to the attention function (not at all, from the config,
# from the module) and whether q and k go through per-head norms before rope (Qwen3). The
# four are otherwise the same code; another forward is left alone.
_ATTN_FORWARDS = {
    "01a9c05ff606": (None, False),      # LlamaAttention
    "8d808ed9fea4": ("config", False),  # MistralAttention
    "fd1c4d8ff235": ("module", False),  # Qwen2Attention
    "f61455873d74": ("module", True),   # Qwen3Attention
}


def _fused_attn_forward(self, hidden_states, position_embeddings=None, attention_mask=None,
                        past_key_values=None, **kwargs):
    """The attention forwards of `_ATTN_FORWARDS` with q, k and v from one matrix product
    (`qkv_proj`), read as column slices of its output. rope and the attention function are
    the model module's own, looked up at each call (kernelize's rope layer included)."""
    g = type(self).forward.__globals__
    sliding, qk_norm = self._ltx_attn_variant
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.head_dim)
    q, k, v = self.qkv_proj(hidden_states).split(self._ltx_qkv_sizes, dim=-1)
    q, k = q.view(hidden_shape), k.view(hidden_shape)
    if qk_norm:
        q, k = self.q_norm(q), self.k_norm(k)
    query_states, key_states = q.transpose(1, 2), k.transpose(1, 2)
    value_states = v.view(hidden_shape).transpose(1, 2)
    cos, sin = position_embeddings
    query_states, key_states = g["apply_rotary_pos_emb"](query_states, key_states, cos, sin)
    if past_key_values is not None:
        key_states, value_states = past_key_values.update(key_states, value_states,
                                                          self.layer_idx)
    attention_interface = g["ALL_ATTENTION_FUNCTIONS"].get_interface(
        self.config._attn_implementation, g["eager_attention_forward"])
    if sliding == "config":
        kwargs["sliding_window"] = getattr(self.config, "sliding_window", None)
    elif sliding == "module":
        kwargs["sliding_window"] = self.sliding_window
    attn_output, attn_weights = attention_interface(
        self, query_states, key_states, value_states, attention_mask,
        dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling,
        **kwargs)
    attn_output = attn_output.reshape(*input_shape, -1).contiguous()
    return self.o_proj(attn_output), attn_weights


def _fused_gate_up_forward(self, x):
    """LlamaMLP.forward with gate and up from one matrix product (`gate_up_proj`, `[gate |
    up]`) and `silu_and_mul` over it where the kernel gives the module's dtypes and autograd
    is not needed; else the module's formula on the two halves."""
    gu = self.gate_up_proj(x)
    if _kernel_takes(gu):
        return self.down_proj(silu_and_mul(gu))
    gate, up = gu.chunk(2, dim=-1)
    return self.down_proj(self.act_fn(gate) * up)


def _patched_with(m: nn.Module, *fns) -> bool:
    return getattr(m.__dict__.get("forward"), "__func__", None) in fns


def _fusable_linears(owner: nn.Module, names) -> Optional[str]:
    """Why `owner`'s linears `names` cannot become one (None: they can): each a plain
    `nn.Linear` without hooks (a quantized or adapter layer, or an offloading hook, is
    refused), one input size, dtype and device, biases all or none."""
    mods = [getattr(owner, n, None) for n in names]
    if any(type(m) is not nn.Linear for m in mods):
        return f"{type(owner).__name__}: {'/'.join(names)} are not all plain nn.Linear"
    if any(_instance_wrapped(m) for m in mods):
        return (f"{type(owner).__name__}: a projection is wrapped (an offloading hook?); fuse "
                "before adding hooks")
    w0 = mods[0].weight
    if any(m.in_features != mods[0].in_features or m.weight.dtype != w0.dtype
           or m.weight.device != w0.device or (m.bias is None) != (mods[0].bias is None)
           for m in mods):
        return f"{type(owner).__name__}: {'/'.join(names)} differ in input, dtype, device or bias"
    return None


@torch.no_grad()
def _fuse_linears(owner: nn.Module, names, fused_name: str) -> list:
    """Replaces `owner`'s linears `names` by one `fused_name` whose weight (and bias) rows are
    theirs in that order; returns their output sizes. The parts are removed, so the weights
    are held once."""
    mods = [getattr(owner, n) for n in names]
    w = mods[0].weight
    fused = nn.Linear(mods[0].in_features, sum(m.out_features for m in mods),
                      bias=mods[0].bias is not None, device=w.device, dtype=w.dtype)
    fused.weight.copy_(torch.cat([m.weight for m in mods]))
    fused.weight.requires_grad_(w.requires_grad)
    if fused.bias is not None:
        fused.bias.copy_(torch.cat([m.bias for m in mods]))
        fused.bias.requires_grad_(mods[0].bias.requires_grad)
    sizes = [m.out_features for m in mods]
    for n in names:
        delattr(owner, n)
    setattr(owner, fused_name, fused)
    return sizes


def fuse_projections(model: nn.Module, *, attention: bool = True, mlp: bool = True) -> int:
    """Fuses the parallel projections of LLaMA-style models (LLaMA, Mistral, Qwen2, Qwen3 in
    transformers 5.22), in place: each attention's `q_proj`, `k_proj`, `v_proj` into one
    `qkv_proj` (one matrix product; q, k and v read as column slices of its output), each
    SiLU-gated MLP's `gate_proj`, `up_proj` into one `gate_up_proj` whose output
    `silu_and_mul` reads (`[gate | up]`, vLLM's layout). With GQA the k and v products alone
    are narrow (LLaMA-8B at 4096 tokens: 1024 columns each), and one product of the three
    fills the GPU better; one launch instead of three (two) either way. Measured on an H100
    (PERFORMANCE.md change 97): LLaMA-8B prefill of 4096 tokens showed no change above the
    forward's ±1% spread, with or without gate / up (`mlp=False`: q / k / v only); the same
    fusion through diffusers took 0.66 ms off an uncompiled LTX-Video 2B step of 41.2 ms.

    The parts are removed (the weights are held once), so the model's state dict then has
    `qkv_proj` / `gate_up_proj` keys: fuse after loading the weights, for inference or to
    train the fused weights. Plain `nn.Linear` projections only (quantized or adapter layers
    are left alone); fuse before offloading hooks and torch.compile. Returns the number of
    modules fused; raises ValueError if none could be (with the reasons)."""
    fused, refused = 0, []
    todo = []
    for m in model.modules():
        if _patched_with(m, _fused_attn_forward, _fused_gate_up_forward):
            fused += 1  # fused by an earlier call
            continue
        # the source hash (inspect.getsource) only for modules that hold projections
        if attention and hasattr(m, "q_proj"):
            variant = _ATTN_FORWARDS.get(_source_sha1(type(m).forward))
            if variant is not None:
                todo.append((m, ("q_proj", "k_proj", "v_proj"), "qkv_proj", variant))
        elif mlp and _is_silu_gated_mlp(m):
            todo.append((m, ("gate_proj", "up_proj"), "gate_up_proj", None))
    for m, names, fused_name, variant in todo:
        why = _fusable_linears(m, names)
        if why is not None:
            refused.append(why)
            continue
        sizes = _fuse_linears(m, names, fused_name)
        if fused_name == "qkv_proj":
            m._ltx_qkv_sizes = sizes
            m._ltx_attn_variant = variant
            m.forward = types.MethodType(_fused_attn_forward, m)
        else:
            m.forward = types.MethodType(_fused_gate_up_forward, m)
        fused += 1
    if not fused:
        raise _nothing_patched("fuse_projections", "LLaMA-style attention or SiLU-gated MLP",
                               refused)
    return fused
