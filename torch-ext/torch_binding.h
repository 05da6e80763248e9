// Host entry points of every op, one definition per backend (ltx_kernels_cpu/<op>.cpp,
// ltx_kernels_cuda/<op>.cu). Each checks its arguments, returns early on empty input and
// writes into `out`; the Python wrappers in ltx_kernels/ allocate and return.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>

// out = input * rsqrt(mean(input^2, -1) + eps) [* weight]
void rms_norm(at::Tensor& out, const at::Tensor& input,
              const std::optional<at::Tensor>& weight, double eps, bool round_before_weight);

// Activations, fp32 math, rounded once. Elementwise on [..., D]:
// out = gelu(input, approximate="tanh"), out = silu(input).
void gelu_tanh(at::Tensor& out, const at::Tensor& input);
void silu(at::Tensor& out, const at::Tensor& input);
// Gated, input [..., 2H] -> out [..., H]:
// geglu: out = input[..., :H] * gelu(input[..., H:], approximate) ("tanh" or "none");
// silu_and_mul: out = silu(input[..., :H]) * input[..., H:].
void geglu(at::Tensor& out, const at::Tensor& input, std::string_view approximate);
void silu_and_mul(at::Tensor& out, const at::Tensor& input);
