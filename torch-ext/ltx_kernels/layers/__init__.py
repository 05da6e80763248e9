"""Drop-in forwards for `kernels.kernelize` / `replace_kernel_forward_from_hub`.

Each class has only `forward`, with the signature of the forward it replaces, and reads its
state (weights, eps) from the module it is attached to, as `kernels` requires.
"""

from .activation import (DiffusersGEGLU, DiffusersGELU, DiffusersGELUInMatmul, GeluTanh, SiLU,
                         SiluAndMul)
from .adaln import AdaLayerNormContinuous, AdaLayerNormZero, AdaLayerNormZeroSingle
from .rms_norm import DiffusersRMSNorm, RMSNorm
from .rope import RotaryPosEmb

# The layer name transformers' own "rotary_pos_emb" mapping uses (kernels-community/rotary), so
# that pointing that mapping at this repository needs no other change.
apply_rotary_transformers = RotaryPosEmb

__all__ = [
    "AdaLayerNormContinuous",
    "AdaLayerNormZero",
    "AdaLayerNormZeroSingle",
    "apply_rotary_transformers",
    "DiffusersGEGLU",
    "DiffusersGELU",
    "DiffusersGELUInMatmul",
    "DiffusersRMSNorm",
    "GeluTanh",
    "RMSNorm",
    "RotaryPosEmb",
    "SiLU",
    "SiluAndMul",
]
