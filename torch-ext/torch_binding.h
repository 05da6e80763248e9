// Host entry points of every op, one definition per backend (ltx_kernels_cpu/<op>.cpp,
// ltx_kernels_cuda/<op>.cu). Each checks its arguments, returns early on empty input and
// writes into `out`; the Python wrappers in ltx_kernels/ allocate and return.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

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
// silu_mul: out = silu(gate) * up (a gated MLP's two projections, not concatenated).
void silu_mul(at::Tensor& out, const at::Tensor& gate, const at::Tensor& up);
// In place (vLLM / FlashInfer): residual = residual + input (rounded to its dtype), then
// input = rms_norm(residual) [* weight], computed from the rounded sum.
void fused_add_rms_norm(at::Tensor& input, at::Tensor& residual,
                        const std::optional<at::Tensor>& weight, double eps);

// out = norm(input) [* weight] [+ bias], then * (1 + scale) + shift; norm is "rms" or "layer".
void adaln(at::Tensor& out, const at::Tensor& input, const at::Tensor& scale,
           const at::Tensor& shift, const std::optional<at::Tensor>& weight,
           const std::optional<at::Tensor>& bias, c10::string_view norm, double eps);

// residual_out = input + y [* gate] (rounded to input's dtype), and
// out = adaln(residual_out, scale, shift, ...), in one pass.
void gated_residual_adaln(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& input,
                          const at::Tensor& y, const std::optional<at::Tensor>& gate,
                          const at::Tensor& scale, const at::Tensor& shift,
                          const std::optional<at::Tensor>& weight,
                          const std::optional<at::Tensor>& bias, c10::string_view norm,
                          double eps);
// out = input + y * gate (rounded to input's dtype): gated_residual_adaln's residual_out alone;
// out may be input itself.
void gated_residual(at::Tensor& out, const at::Tensor& input, const at::Tensor& y,
                    const at::Tensor& gate);
// Rotary embedding: the first R = cos.size(-1) elements of each row of input rotated by pairs
// (interleaved (2i, 2i+1), or split halves (i, i + R/2) as rotate_half), the rest copied;
// cos / sin broadcast against input's rows.
void rope(at::Tensor& out, const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin,
          bool interleaved);
// rope on q and k (same dtype and head dim, any head counts) with one cos / sin, one launch.
void rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
             const at::Tensor& cos, const at::Tensor& sin, bool interleaved);
// RMSNorm over the last dim (num_heads == 1) or over each of num_heads equal parts of it, then
// rope on each normalized row; one pass over input, fp32 in between. pair_tables: cos / sin
// hold one value per rotation pair (last dim R / 2).
void rms_norm_rope(at::Tensor& out, const at::Tensor& input,
                   const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                   const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                   bool pair_tables);
// rms_norm_rope on q and k (same dtype and last dim) with one cos / sin: one launch that loads
// each cos / sin item once for both when their rows match, else one after the other.
void rms_norm_rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q,
                      const at::Tensor& k, const std::optional<at::Tensor>& q_weight,
                      const std::optional<at::Tensor>& k_weight, const at::Tensor& cos,
                      const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                      bool pair_tables);
