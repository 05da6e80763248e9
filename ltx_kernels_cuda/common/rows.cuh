// Device-side row addressing: the `RowLayout` of common/op_checks.h without torch.
#pragma once

#include <cstdint>

namespace ltx {

// Row r of a [..., D] tensor starts at (r / inner) * outer_stride + (r % inner) * inner_stride.
struct Rows {
  int64_t inner;
  int64_t outer_stride;
  int64_t inner_stride;

  __host__ __device__ __forceinline__ int64_t offset(int64_t r) const {
    if (inner == 1) return r * outer_stride;
    return (r / inner) * outer_stride + (r % inner) * inner_stride;
  }
};

}  // namespace ltx
