"""ltx-kernels: fused, vectorized kernels for the non-matmul parts of diffusion transformers
and LLMs (CUDA and CPU).

Load it with `kernels.get_kernel("<repo-id>", version=1)`; the ops are plain functions on
tensors, and `layers` holds drop-in modules for `kernels.kernelize`.
"""

from . import layers
from ._ops import ops
from .rms_norm import rms_norm
from .rope import rms_norm_rope, rope, rope_qk

__all__ = [
    "layers",
    "ops",
    "rms_norm",
    "rms_norm_rope",
    "rope",
    "rope_qk",
]
