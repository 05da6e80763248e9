// Host entry points of every op, one definition per backend (ltx_kernels_cpu/<op>.cpp,
// ltx_kernels_cuda/<op>.cu). Each checks its arguments, returns early on empty input and
// writes into `out`; the Python wrappers in ltx_kernels/ allocate and return.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// out = input * rsqrt(mean(input^2, -1) + eps) [* weight]
void rms_norm(at::Tensor& out, const at::Tensor& input,
              const std::optional<at::Tensor>& weight, double eps, bool round_before_weight);

// Rotary embedding: the first R = cos.size(-1) elements of each row of input rotated by pairs
// (interleaved (2i, 2i+1), or split halves (i, i + R/2) as rotate_half), the rest copied;
// cos / sin broadcast against input's rows.
void rope(at::Tensor& out, const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin,
          bool interleaved);
// rope on q and k (same dtype and head dim, any head counts) with one cos / sin, one launch.
void rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
             const at::Tensor& cos, const at::Tensor& sin, bool interleaved);
// RMSNorm over the last dim (num_heads == 1) or over each of num_heads equal parts of it, then
// rope on each normalized row; one pass over input, fp32 in between.
void rms_norm_rope(at::Tensor& out, const at::Tensor& input,
                   const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                   const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads);
