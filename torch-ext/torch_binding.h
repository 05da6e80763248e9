// Host entry points of every op, one definition per backend (ltx_kernels_cpu/<op>.cpp,
// ltx_kernels_cuda/<op>.cu). Each checks its arguments, returns early on empty input and
// writes into `out`; the Python wrappers in ltx_kernels/ allocate and return.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// out = input * rsqrt(mean(input^2, -1) + eps) [* weight]
void rms_norm(at::Tensor& out, const at::Tensor& input,
              const std::optional<at::Tensor>& weight, double eps, bool round_before_weight);

// In place (vLLM / FlashInfer): residual = residual + input (rounded to its dtype), then
// input = rms_norm(residual) [* weight], computed from the rounded sum.
void fused_add_rms_norm(at::Tensor& input, at::Tensor& residual,
                        const std::optional<at::Tensor>& weight, double eps);
