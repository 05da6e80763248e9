// Broadcast of a per-row operand (scale, shift, gate, cos, sin) against the rows of x, by
// strides: never materialized. Plain struct, usable on the host, in CPU kernels and (compiled
// by nvcc) in CUDA kernels. Built by ltx::broadcast_rows() in common/op_checks.h.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LTX_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define LTX_HOST_DEVICE inline
#endif

namespace ltx {

// Row r of x (its leading dims flattened, row-major) reads the operand's row at offset(r).
// Dims are stored innermost first, after merging dims that can be merged; stride 0 on a dim
// where the operand broadcasts (size 1 there).
struct BcastRows {
  static constexpr int kMaxDims = 4;
  int nd = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};

  LTX_HOST_DEVICE int64_t offset(int64_t r) const {
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) {
      if (d == nd - 1) return off + r * stride[d];
      const int64_t i = r % size[d];
      r /= size[d];
      off += i * stride[d];
    }
    return off;
  }
  // True when the rows of x in each aligned run of n (rows kn .. kn + n - 1) read the same
  // operand row: the operand broadcasts over x's innermost leading dim and n divides it (or
  // it broadcasts over all of them).
  LTX_HOST_DEVICE bool same_row_in_runs_of(int64_t n) const {
    if (n <= 1 || nd == 0) return true;
    return stride[0] == 0 && (nd == 1 || size[0] % n == 0);
  }
  // True when every row start is a multiple of `vec` elements.
  LTX_HOST_DEVICE bool strides_multiple_of(int64_t vec) const {
    for (int d = 0; d < nd; ++d)
      if (stride[d] % vec != 0) return false;
    return true;
  }
};

}  // namespace ltx
