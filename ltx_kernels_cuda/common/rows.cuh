// Device-side row addressing: the `RowLayout` of common/op_checks.h without torch.
#pragma once

#include <cstdint>

#include "ltx_kernels_cuda/common/fast_rows.cuh"

namespace ltx {

// Row r of a [..., D] tensor starts at (r / inner) * outer_stride + (r % inner) * inner_stride.
struct Rows {
  int64_t inner;
  int64_t outer_stride;
  int64_t inner_stride;
  FastDiv inner_div;  // inner as a FastDiv, when `fast`
  bool fast;          // every row index and `inner` below 2^31 (to_rows)

  __host__ __device__ __forceinline__ int64_t offset(int64_t r) const {
    if (inner == 1) return r * outer_stride;
    return (r / inner) * outer_stride + (r % inner) * inner_stride;
  }

  // offset() for kernels that run only when `fast`: the division a multiply and a shift, so
  // that no 64-bit division (a called subroutine, with registers saved to the stack around
  // it) is in the kernel's code.
  __device__ __forceinline__ int64_t offset_fast(int64_t r) const {
    if (inner == 1) return r * outer_stride;
    const uint32_t n = static_cast<uint32_t>(r);
    const uint32_t q = inner_div.div(n);
    return static_cast<int64_t>(q) * outer_stride +
           static_cast<int64_t>(n - q * static_cast<uint32_t>(inner)) * inner_stride;
  }
};

}  // namespace ltx
