// Rotary-embedding math shared by the CPU kernels rope.cpp and rms_norm_rope.cpp; the twin of
// ltx_kernels_cuda/common/rope.cuh: the same pairs, the same fp32 formula, one rounding.
#pragma once

#include <cstdint>

#include "ltx_kernels_cpu/common.h"

namespace ltx {
namespace cpu {

// cos / sin rows as floats: the row itself when C is float, else converted into `scratch`.
template <typename C>
inline const float* table_row(const C* row, float* scratch, int64_t R) {
  if constexpr (std::is_same_v<C, float>) {
    return row;
  } else {
    load_row(row, scratch, R);
    return scratch;
  }
}

// A pair table's row (R / 2 values, one per rotation pair) as the full row of R floats that
// rope_store_row reads: each value at both elements of its pair (interleaved (2j, 2j+1), split
// halves (j, R/2 + j)).
template <typename C>
inline const float* pair_table_row(const C* row, float* full, int64_t R, bool interleaved) {
  const int64_t half = R / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float v = static_cast<float>(row[j]);
    full[interleaved ? 2 * j : j] = v;
    full[interleaved ? 2 * j + 1 : half + j] = v;
  }
  return full;
}

// out = v with its first R elements rotated by pairs (interleaved (2i, 2i+1) or split halves
// (i, i + R/2)); for a pair (a, b) at (p, q): out[p] = a*c[p] - b*s[p], out[q] = b*c[q] + a*s[q].
// Elements R..D-1 are stored unchanged. Each value is rounded to O once.
template <typename O>
inline void rope_store_row(O* out, const float* v, const float* c, const float* s, int64_t D,
                           int64_t R, bool interleaved) {
  const int64_t half = R / 2;
  for (int64_t j = 0; j < half; ++j) {
    const int64_t p = interleaved ? 2 * j : j;
    const int64_t q = interleaved ? 2 * j + 1 : half + j;
    const float a = v[p], b = v[q];
    out[p] = static_cast<O>(a * c[p] - b * s[p]);
    out[q] = static_cast<O>(b * c[q] + a * s[q]);
  }
  for (int64_t i = R; i < D; ++i) out[i] = static_cast<O>(v[i]);
}

}  // namespace cpu
}  // namespace ltx
