"""Drop-in forwards for `kernels.kernelize` / `replace_kernel_forward_from_hub`.

Each class has only `forward`, with the signature of the forward it replaces, and reads its
state (weights, eps) from the module it is attached to, as `kernels` requires.
"""

from .activation import DiffusersGEGLU, DiffusersGELU, GeluTanh, SiLU, SiluAndMul
from .adaln import AdaLayerNormContinuous, AdaLayerNormZero, AdaLayerNormZeroSingle
from .rms_norm import DiffusersRMSNorm, RMSNorm

__all__ = [
    "AdaLayerNormContinuous",
    "AdaLayerNormZero",
    "AdaLayerNormZeroSingle",
    "DiffusersGEGLU",
    "DiffusersGELU",
    "DiffusersRMSNorm",
    "GeluTanh",
    "RMSNorm",
    "SiLU",
    "SiluAndMul",
]
