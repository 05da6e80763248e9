"""Default outputs: laid out in memory like the input, as torch's elementwise ops lay theirs out.

A transformers q is `q_proj(h).view(B, S, H, D).transpose(1, 2)`: shape `[B, H, S, D]`, memory
in `[B, S, H, D]` order. The eager rope formula returns that order too, and so must ours:
given a `[B, H, S, D]`-contiguous q instead, SDPA (cuDNN) returns its output in that order and
the model's `attn_output.transpose(1, 2).contiguous()` then copies the whole output, where it
is a no-op for eager's q.
"""

import torch


# Strided row levels the rope ops address in an output (BcastRows::kMaxDims,
# common/bcast_rows.h; the row ops' RowLayout addresses two, and their outputs stay contiguous).
ROPE_ROW_LEVELS = 4


def row_levels(t: torch.Tensor) -> int:
    """How many strided levels t's rows (all dims but the last) need, merging a dim into the
    next outer one where its stride allows, as the kernels' `try_row_layout` and
    `try_strided_rows` (common/op_checks.h) do."""
    levels = []  # [size, stride] innermost first
    for size, stride in zip(reversed(t.shape[:-1]), reversed(t.stride()[:-1])):
        if size == 1:
            continue
        if levels and stride == levels[-1][0] * levels[-1][1]:
            levels[-1][0] *= size
        else:
            levels.append([size, stride])
    return len(levels)


def empty_rows_like(x: torch.Tensor, max_levels: int) -> torch.Tensor:
    """An uninitialized tensor of x's shape, dtype and device with x's memory order where the
    kernel can write that order (x dense, last dim contiguous, rows in at most `max_levels`
    strided levels), else contiguous."""
    if x.dim() >= 2 and not x.is_contiguous():
        out = torch.empty_like(x, memory_format=torch.preserve_format)
        if out.stride(-1) == 1 and row_levels(out) <= max_levels:
            return out
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)
