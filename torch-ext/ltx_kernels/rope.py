"""Rotary position embedding (RoPE), alone or fused after RMSNorm (q/k norm + rope).

Pairs, as the models define them (cos / sin already repeated per pair, as the models build
them; last dim R, the rotary dim):

- interleaved (LTX-Video, FLUX `apply_rotary_emb`): pairs `(2i, 2i+1)`;
- split halves (transformers `apply_rotary_pos_emb`, `rotate_half`): pairs `(i, i + R/2)`.

For a pair `(a, b)` at positions `(p, q)`: `out[p] = a*cos[p] - b*sin[p]`,
`out[q] = b*cos[q] + a*sin[q]`. Only the first R elements of the last dim are rotated; the
rest are copied (partial rotary). cos / sin broadcast against x's leading dims like torch
broadcasting (aligned to the right, each dim 1 or x's), by strides, never materialized. Math
in fp32, one rounding to x's dtype.

Pair tables (`pair_tables=True`, the fused norm + rope ops): the models' tables repeat each
value for both elements of a pair (LTX-Video, FLUX: `repeat_interleave(2)`; transformers:
`cat((freqs, freqs))`), so one value per pair, `[..., R/2]`, holds the same rotation in half
the bytes: pair `i` (elements `(2i, 2i+1)` interleaved, `(i, i + R/2)` split) reads entry `i`.
`rope_pair_tables(cos, sin, interleaved=...)` takes them from full tables.
"""

from typing import Optional, Tuple

import torch

from ._layout import ROPE_ROW_LEVELS, empty_rows_like
from ._ops import add_op_namespace_prefix, ops


def rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    interleaved: bool,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Rotates pairs of x's last dim by cos / sin.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; rows may be strided (last dim contiguous),
            e.g. q of `q_proj(h).view(B, S, H, D).transpose(1, 2)`.
        cos, sin: `[..., R]` with R even, 2 <= R <= D, broadcastable to x's leading dims;
            float32 or x's dtype (both the same). Examples: x `[B, H, S, D]` with
            `[B, 1, S, D]` (transformers, after `unsqueeze(1)`); x `[B, S, H*D]` with
            `[B, S, H*D]` (LTX-Video); x `[B, S, H, D]` with `[S, 1, D]` or `[B, S, 1, D]` (FLUX).
        interleaved: pairs `(2i, 2i+1)` if True, split halves `(i, i + R/2)` if False.
        out: optional output of x's shape and dtype (rows may be strided). When omitted, it
            is laid out in memory like x (as the eager formula's result is: a transposed q
            gives a transposed output) where its rows need at most four strided levels, else
            contiguous; the same for the other rope ops' default outputs.

    Returns:
        `out`, x's shape and dtype.
    """
    if out is None:
        out = empty_rows_like(x, ROPE_ROW_LEVELS)
    ops.rope(out, x, cos, sin, interleaved)
    return out


def rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    interleaved: bool,
    q_out: Optional[torch.Tensor] = None,
    k_out: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """`rope` on q and k in one launch. q and k have one dtype and head dim; their head counts
    (and any other leading dim where cos / sin broadcast) may differ (GQA). Returns
    `(q_out, k_out)`."""
    if q_out is None:
        q_out = empty_rows_like(q, ROPE_ROW_LEVELS)
    if k_out is None:
        k_out = empty_rows_like(k, ROPE_ROW_LEVELS)
    ops.rope_qk(q_out, k_out, q, k, cos, sin, interleaved)
    return q_out, k_out


def rope_pair_tables(cos: torch.Tensor, sin: torch.Tensor, *, interleaved: bool
                ) -> Tuple[torch.Tensor, torch.Tensor]:
    """One value per rotation pair from full tables `[..., R]` whose pairs hold equal values (as
    the models build them): `[..., R/2]`, contiguous, for `pair_tables=True`. Only the first
    element of each pair is read; the caller vouches that its partner is equal."""
    if interleaved:
        return cos[..., 0::2].contiguous(), sin[..., 0::2].contiguous()
    half = cos.shape[-1] // 2
    return cos[..., :half].contiguous(), sin[..., :half].contiguous()


def _heads(per_head: bool, num_heads: Optional[int]) -> int:
    """The ops' num_heads argument: 1 (the whole last dim, or x already [..., H, Dh])."""
    if num_heads is not None and not per_head:
        raise ValueError("num_heads: only meaningful with per_head=True")
    return int(num_heads) if num_heads is not None else 1


def rms_norm_rope(
    x: torch.Tensor,
    weight: Optional[torch.Tensor],
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
    *,
    interleaved: bool,
    per_head: bool = False,
    num_heads: Optional[int] = None,
    pair_tables: bool = False,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """RMSNorm then RoPE in one pass: `rope(x * rsqrt(mean(x^2) + eps) [* weight])`, fp32 in
    between, one rounding to x's dtype.

    Args:
        x: `[..., D]`, float32 / float16 / bfloat16; rows may be strided.
        weight: optional norm weight, x's dtype or float32: `[D]`, or `[D / num_heads]` per head.
        cos, sin: as in `rope`, broadcast against the normalized rows: x itself, or x viewed as
            `[..., num_heads, D / num_heads]` when `num_heads` is given (then e.g. `[B, S, 1, Dh]`
            or `[S, 1, Dh]`). Last dim R <= the normalized dim.
        eps: added to the mean square; must be >= 0.
        interleaved: pair layout, as in `rope`.
        per_head: False: normalize over the whole last dim (LTX-Video's `norm_q` / `norm_k`
            across heads: x `[B, S, 2048]`, weight `[2048]`, eps 1e-5, interleaved, fp32
            cos / sin `[B, S, 2048]`). True: normalize each head (FLUX, Qwen3 q/k norms): x
            `[..., H*Dh]` with `num_heads=H`, or x `[..., H, Dh]` with `num_heads=None`.
        num_heads: heads in x's last dim (per_head only).
        pair_tables: cos / sin hold one value per rotation pair, `[..., R/2]` (module
            docstring). LTX-Video 2B's fp32 tables `[2, 2688, 2048]` are 88 of the 176 MB that
            `rms_norm_rope_qk` moves; as pair tables shared over the batch, `[1, 2688, 1024]`,
            22 of 110.
        out: optional output of x's shape and dtype.

    Returns:
        `out`, x's shape and dtype.
    """
    if out is None:
        out = empty_rows_like(x, ROPE_ROW_LEVELS)
    ops.rms_norm_rope(out, x, weight, cos, sin, float(eps), interleaved,
                      _heads(per_head, num_heads), bool(pair_tables))
    return out


def rms_norm_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: Optional[torch.Tensor],
    k_weight: Optional[torch.Tensor],
    cos: torch.Tensor,
    sin: torch.Tensor,
    eps: float,
    *,
    interleaved: bool,
    per_head: bool = False,
    num_heads: Optional[int] = None,
    pair_tables: bool = False,
    q_out: Optional[torch.Tensor] = None,
    k_out: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """`rms_norm_rope` on q (with q_weight) and k (with k_weight) with one cos / sin, in one
    launch. When q and k have the same shape (self-attention with as many k heads as q heads:
    LTX-Video, FLUX) each cos / sin element is read once for both, which in LTX-Video (fp32
    tables `[B, S, D]`, as large as q and k together) saves a third of the bytes of two
    `rms_norm_rope` calls; otherwise (GQA) q and k run one after the other. Same dtype and
    last dim for q and k; the weights may be None, and have one dtype when both are given.
    `eps`, `interleaved`, `per_head`, `num_heads` and `pair_tables` apply to each of q and k as in
    `rms_norm_rope` (with per_head and num_heads, q's and k's last dims hold num_heads heads
    each). Returns `(q_out, k_out)`."""
    heads = _heads(per_head, num_heads)
    if q_out is None:
        q_out = empty_rows_like(q, ROPE_ROW_LEVELS)
    if k_out is None:
        k_out = empty_rows_like(k, ROPE_ROW_LEVELS)
    ops.rms_norm_rope_qk(q_out, k_out, q, k, q_weight, k_weight, cos, sin, float(eps),
                         interleaved, heads, bool(pair_tables))
    return q_out, k_out


@torch.library.register_fake(add_op_namespace_prefix("rope"))
def _rope_fake(out, x, cos, sin, interleaved) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("rope_qk"))
def _rope_qk_fake(q_out, k_out, q, k, cos, sin, interleaved) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("rms_norm_rope"))
def _rms_norm_rope_fake(out, x, weight, cos, sin, eps, interleaved, num_heads,
                       pair_tables) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("rms_norm_rope_qk"))
def _rms_norm_rope_qk_fake(q_out, k_out, q, k, q_weight, k_weight, cos, sin, eps, interleaved,
                           num_heads, pair_tables) -> None:
    return None
