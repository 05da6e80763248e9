"""Drop the kernels into whole models of other libraries, without importing those libraries.

- `diffusers`: `inject_ltx_video(transformer)` (LTX-Video) and `inject_flux(transformer)` (FLUX)
  replace forwards and attention processors of a loaded diffusers transformer, matched by class
  name, and return an `InjectionReport` of what was replaced.
- `transformers`: `patch_falcon_layernorm(model)` for models whose `nn.LayerNorm`s carry no
  hub-kernel decorator (Falcon); decorated models go through `kernels.kernelize` and `layers`.
  `fuse_decoder_residuals(model)` fuses LLaMA-style decoder layers' residual adds with the
  RMSNorm after each, also across layers, `fuse_gated_mlp(model)` their MLPs' SiLU and
  product, and `fuse_projections(model)` their q / k / v projections into one matrix product
  and gate / up into another (LLaMA, Mistral, Qwen2, Qwen3).

Inject before `enable_model_cpu_offload()`, `enable_group_offload()`, caching or context
parallelism: those wrap the forwards that are current when they are called.
"""

from .diffusers import InjectionReport, inject_flux, inject_ltx_video
from .transformers import (fuse_decoder_residuals, fuse_gated_mlp, fuse_projections,
                           patch_falcon_layernorm)

__all__ = [
    "InjectionReport",
    "fuse_decoder_residuals",
    "fuse_gated_mlp",
    "fuse_projections",
    "inject_flux",
    "inject_ltx_video",
    "patch_falcon_layernorm",
]
