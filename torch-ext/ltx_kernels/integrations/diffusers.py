"""Kernel injection for diffusers transformers (LTX-Video; FLUX), by class name.

The package may not import diffusers, so modules are recognized by `type(m).__name__` and the
replaced forwards are written against the diffusers sources they replace (diffusers 0.42:
`models/transformers/transformer_ltx.py`, `transformer_flux.py`, `models/activations.py`).
Forwards are replaced per instance (`module.forward = MethodType(...)`, as `kernels.kernelize`
does) and attention goes through a processor object set with `attn.set_processor`, so nothing
outside the one model changes, `torch.compile(fullgraph=True)` traces straight through (the ops
are custom ops with fake impls), and no device is captured: the ops dispatch on the tensors'
device, so the model may be moved or offloaded afterwards. The LTX-Video transformer's forward
also fuses a step across blocks (each block's last residual with the next block's first norm):
it still calls every block as a module, passing keyword-only extras that only the injected
block forward takes, so blocks can be compiled one by one.

Every replaced step keeps the module's own formula as a fallback for what the kernels do not
compute in the module's dtype (a modulation in another dtype than the hidden states, a norm
weight in another dtype, ...), so an injected model computes what the original does, with
fewer roundings.
"""

import inspect
import sys
import types
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as _nn_module

from ..adaln import adaln, gated_residual, gated_residual_adaln
from ..layers.activation import DiffusersGELU, DiffusersGELUInMatmul, GeluTanh
from ..layers.adaln import (
    AdaLayerNormContinuous,
    AdaLayerNormZero,
    AdaLayerNormZeroSingle,
    _norm_args,
)
from ..rms_norm import rms_norm
from ..rope import rms_norm_rope, rms_norm_rope_qk, rope_pair_tables


@dataclass
class InjectionReport:
    """What an injection replaced: `replaced` maps a kind of replacement to its count; `notes`
    says what was left alone and why."""

    model: str
    replaced: Dict[str, int] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def add(self, kind: str, n: int = 1) -> None:
        self.replaced[kind] = self.replaced.get(kind, 0) + n

    @property
    def total(self) -> int:
        return sum(self.replaced.values())

    def __str__(self) -> str:
        lines = [f"ltx_kernels injection into {self.model}: {self.total} replacements"]
        lines += [f"  {n:4d} x {kind}" for kind, n in self.replaced.items()]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


# ---- shared helpers --------------------------------------------------------------------------

_HOOKED = (
    "{cls}: its forward is already wrapped (an offloading, caching or parallelism hook?); "
    "inject the kernels before enable_model_cpu_offload(), enable_group_offload(), caching "
    "or context parallelism"
)


def _unwrap(model):
    """A pipeline's transformer, or a compiled module's original."""
    if not isinstance(model, nn.Module) and isinstance(getattr(model, "transformer", None), nn.Module):
        model = model.transformer
    return getattr(model, "_orig_mod", model)


# Forwards an earlier injection may have bound that a later one may replace (another choice of
# the same module's kernels, e.g. `gelu_in_matmul`).
_INTERCHANGEABLE = ((DiffusersGELU.forward, DiffusersGELUInMatmul.forward),)


def _set_forward(module: nn.Module, fn: Callable, report: InjectionReport, kind: str) -> None:
    """Bind `fn` as `module`'s forward; a forward already bound by us is counted again (or
    replaced by its alternative, `_INTERCHANGEABLE`), one bound by someone else (a hook) is an
    error, since replacing it would drop the hook."""
    current = module.__dict__.get("forward")
    bound = getattr(current, "__func__", None)
    if current is not None and bound is not fn and not any(
            bound in group and fn in group for group in _INTERCHANGEABLE):
        raise RuntimeError(_HOOKED.format(cls=type(module).__name__))
    module.forward = types.MethodType(fn, module)
    report.add(kind)


def _rows_ok(*ts: torch.Tensor) -> bool:
    """The ops take rows with a stride but need the last dim contiguous. (A loop, not `all()`
    over a generator: ~8 calls a block, and the generator cost more than the checks.)"""
    for t in ts:
        if t.stride(-1) != 1 and t.size(-1) > 1:
            return False
    return True


def _adaln_args(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor):
    """`(kind, weight, bias, eps)` for `adaln` when `norm` normalizes x's last dim and the
    kernel gives the module's dtype (see `layers.adaln._norm_args`); else None."""
    shape = getattr(norm, "normalized_shape", None) or getattr(norm, "dim", None)
    if shape is not None and tuple(shape) != (x.shape[-1],):
        return None
    return _norm_args(norm, x, scale)


def _modulated_norm(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor,
                    shift: torch.Tensor) -> torch.Tensor:
    """`norm(x) * (1 + scale) + shift` through `adaln` where it gives the module's dtype."""
    args = _adaln_args(norm, x, scale)
    if args is None or shift.dtype != scale.dtype or not _rows_ok(x, scale, shift):
        return norm(x) * (1 + scale) + shift
    kind, weight, bias, eps = args
    return adaln(x, scale, shift, norm=kind, weight=weight, bias=bias, eps=eps)


def _residual_modulated_norm(norm: nn.Module, x: torch.Tensor, y: torch.Tensor,
                             scale: torch.Tensor, shift: torch.Tensor,
                             gate: Optional[torch.Tensor] = None
                             ) -> Tuple[torch.Tensor, torch.Tensor]:
    """`x = x + y [* gate]; h = norm(x) * (1 + scale) + shift`, both returned, in one pass
    (`gated_residual_adaln`) where the kernel gives the module's dtypes; else the residual
    step (`_gated_add` with a gate) then `_modulated_norm`, as the unfused steps compute it."""
    args = _adaln_args(norm, x, scale)
    gate_ok = gate is None or (gate.dtype == scale.dtype and gate.device == x.device
                               and _rows_ok(gate))
    if (args is None or not gate_ok or shift.dtype != scale.dtype or y.dtype != x.dtype
            or y.shape != x.shape or not _rows_ok(x, y, scale, shift)):
        x = x + y if gate is None else _gated_add(x, y, gate)
        return x, _modulated_norm(norm, x, scale, shift)
    kind, weight, bias, eps = args
    return gated_residual_adaln(x, y, gate, scale, shift, norm=kind, weight=weight, bias=bias,
                                eps=eps)


def _broadcasts_to(t: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether t broadcasts to x's shape (each of t's dims, aligned to the right, 1 or x's).
    Written out: `torch.broadcast_shapes` took ~14 us a call on the development CPU, as much as
    the rest of an eager `_gated_add`."""
    return t.dim() <= x.dim() and all(a == 1 or a == b
                                      for a, b in zip(reversed(t.shape), reversed(x.shape)))


def _gated_add(x: torch.Tensor, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """`x + y * gate` (LTX's gated residuals, gate `[B, 1, D]` or `[B, S, D]`): one
    `gated_residual` pass (fp32 math, rounded once) where it gives the formula's dtype and
    shape. Under torch.compile only for a gate shared by rows (per sample): inductor's own
    kernel for it computes the gate from the modulation table (`scale_shift_table + temb`) as
    it goes and took 22-23 us a call in LTX-Video 2B's compiled step (run X), where this op
    took 15.7 us in the same graph uncompiled; a per-token gate (`[B, S, D]`, as many rows as
    x) keeps the torch formula there (`addcmul` when the dtypes agree; not measured)."""
    same_dtype = x.dtype == y.dtype == gate.dtype
    if (same_dtype and (not torch.compiler.is_compiling() or gate.numel() < x.numel())
            and y.shape == x.shape
            and y.device == x.device and gate.device == x.device and _rows_ok(x, y, gate)
            and _broadcasts_to(gate, x)):
        return gated_residual(x, y, gate)
    if same_dtype:
        return torch.addcmul(x, y, gate)
    return x + y * gate


def _rms_eps(norm: nn.Module, x: torch.Tensor) -> float:
    # torch.nn.RMSNorm(eps=None) uses the dtype's machine epsilon.
    return norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps


def _rms_norm_weight(norm: nn.Module, x: torch.Tensor, dim: int):
    """`(True, weight)` when `norm` is an RMSNorm over the last `dim` elements (torch's or
    diffusers') that the kernels compute in x's dtype; `(False, None)` otherwise."""
    if type(norm).__name__ != "RMSNorm":
        return False, None
    shape = getattr(norm, "normalized_shape", None) or getattr(norm, "dim", None)
    if shape is None or tuple(shape) != (dim,) or getattr(norm, "bias", None) is not None:
        return False, None
    w = norm.weight
    if w is not None and (w.dtype != x.dtype or w.device != x.device):
        return False, None
    return True, w


def _qk_norm(norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """LTX's `norm_q` / `norm_k` (`torch.nn.RMSNorm` across heads) without rope: `rms_norm`."""
    ok, w = _rms_norm_weight(norm, x, x.shape[-1])
    if not ok or not _rows_ok(x):
        return norm(x)
    return rms_norm(x, w, _rms_eps(norm, x))


def _rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The eager interleaved rotation (pairs `(2i, 2i+1)`) in fp32, as diffusers computes it."""
    pairs = x.unflatten(-1, (-1, 2))
    rotated = torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


def _rope_operands_ok(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                      pairs: bool = False) -> bool:
    return (cos.dtype == sin.dtype and cos.dtype in (torch.float32, x.dtype)
            and cos.device == x.device and sin.device == x.device
            and cos.shape[-1] * (2 if pairs else 1) == x.shape[-1] and _rows_ok(x, cos, sin))


def _full_tables(cos: torch.Tensor, sin: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Interleaved pair tables `[..., D/2]` as the full tables `[..., D]` they stand for."""
    return cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)


def _qk_norm_rope(norm: nn.Module, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                  per_head: bool, pairs: bool = False) -> torch.Tensor:
    """`rope(norm(x))`, interleaved pairs, in one pass (`rms_norm_rope`): LTX (x `[B, S, H*D]`
    normalized across heads) or per head (FLUX: x `[B, S, H, D]`, cos / sin `[S, 1, D]`).
    `pairs`: cos / sin are pair tables (`[..., D/2]`)."""
    ok, w = _rms_norm_weight(norm, x, x.shape[-1])
    if not ok or not _rope_operands_ok(x, cos, sin, pairs):
        return _rope_interleaved(norm(x), *(_full_tables(cos, sin) if pairs else (cos, sin)))
    return rms_norm_rope(x, w, cos, sin, _rms_eps(norm, x), interleaved=True, per_head=per_head,
                         pair_tables=pairs)


def _qk_norm_rope_pair(norm_q: nn.Module, norm_k: nn.Module, q: torch.Tensor, k: torch.Tensor,
                       cos: torch.Tensor, sin: torch.Tensor, per_head: bool, pairs: bool = False
                       ) -> Tuple[torch.Tensor, torch.Tensor]:
    """`(rope(norm_q(q)), rope(norm_k(k)))` in one `rms_norm_rope_qk` (each cos / sin element
    read once for both when q and k have the same shape) where both norms and the operands
    allow it; else each through `_qk_norm_rope`."""
    ok_q, wq = _rms_norm_weight(norm_q, q, q.shape[-1])
    ok_k, wk = _rms_norm_weight(norm_k, k, k.shape[-1])
    if (not (ok_q and ok_k) or q.dtype != k.dtype or q.shape[-1] != k.shape[-1]
            or _rms_eps(norm_q, q) != _rms_eps(norm_k, k)
            or (wq is not None and wk is not None and wq.dtype != wk.dtype)
            or not (_rope_operands_ok(q, cos, sin, pairs)
                    and _rope_operands_ok(k, cos, sin, pairs))):
        return (_qk_norm_rope(norm_q, q, cos, sin, per_head, pairs),
                _qk_norm_rope(norm_k, k, cos, sin, per_head, pairs))
    return rms_norm_rope_qk(q, k, wq, wk, cos, sin, _rms_eps(norm_q, q), interleaved=True,
                            per_head=per_head, pair_tables=pairs)


def _attention_fn(processor) -> Optional[Callable]:
    """diffusers' `dispatch_attention_fn`, from the module that defines the model's processor
    (already imported by the model; looked up, not imported), so that attention backends set
    with `set_attention_backend` keep working. None: plain SDPA."""
    return getattr(sys.modules.get(type(processor).__module__), "dispatch_attention_fn", None)


class _KernelAttnProcessor:
    """Base of the processors below: keeps the processor it replaces (`original`) and the
    attention backend settings diffusers stores on processors."""

    _attention_backend = None
    _parallel_config = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # diffusers' attention modules call `inspect.signature(self.processor.__call__)` on every
        # forward to filter their kwargs: ~80 us of Python a call, 14% of the host time of an
        # injected LTX-Video forward. With the signature stored on the function, inspect returns
        # it at once.
        call = cls.__dict__.get("__call__")
        if call is not None:
            call.__signature__ = inspect.signature(call)

    def __init__(self, original, attention_fn: Optional[Callable]):
        self.original = original
        self.attention_fn = attention_fn
        for name in ("_attention_backend", "_parallel_config"):
            value = getattr(original, name, None)
            if value is not None:
                setattr(self, name, value)

    def _attention(self, query, key, value, attn_mask):
        """q, k, v `[B, S, H, D]` -> `[B, S, H, D]`."""
        if self.attention_fn is not None:
            return self.attention_fn(query, key, value, attn_mask=attn_mask, dropout_p=0.0,
                                     is_causal=False, backend=self._attention_backend,
                                     parallel_config=self._parallel_config)
        out = F.scaled_dot_product_attention(query.transpose(1, 2), key.transpose(1, 2),
                                             value.transpose(1, 2), attn_mask=attn_mask)
        return out.transpose(1, 2)


def _set_processor(attn: nn.Module, make: Callable, expected: str, report: InjectionReport,
                   kind: str) -> None:
    current = getattr(attn, "processor", None)
    if isinstance(current, _KernelAttnProcessor):
        report.add(kind)
        return
    if type(current).__name__ != expected:
        report.notes.append(f"{type(attn).__name__}: kept its processor "
                            f"{type(current).__name__} (not diffusers' {expected})")
        return
    attn.set_processor(make(current, _attention_fn(current)))
    report.add(kind)


def _is_tanh_gelu_proj(m: nn.Module) -> bool:
    """diffusers' `GELU(approximate="tanh")` (a projection then the activation), as in
    `FeedForward(activation_fn="gelu-approximate")`; torch's `nn.GELU` has no `proj`."""
    return (type(m).__name__ == "GELU" and isinstance(getattr(m, "proj", None), nn.Linear)
            and getattr(m, "approximate", None) == "tanh")


# ---- LTX-Video -------------------------------------------------------------------------------


def _per_head_mask(attn: nn.Module, mask: torch.Tensor, target_len: int,
                   batch: int) -> torch.Tensor:
    """diffusers' attention mask preparation for LTX's processor: `prepare_attention_mask`
    (padding to `target_len`, one copy per head), viewed as `[B, heads, 1 or S, L]`."""
    mask = attn.prepare_attention_mask(mask, target_len, batch)
    return mask.view(batch, attn.heads, -1, mask.shape[-1])


def _ltx_projections(attn, hidden_states, encoder_hidden_states):
    """q, k, v of an LTX attention: three matrix products, or, after diffusers'
    `fuse_qkv_projections()` (`attn.to_qkv`: the rows of to_q, to_k and to_v in one weight),
    one for self-attention (q, k and v column slices of its output: `rms_norm_rope_qk` and the
    attention read them in place) and one for cross-attention's k and v (to_qkv's k and v
    rows over the text tokens; q from to_q)."""
    fused = getattr(attn, "to_qkv", None) if getattr(attn, "fused_projections", False) else None
    if fused is None:
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        return attn.to_q(hidden_states), attn.to_k(context), attn.to_v(context)
    sizes = [attn.inner_dim, attn.inner_kv_dim, attn.inner_kv_dim]
    if encoder_hidden_states is None:
        return fused(hidden_states).split(sizes, dim=-1)
    q = attn.to_q(hidden_states)
    bias = None if fused.bias is None else fused.bias[sizes[0]:]
    k, v = F.linear(encoder_hidden_states, fused.weight[sizes[0]:], bias).split(sizes[1:], dim=-1)
    return q, k, v


class LTXVideoKernelAttnProcessor(_KernelAttnProcessor):
    """diffusers' `LTXVideoAttnProcessor` with `norm_q` / `norm_k` (`torch.nn.RMSNorm` across
    heads) + interleaved rope fused, q and k in one call (`rms_norm_rope_qk`), when rope is
    given (self-attention), and `rms_norm` otherwise (cross-attention); q, k and v from fused
    projections when the module has them (`_ltx_projections`). `image_rotary_emb` is
    the rope module's `(cos, sin)`, or `(cos, sin, True)` with pair tables (one value per
    rotation pair, `[..., D/2]`), which the injected transformer forward passes when every
    block's self-attention has this processor."""

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None,
                 image_rotary_emb=None):
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )
        if attention_mask is not None and attention_mask.dim() != 4:
            # a 4-D mask is already per head (`[B, heads, 1 or S, L]`): the injected
            # transformer forward prepares it once for every block (_ltx_heads_mask)
            attention_mask = _per_head_mask(attn, attention_mask, sequence_length, batch_size)
        query, key, value = _ltx_projections(attn, hidden_states, encoder_hidden_states)
        if image_rotary_emb is None:
            query = _qk_norm(attn.norm_q, query)
            key = _qk_norm(attn.norm_k, key)
        else:
            # (cos, sin): the module's tables; (cos, sin, True): pair tables, from the
            # injected transformer forward (_ltx_rope_tables)
            cos, sin, *pairs = image_rotary_emb
            query, key = _qk_norm_rope_pair(attn.norm_q, attn.norm_k, query, key, cos, sin,
                                            per_head=False, pairs=bool(pairs and pairs[0]))

        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))
        hidden_states = self._attention(query, key, value, attention_mask)
        hidden_states = hidden_states.flatten(2, 3).to(query.dtype)
        hidden_states = attn.to_out[0](hidden_states)
        return attn.to_out[1](hidden_states)


_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def _instance_wrapped(m: nn.Module) -> bool:
    """Whether `m` has a per-instance forward (a hook library's wrapper) or hooks of its own."""
    return "forward" in m.__dict__ or any(getattr(m, name, None) for name in _HOOKS)


def _unwrapped(m: nn.Module) -> bool:
    """Whether calling `m` runs its class's forward and nothing else: no per-instance forward
    (a hook library's wrapper) and no hooks of its own or global ones (torch's module-global
    hook dicts; a torch without them counts as hooked)."""
    if _instance_wrapped(m):
        return False
    for name in _HOOKS:
        hooks = getattr(_nn_module, "_global" + name, None)
        if hooks is None or hooks:
            return False
    return True


def _attn_call(attn: nn.Module, hidden_states, encoder_hidden_states, attention_mask,
               image_rotary_emb):
    """`attn(hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)` for
    diffusers' `LTXAttention`. Its forward calls `inspect.signature` on the processor at every
    call to filter extra keyword arguments (there are none here) and then the processor: when
    the processor is ours and nothing wraps the module (`_unwrapped`), the processor is called
    directly, which is what the forward does then without its ~30 us of host time a call (56
    calls an LTX-Video 2B step: tools/host_profile.py, PERFORMANCE.md run U). Under
    torch.compile the module is called (tracing pays that cost once)."""
    if (not torch.compiler.is_compiling() and type(attn).__name__ == "LTXAttention"
            and isinstance(attn.processor, LTXVideoKernelAttnProcessor) and _unwrapped(attn)):
        return attn.processor(attn, hidden_states, encoder_hidden_states, attention_mask,
                              image_rotary_emb)
    return attn(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                attention_mask=attention_mask, image_rotary_emb=image_rotary_emb)


def _ltx_heads_mask(model: nn.Module, mask: torch.Tensor, text_len: int) -> torch.Tensor:
    """The cross-attention mask bias `[B, 1, L]` per head, `[B, heads, 1, L]`, prepared once a
    forward as each block's processor would (`prepare_attention_mask`, then the view), when
    every block's cross-attention runs `LTXVideoKernelAttnProcessor` with the same heads (it
    takes a 4-D mask as is); else the mask unchanged, for each processor to prepare. One
    `repeat_interleave` a forward instead of one a block (28 at 2B, ~30 us of host time
    each)."""
    attns = [getattr(b, "attn2", None) for b in model.transformer_blocks]
    if not attns or not all(isinstance(getattr(a, "processor", None), LTXVideoKernelAttnProcessor)
                            and a.heads == attns[0].heads for a in attns):
        return mask
    return _per_head_mask(attns[0], mask, text_len, mask.size(0))


def _ltx_block_forward(self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None,
                       encoder_attention_mask=None, *, ltx_pending=None, ltx_defer=False):
    """`LTXVideoTransformerBlock.forward`: norm1 + modulation -> `adaln`; `x + attn1 * gate`
    and `x + ff * gate` -> `gated_residual` (`_gated_add`: under torch.compile the torch
    formula for per-token gates); `x + attn2` then norm2 + modulation -> `gated_residual_adaln`. The
    modulation (`scale_shift_table + temb`) is `[B, 1, D]` per sample or `[B, S, D]` per
    token, views into one `[B, T, 6, D]` tensor (the kernels read them by strides).

    Two keyword-only extras let the injected transformer forward fuse the feed-forward
    residual of one block with the norm that follows it (the next block's norm1, or the
    output head), still calling each block as a module (so `block.compile()` and diffusers'
    `compile_repeated_blocks` keep working):

    - `ltx_pending=(ff_output, gate)`: hidden_states still lacks the previous block's
      `+ ff_output * gate`; it is applied together with norm1 + modulation in one
      `gated_residual_adaln` (instead of `adaln`).
    - `ltx_defer=True`: return `(hidden_states, ff_output, gate_mlp)`, hidden_states without
      this block's feed-forward residual, for the caller to apply (fused).

    Without them the block returns diffusers' result, `hidden_states` with every residual.
    """
    batch_size = hidden_states.size(0)
    num_ada_params = self.scale_shift_table.shape[0]
    ada_values = self.scale_shift_table[None, None].to(temb.device) + temb.reshape(
        batch_size, temb.size(1), num_ada_params, -1
    )
    # As for the rope tables (`_realized`): under torch.compile inductor otherwise computes
    # `table + temb` again into its own buffer for each op that reads a slice of it (on its CPU
    # backend 4 more kernels for a 3-block model); the view makes it one buffer a block, which
    # the ops read by strides.
    ada_values = ada_values.as_strided(ada_values.shape, ada_values.stride())
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada_values.unbind(dim=2)

    if ltx_pending is None:
        norm_hidden_states = _modulated_norm(self.norm1, hidden_states, scale_msa, shift_msa)
    else:
        ff_output, gate = ltx_pending
        hidden_states, norm_hidden_states = _residual_modulated_norm(
            self.norm1, hidden_states, ff_output, scale_msa, shift_msa, gate)
    attn_hidden_states = _attn_call(self.attn1, norm_hidden_states, None, None, image_rotary_emb)
    hidden_states = _gated_add(hidden_states, attn_hidden_states, gate_msa)

    attn_hidden_states = _attn_call(self.attn2, hidden_states, encoder_hidden_states,
                                    encoder_attention_mask, None)
    hidden_states, norm_hidden_states = _residual_modulated_norm(
        self.norm2, hidden_states, attn_hidden_states, scale_mlp, shift_mlp)

    ff_output = self.ff(norm_hidden_states)
    if ltx_defer:
        return hidden_states, ff_output, gate_mlp
    return _gated_add(hidden_states, ff_output, gate_mlp)


def _realized(tables: tuple) -> tuple:
    """The rope tables (the tensors of `tables`; a pair-tables flag passes through) as views
    with explicit strides (free in eager). The tables are pointwise
    results of the rope module; under torch.compile inductor can materialize such a result
    again for every custom op that reads it (seen with torch 2.11 on the H200: a 24 us copy
    of the fp32 tables before each block's `rms_norm_rope_qk`), while an `as_strided` view
    makes it compute them into one buffer that every block reads. Done here, on the rope
    module's fresh tables, not in the rope ops' wrappers: there the tables may be views with a
    storage offset (FLUX's text / image rows), which torch 2.11's inductor lowers as offset 0
    without an explicit offset, and dynamo cannot trace `storage_offset()` to pass one."""
    return tuple(t.as_strided(t.shape, t.stride()) if isinstance(t, torch.Tensor) else t
                 for t in tables)


def _ltx_rope_tables(rope: nn.Module, hidden_states: torch.Tensor, num_frames, height, width,
                     rope_interpolation_scale, video_coords, pairs: bool = False) -> tuple:
    """LTX-Video's rope tables for the injected blocks: `(cos, sin)` fp32 `[B, S, D]`, or with
    `pairs` `(cos, sin, True)`, pair tables `[B or 1, S, D/2]` (one value per rotation pair,
    `rms_norm_rope_qk(pair_tables=True)`; the module repeats each value for both elements of
    a pair, checked at injection: `_ltx_rope_pairs_equal`).

    Without `video_coords` the rope module builds one coordinate grid and repeats it over the
    batch, scaled by scalars, so every sample's tables are the same: computed here for one
    sample, they take 1/B of the module's work and memory, and `rms_norm_rope_qk` reads each
    table row once for all samples (the rows that share it run side by side). Pair tables of
    one sample are passed as `[1, S, D/2]`, broadcast by the op itself; full tables are
    expanded over the batch (stride 0), eagerly only: torch 2.11's inductor on CUDA computed
    wrong values from expanded tables (run L: the compiled tiny LTX model 3.4e-2 off its eager
    self in fp32, 1.2e-7 with the module's own tables; the 2B model's bf16 prediction 1.28e-2
    off eager instead of 6.8e-3), so compiled models without pair tables read per-sample
    tables. With per-sample coordinates, or a scale that is not one number, the module runs
    on the whole batch."""
    batch = hidden_states.size(0)
    scalars = rope_interpolation_scale is None or all(
        not isinstance(v, torch.Tensor) or v.numel() == 1 for v in rope_interpolation_scale)
    shared = video_coords is None and scalars and batch > 1
    if pairs:
        cos, sin = rope(hidden_states[:1] if shared else hidden_states, num_frames, height,
                        width, rope_interpolation_scale, video_coords)
        return (*rope_pair_tables(cos, sin, interleaved=True), True)
    if not shared or torch.compiler.is_compiling():
        return rope(hidden_states, num_frames, height, width, rope_interpolation_scale,
                    video_coords)
    cos, sin = rope(hidden_states[:1], num_frames, height, width, rope_interpolation_scale, None)
    return cos.expand(batch, -1, -1), sin.expand(batch, -1, -1)


def _ltx_rope_pairs_equal(rope: nn.Module) -> bool:
    """Whether LTX-Video's rope module gives both elements of every rotation pair the same cos
    and sin (diffusers' `repeat_interleave(2)` and padding pairs of (1, 0) do): then its tables
    can be passed as pair tables. Checked once, on a small grid on the CPU (the module holds no
    weights); a module that fails to run there is not taken as pair-equal."""
    try:
        with torch.no_grad():
            cos, sin = rope(torch.zeros(1, 2 * 3 * 4, 1), 2, 3, 4, (0.32, 32.0, 32.0), None)
    except Exception:  # noqa: BLE001 - any failure: keep full tables
        return False
    return (cos.shape[-1] % 2 == 0
            and all(torch.equal(t[..., 0::2], t[..., 1::2]) for t in (cos, sin)))


def _ltx_pair_tables_ok(model: nn.Module) -> bool:
    """Pair tables for this forward: the module's tables are pair-equal (at injection) and
    every block's self-attention runs `LTXVideoKernelAttnProcessor`, the one reader that
    takes them (a processor set after the injection gets the module's own tables)."""
    return getattr(model, "_ltx_kernels_rope_pairs", False) and all(
        isinstance(getattr(getattr(b, "attn1", None), "processor", None),
                   LTXVideoKernelAttnProcessor) for b in model.transformer_blocks)


def _ltx_defers(block: nn.Module) -> bool:
    """Whether `block` runs `_ltx_block_forward` directly and so takes `ltx_pending` /
    `ltx_defer`. A forward wrapped after the injection (a caching hook such as diffusers'
    first-block cache, an offloading hook) may read the block's output as the hidden states,
    so such a block is called as diffusers calls it.

    Eagerly this is the bound forward itself. Under torch.compile `block.forward` can resolve
    to the class's function (torch 2.11 does), so there the mark `inject_ltx_video` leaves on
    the block is read instead, with the attributes diffusers' and accelerate's hooks set."""
    if torch.compiler.is_compiling():
        return (getattr(block, "_ltx_kernels_defers", False)
                and getattr(block, "_diffusers_hook", None) is None
                and getattr(block, "_hf_hook", None) is None)
    return getattr(block.forward, "__func__", None) is _ltx_block_forward


def _ltx_transformer_forward(self, hidden_states, encoder_hidden_states, timestep,
                             encoder_attention_mask, num_frames=None, height=None, width=None,
                             rope_interpolation_scale=None, video_coords=None,
                             attention_kwargs=None, return_dict=True):
    """`LTXVideoTransformer3DModel.forward` with each block's feed-forward residual
    (`x + ff * gate_mlp`) fused across blocks: with the next block's norm1 + modulation, and
    for the last block with the output head (LayerNorm without affine, then
    `* (1 + scale) + shift`), each one `gated_residual_adaln` (the blocks are still called as
    modules, with `ltx_pending` / `ltx_defer`, see `_ltx_block_forward`). A block whose forward
    was wrapped after the injection (a hook) gets the residual applied first and is called as
    diffusers calls it. A LoRA scale in `attention_kwargs` or gradient checkpointing in
    training run diffusers' own forward (with the injected blocks, unfused across them), which
    handles them."""
    lora_scale = attention_kwargs.get("scale", 1.0) if attention_kwargs else 1.0
    if lora_scale != 1.0 or (torch.is_grad_enabled() and self.gradient_checkpointing):
        return type(self).forward(self, hidden_states, encoder_hidden_states, timestep,
                                  encoder_attention_mask, num_frames, height, width,
                                  rope_interpolation_scale, video_coords,
                                  attention_kwargs=attention_kwargs, return_dict=return_dict)

    image_rotary_emb = _realized(_ltx_rope_tables(self.rope, hidden_states, num_frames, height,
                                                  width, rope_interpolation_scale, video_coords,
                                                  pairs=_ltx_pair_tables_ok(self)))
    if encoder_attention_mask is not None and encoder_attention_mask.ndim == 2:
        encoder_attention_mask = (1 - encoder_attention_mask.to(hidden_states.dtype)) * -10000.0
        encoder_attention_mask = encoder_attention_mask.unsqueeze(1)

    batch_size = hidden_states.size(0)
    hidden_states = self.proj_in(hidden_states)
    temb, embedded_timestep = self.time_embed(timestep.flatten(), batch_size=batch_size,
                                              hidden_dtype=hidden_states.dtype)
    temb = temb.view(batch_size, -1, temb.size(-1))
    embedded_timestep = embedded_timestep.view(batch_size, -1, embedded_timestep.size(-1))
    encoder_hidden_states = self.caption_projection(encoder_hidden_states)
    encoder_hidden_states = encoder_hidden_states.view(batch_size, -1, hidden_states.size(-1))
    if encoder_attention_mask is not None and encoder_attention_mask.dim() == 3:
        encoder_attention_mask = _ltx_heads_mask(self, encoder_attention_mask,
                                                 encoder_hidden_states.size(1))

    # Each block's feed-forward residual `+ ff_output * gate_mlp` is left pending and applied
    # by the next block fused with its norm1, or after the last block fused with the head.
    pending = None
    for block in self.transformer_blocks:
        if _ltx_defers(block):
            hidden_states, ff_output, gate_mlp = block(
                hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                temb=temb, image_rotary_emb=image_rotary_emb,
                encoder_attention_mask=encoder_attention_mask, ltx_pending=pending,
                ltx_defer=True)
            pending = (ff_output, gate_mlp)
            continue
        if pending is not None:
            hidden_states = _gated_add(hidden_states, *pending)
            pending = None
        hidden_states = block(hidden_states=hidden_states,
                              encoder_hidden_states=encoder_hidden_states, temb=temb,
                              image_rotary_emb=image_rotary_emb,
                              encoder_attention_mask=encoder_attention_mask)

    scale_shift_values = self.scale_shift_table[None, None] + embedded_timestep[:, :, None]
    shift, scale = scale_shift_values[:, :, 0], scale_shift_values[:, :, 1]
    if pending is None:
        hidden_states = _modulated_norm(self.norm_out, hidden_states, scale, shift)
    else:
        ff_output, gate_mlp = pending
        _, hidden_states = _residual_modulated_norm(self.norm_out, hidden_states, ff_output,
                                                    scale, shift, gate_mlp)
    output = self.proj_out(hidden_states)
    if not return_dict:
        return (output,)
    return self._ltx_kernels_output_cls(sample=output)


LTX_KINDS = {
    "block": ("LTXVideoTransformerBlock: norm1/norm2 + modulation -> adaln / "
              "gated_residual_adaln; gated residuals -> gated_residual"),
    "attn": "LTXAttention processor: norm_q/norm_k + rope -> rms_norm_rope_qk (rms_norm without "
            "rope)",
    "gelu": "GELU(tanh) feed-forward activation -> gelu_tanh",
    "gelu_in_matmul": ("GELU(tanh) feed-forward projection + activation -> linear_gelu_tanh "
                       "(the GELU in cuBLASLt's matmul epilogue on CUDA)"),
    "head": "output head: LayerNorm + modulation -> adaln / gated_residual_adaln(norm='layer')",
    "xblock": ("feed-forward residual + next norm1 / output head -> gated_residual_adaln "
               "(across blocks)"),
    "qkv": ("LTXAttention q/k/v projections -> one matrix product (diffusers' "
            "fuse_qkv_projections; cross-attention: k and v)"),
}


def _fuse_qkv_projections(model: nn.Module, report: InjectionReport) -> None:
    """diffusers' `fuse_qkv_projections()` on `model`, counted in the report (attention modules
    that hold a `to_qkv` after it); a model without the method gets a note."""
    fuse = getattr(model, "fuse_qkv_projections", None)
    if fuse is None:
        report.notes.append("projections kept separate: the model has no fuse_qkv_projections()")
        return
    fuse()
    n = sum(1 for m in model.modules()
            if getattr(m, "fused_projections", False) and hasattr(m, "to_qkv"))
    if n:
        report.add(LTX_KINDS["qkv"], n)


def inject_ltx_video(transformer, *, verbose: bool = False, gelu_in_matmul: bool = False,
                     fuse_projections: bool = False) -> InjectionReport:
    """Route a diffusers `LTXVideoTransformer3DModel` (or a pipeline holding one) through the
    kernels, in place:

    - each `LTXVideoTransformerBlock`: norm1 + modulation -> `adaln`; the attn2 residual and
      norm2 + modulation -> `gated_residual_adaln`; the gated residuals -> `gated_residual`
      (the feed-forward one only where it is not fused across blocks, below; under
      torch.compile the torch formula where the gate is per token, which inductor computes
      with the modulation table's add in its kernel);
    - each `LTXAttention` (default processor only): `norm_q` / `norm_k` + rope ->
      `rms_norm_rope_qk` (across heads, interleaved, q and k in one call) with rope, `rms_norm`
      without (attn2); the rope tables computed for one sample and passed as pair tables
      (`[1, S, D/2]`, one value per rotation pair, broadcast over the batch by the op;
      `_ltx_rope_tables`) when the rope module repeats its values per pair (checked here) and
      every block's self-attention has this processor;
    - each feed-forward `GELU(approximate="tanh")` -> `gelu_tanh`; with `gelu_in_matmul`, its
      projection and GELU -> `linear_gelu_tanh` instead (on CUDA the GELU runs in cuBLASLt's
      epilogue of the projection, so the `[B, S, 4 * dim]` activation is written once and not
      read back; opt-in because it moves the activation out of this package's kernels into
      cuBLASLt's, whose epilogue GEMM PyTorch picks by heuristics);
    - with `fuse_projections`, diffusers' own `fuse_qkv_projections()` on the model first:
      each self-attention's q, k and v in one matrix product (`to_qkv`), cross-attention's k
      and v in one; the processor above reads them as slices (`_ltx_projections`), and also
      does when the model's projections were fused by the caller. Opt-in: diffusers keeps
      to_q / to_k / to_v beside the fused copy (the attention weights' memory twice), and
      torch.compile with inductor's freezing concatenates q / k / v by itself;
    - the output head: LayerNorm + `* (1 + scale) + shift` -> `adaln(norm="layer")`, or
      with the last block's feed-forward residual `gated_residual_adaln(norm="layer")`;
    - across blocks (the model's forward): each block's gated feed-forward residual is
      applied by the next block together with its norm1 + modulation, and the last block's
      together with the output head, each in one `gated_residual_adaln`; so a forward runs
      `adaln` once (the first norm1). A block called on its own, by diffusers' forward (LoRA
      scale, gradient checkpointing), or wrapped by a hook set after the injection (caching,
      block-level group offloading) applies its feed-forward residual with `gated_residual`.

    Weight-less norms, per-sample (`temb` `[B, 1, ...]`) and per-token (`[B, S, ...]`)
    timesteps are handled. Call it before `enable_model_cpu_offload()` and before
    `torch.compile`. Calling it again is harmless. Returns an `InjectionReport` (printed when
    `verbose`); raises ValueError when the model holds no LTX-Video module.
    """
    model = _unwrap(transformer)
    report = InjectionReport(type(model).__name__)
    if fuse_projections:
        _fuse_qkv_projections(model, report)
    for m in model.modules():
        cls = type(m).__name__
        if cls == "LTXVideoTransformerBlock":
            _set_forward(m, _ltx_block_forward, report, LTX_KINDS["block"])
            m._ltx_kernels_defers = True  # see _ltx_defers
        elif cls == "LTXAttention":
            _set_processor(m, LTXVideoKernelAttnProcessor, "LTXVideoAttnProcessor", report,
                           LTX_KINDS["attn"])
        elif _is_tanh_gelu_proj(m):
            if gelu_in_matmul:
                _set_forward(m, DiffusersGELUInMatmul.forward, report,
                             LTX_KINDS["gelu_in_matmul"])
            else:
                _set_forward(m, DiffusersGELU.forward, report, LTX_KINDS["gelu"])
    if type(model).__name__ == "LTXVideoTransformer3DModel":
        out_cls = getattr(sys.modules.get(type(model).__module__), "Transformer2DModelOutput", None)
        if out_cls is None:
            report.notes.append("output head kept: Transformer2DModelOutput not found next to "
                                "the model class")
        else:
            model._ltx_kernels_output_cls = out_cls
            model._ltx_kernels_rope_pairs = _ltx_rope_pairs_equal(model.rope)
            if not model._ltx_kernels_rope_pairs:
                report.notes.append("rope tables kept full: the rope module's pairs differ")
            _set_forward(model, _ltx_transformer_forward, report, LTX_KINDS["head"])
            n_blocks = sum(type(b).__name__ == "LTXVideoTransformerBlock"
                           for b in getattr(model, "transformer_blocks", ()))
            if n_blocks:
                report.add(LTX_KINDS["xblock"], n_blocks)
    if report.total == 0:
        raise ValueError(f"inject_ltx_video: no LTX-Video module in {type(model).__name__}")
    if verbose:
        print(report)
    return report


# ---- FLUX ------------------------------------------------------------------------------------


def _flux_projections(attn, hidden_states, encoder_hidden_states):
    """q, k, v of the image tokens and, when the attention has added projections and text is
    given, of the text tokens (None otherwise); fused projections if the model fused them."""
    if getattr(attn, "fused_projections", False):
        q, k, v = attn.to_qkv(hidden_states).chunk(3, dim=-1)
        eq = ek = ev = None
        if encoder_hidden_states is not None and hasattr(attn, "to_added_qkv"):
            eq, ek, ev = attn.to_added_qkv(encoder_hidden_states).chunk(3, dim=-1)
        return q, k, v, eq, ek, ev
    q, k, v = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
    eq = ek = ev = None
    if encoder_hidden_states is not None and attn.added_kv_proj_dim is not None:
        eq = attn.add_q_proj(encoder_hidden_states)
        ek = attn.add_k_proj(encoder_hidden_states)
        ev = attn.add_v_proj(encoder_hidden_states)
    return q, k, v, eq, ek, ev


class FluxKernelAttnProcessor(_KernelAttnProcessor):
    """diffusers' `FluxAttnProcessor` with each per-head q/k RMSNorm (`norm_q`, `norm_k`, and
    `norm_added_q` / `norm_added_k` of the text tokens) fused with the interleaved rope that
    follows it (`rms_norm_rope`, per head): the text and image tokens are normalized with
    different weights and rotated by their own rows of the one rope table (text first, as
    diffusers concatenates them), so each part (its q and k together: `rms_norm_rope_qk`) is
    one fused op and the parts are concatenated after. Without rope: `rms_norm` per head."""

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None,
                 image_rotary_emb=None):
        query, key, value, eq, ek, ev = _flux_projections(attn, hidden_states,
                                                          encoder_hidden_states)
        query = query.unflatten(-1, (-1, attn.head_dim))
        key = key.unflatten(-1, (-1, attn.head_dim))
        value = value.unflatten(-1, (-1, attn.head_dim))
        text = attn.added_kv_proj_dim is not None and eq is not None

        def norm_rope(norm_q, norm_k, q, k, rows):
            if image_rotary_emb is None:
                return _qk_norm(norm_q, q), _qk_norm(norm_k, k)
            cos, sin = image_rotary_emb  # [S_text + S_image, Dh]
            return _qk_norm_rope_pair(norm_q, norm_k, q, k, cos[rows, None, :],
                                      sin[rows, None, :], per_head=True)

        if text:
            n_text = eq.shape[1]
            eq = eq.unflatten(-1, (-1, attn.head_dim))
            ek = ek.unflatten(-1, (-1, attn.head_dim))
            ev = ev.unflatten(-1, (-1, attn.head_dim))
            text_rows, image_rows = slice(0, n_text), slice(n_text, None)
            eq, ek = norm_rope(attn.norm_added_q, attn.norm_added_k, eq, ek, text_rows)
            query, key = norm_rope(attn.norm_q, attn.norm_k, query, key, image_rows)
            query = torch.cat([eq, query], dim=1)
            key = torch.cat([ek, key], dim=1)
            value = torch.cat([ev, value], dim=1)
        else:
            query, key = norm_rope(attn.norm_q, attn.norm_k, query, key, slice(None))

        if self.attention_fn is not None:
            hidden_states = self.attention_fn(query, key, value, attn_mask=attention_mask,
                                              backend=self._attention_backend,
                                              parallel_config=self._parallel_config)
        else:
            hidden_states = self._attention(query, key, value, attention_mask)
        hidden_states = hidden_states.flatten(2, 3).to(query.dtype)

        if encoder_hidden_states is not None:
            encoder_hidden_states, hidden_states = hidden_states.split_with_sizes(
                [encoder_hidden_states.shape[1],
                 hidden_states.shape[1] - encoder_hidden_states.shape[1]], dim=1)
            hidden_states = attn.to_out[0](hidden_states.contiguous())
            hidden_states = attn.to_out[1](hidden_states)
            encoder_hidden_states = attn.to_add_out(encoder_hidden_states.contiguous())
            return hidden_states, encoder_hidden_states
        return hidden_states


FLUX_KINDS = {
    "attn": "FluxAttention processor: per-head q/k norm + rope -> rms_norm_rope_qk",
    "adaln_zero": "AdaLayerNormZero -> adaln",
    "adaln_zero_single": "AdaLayerNormZeroSingle -> adaln",
    "adaln_continuous": "AdaLayerNormContinuous (output head) -> adaln",
    "gelu": "GELU(tanh) feed-forward activation -> gelu_tanh",
    "act_mlp": "nn.GELU(tanh) (single-stream MLP) -> gelu_tanh",
}


def inject_flux(transformer, *, verbose: bool = False) -> InjectionReport:
    """Route a diffusers `FluxTransformer2DModel` (or a pipeline holding one) through the
    kernels, in place: per-head q/k RMSNorm + rope of every `FluxAttention` (default processor
    only) -> `rms_norm_rope_qk`; `AdaLayerNormZero`, `AdaLayerNormZeroSingle` and the output
    head's `AdaLayerNormContinuous` -> `adaln` (the `layers` forwards); the feed-forward's and
    the single-stream MLP's tanh-GELU -> `gelu_tanh`. The blocks' residual and gating steps
    stay in PyTorch (torch.compile fuses them). As `inject_ltx_video`: before offloading and
    `torch.compile`; returns an `InjectionReport`."""
    model = _unwrap(transformer)
    report = InjectionReport(type(model).__name__)
    layer_forwards = {
        "AdaLayerNormZero": (AdaLayerNormZero.forward, FLUX_KINDS["adaln_zero"]),
        "AdaLayerNormZeroSingle": (AdaLayerNormZeroSingle.forward, FLUX_KINDS["adaln_zero_single"]),
        "AdaLayerNormContinuous": (AdaLayerNormContinuous.forward, FLUX_KINDS["adaln_continuous"]),
    }
    for m in model.modules():
        cls = type(m).__name__
        if cls == "FluxAttention":
            _set_processor(m, FluxKernelAttnProcessor, "FluxAttnProcessor", report,
                           FLUX_KINDS["attn"])
        elif cls in layer_forwards:
            fn, kind = layer_forwards[cls]
            _set_forward(m, fn, report, kind)
        elif _is_tanh_gelu_proj(m):
            _set_forward(m, DiffusersGELU.forward, report, FLUX_KINDS["gelu"])
        elif isinstance(m, nn.GELU) and m.approximate == "tanh":
            _set_forward(m, GeluTanh.forward, report, FLUX_KINDS["act_mlp"])
    if report.total == 0:
        raise ValueError(f"inject_flux: no FLUX module in {type(model).__name__}")
    if verbose:
        print(report)
    return report
