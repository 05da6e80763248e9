"""ltx-kernels: fused, vectorized kernels for the non-matmul parts of diffusion transformers
and LLMs (CUDA and CPU).

Load it with `kernels.get_kernel("<repo-id>", version=1)`; the ops are plain functions on
tensors, and `layers` holds drop-in modules for `kernels.kernelize`.
"""

from . import integrations, layers
from ._ops import ops
from .activation import geglu, gelu_tanh, linear_gelu_tanh, silu, silu_and_mul, silu_mul
from .adaln import adaln, gated_residual, gated_residual_adaln
from .rms_norm import fused_add_rms_norm, rms_norm
from .rope import rms_norm_rope, rms_norm_rope_qk, rope, rope_pair_tables, rope_qk

__all__ = [
    "adaln",
    "fused_add_rms_norm",
    "gated_residual",
    "gated_residual_adaln",
    "geglu",
    "gelu_tanh",
    "integrations",
    "layers",
    "linear_gelu_tanh",
    "ops",
    "rms_norm",
    "rms_norm_rope",
    "rms_norm_rope_qk",
    "rope",
    "rope_pair_tables",
    "rope_qk",
    "silu",
    "silu_and_mul",
    "silu_mul",
]
