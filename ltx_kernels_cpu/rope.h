// Rotary-embedding math shared by the CPU kernels rope.cpp and rms_norm_rope.cpp; the twin of
// ltx_kernels_cuda/common/rope.cuh: the same pairs, the same fp32 formula, one rounding.
#pragma once

#include <cstdint>

#include "ltx_kernels_cpu/common.h"

namespace ltx {
namespace cpu {

// A pair table's row (R / 2 values, one per rotation pair) as the full row of R floats that
// rope_rotate_row reads: each value at both elements of its pair (interleaved (2j, 2j+1),
// split halves (j, R/2 + j)). `half` is scratch for the row converted (R / 2 floats).
template <typename C>
inline const float* pair_table_row(const C* row, float* full, float* half_row, int64_t R,
                                   bool interleaved) {
  const int64_t half = R / 2;
  const float* src = float_row(row, half_row, half);
  for (int64_t j = 0; j < half; ++j) {
    const float v = src[j];
    full[interleaved ? 2 * j : j] = v;
    full[interleaved ? 2 * j + 1 : half + j] = v;
  }
  return full;
}

// o = v with its first R elements rotated by pairs (interleaved (2i, 2i+1) or split halves
// (i, i + R/2)); for a pair (a, b) at (p, q): o[p] = a*c[p] - b*s[p], o[q] = b*c[q] + a*s[q].
// Elements R..D-1 pass unchanged. o may be v (each pair read before it is written); the
// caller rounds the row once (finish_row).
inline void rope_rotate_row(const float* v, float* o, const float* c, const float* s, int64_t D,
                            int64_t R, bool interleaved) {
  const int64_t half = R / 2;
  for (int64_t j = 0; j < half; ++j) {
    const int64_t p = interleaved ? 2 * j : j;
    const int64_t q = interleaved ? 2 * j + 1 : half + j;
    const float a = v[p], b = v[q];
    o[p] = a * c[p] - b * s[p];
    o[q] = b * c[q] + a * s[q];
  }
  if (o != v) {
    for (int64_t i = R; i < D; ++i) o[i] = v[i];
  }
}

}  // namespace cpu
}  // namespace ltx
