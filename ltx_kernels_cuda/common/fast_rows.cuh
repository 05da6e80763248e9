// Row offsets of broadcast / strided operands (BcastRows, common/bcast_rows.h) with the
// divisions done as multiplications.
//
// BcastRows::offset divides the row index by each level's size. In a kernel that is a 64-bit
// division (a call into a long instruction sequence) or, when the values fit, a 32-bit one
// (~20 instructions with a reciprocal and corrections), run by every thread before its first
// load of that operand. The sizes are fixed for a launch, so the host precomputes for each a
// multiplier and a shift (FastDiv), and a division becomes a high multiply, an add and a shift.
// torch.compile gets the same effect by specializing its kernels on the shapes.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/bcast_rows.h"

namespace ltx {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994): with shr = ceil(log2(d)) and
// mul = floor(2^32 * (2^shr - d) / d) + 1, n / d == (umulhi(n, mul) + n) >> shr. The sum does
// not overflow because umulhi(n, mul) <= n < 2^31.
struct FastDiv {
  uint32_t mul;
  uint32_t shr;

  __host__ __device__ static FastDiv make(uint32_t d) {
    FastDiv f{0, 0};
    while ((uint64_t{1} << f.shr) < d) ++f.shr;
    f.mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shr) - d)) / d + 1);
    return f;
  }

  __host__ __device__ __forceinline__ uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, mul);
#else
    const uint32_t hi = static_cast<uint32_t>((uint64_t{n} * mul) >> 32);
#endif
    return (hi + n) >> shr;
  }
};

// A BcastRows with a FastDiv per level, for row indices below `rows`. `fast` is false when a
// row index or a level's size does not fit the FastDiv range: offset() then takes the 64-bit
// divisions.
struct FastBcast {
  BcastRows b;
  FastDiv div[BcastRows::kMaxDims];
  bool fast;

  bool strides_multiple_of(int64_t vec) const { return b.strides_multiple_of(vec); }

  // The levels are unrolled over the fixed maximum, so that the struct is read in place from
  // the kernel parameters (a loop with a run-time bound would copy it to local memory).
  __host__ __device__ __forceinline__ int64_t offset(int64_t r) const {
    if (fast) {
      uint32_t q = static_cast<uint32_t>(r);
      int64_t off = 0;
#pragma unroll
      for (int d = 0; d < BcastRows::kMaxDims; ++d) {
        if (d >= b.nd) break;
        if (d == b.nd - 1) return off + static_cast<int64_t>(q) * b.stride[d];
        const uint32_t next = div[d].div(q);
        off += static_cast<int64_t>(q - next * static_cast<uint32_t>(b.size[d])) * b.stride[d];
        q = next;
      }
      return off;
    }
    int64_t off = 0;
#pragma unroll
    for (int d = 0; d < BcastRows::kMaxDims; ++d) {
      if (d >= b.nd) break;
      if (d == b.nd - 1) return off + r * b.stride[d];
      const int64_t q = r / b.size[d];
      off += (r - q * b.size[d]) * b.stride[d];
      r = q;
    }
    return off;
  }
};

// The FastBcast of `b` for row indices 0 <= r < rows.
inline FastBcast fast_bcast(const BcastRows& b, int64_t rows) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  FastBcast f{};
  f.b = b;
  f.fast = rows <= kLimit;
  for (int d = 0; d < b.nd; ++d) {
    if (b.size[d] < 1 || b.size[d] >= kLimit) {
      f.fast = false;
    } else {
      f.div[d] = FastDiv::make(static_cast<uint32_t>(b.size[d]));
    }
  }
  return f;
}

// An operand whose row for x row r starts at (r / run) * stride, in 32 bits: one [D] row for
// every row (stride 0), one row per run of `run` rows (a per-sample [B, 1, D] row for x
// [B, S, D]: run S), or one per row (run 1). The dense row kernels (adaln.cu) take it instead of
// FastBcast's walk over broadcast levels: one high multiply, an add, a shift and a multiply.
struct RunBcast {
  FastDiv run;
  uint32_t stride;

  __host__ __device__ __forceinline__ uint32_t offset(uint32_t r) const {
    return run.div(r) * stride;
  }
};

// `b` as a RunBcast for row indices 0 <= r < rows of `D` elements, when it has that form
// (every level but the outermost broadcast) and every element it reads lies below 2^31.
inline bool run_bcast(const BcastRows& b, int64_t rows, int64_t D, RunBcast& out) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t run = 1, stride = 0;
  if (b.nd > 0) {
    for (int d = 0; d + 1 < b.nd; ++d) {
      if (b.stride[d] != 0) return false;
      run *= b.size[d];
      if (run >= kLimit) return false;
    }
    stride = b.stride[b.nd - 1];
  }
  if (stride < 0 || rows < 1 || rows > kLimit || run < 1) return false;
  if (stride == 0) run = 1;
  if (((rows - 1) / run) * stride + D > kLimit) return false;
  out.run = FastDiv::make(static_cast<uint32_t>(run));
  out.stride = static_cast<uint32_t>(stride);
  return true;
}

// Rows at up to two levels in 32 bits: row r starts at (r % inner) * inner_stride +
// (r / inner) * outer_stride (one level: inner 1; a broadcast level: stride 0). The dense
// norm + rope kernel's operands (rms_norm_rope.cu): x and out in the order
// shared_table_rows_inner leaves them (rows that share a table row innermost), and the tables.
struct Rows2 {
  FastDiv div;  // by inner
  uint32_t inner;
  uint32_t inner_stride;
  uint32_t outer_stride;

  __host__ __device__ __forceinline__ uint32_t offset(uint32_t r) const {
    const uint32_t q = div.div(r);
    return (r - q * inner) * inner_stride + q * outer_stride;
  }
};

// `b` as a Rows2 for row indices 0 <= r < rows of `D` elements, when it has at most two levels
// and every element it reads lies below 2^31.
inline bool rows2(const BcastRows& b, int64_t rows, int64_t D, Rows2& out) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (b.nd > 2 || rows < 1 || rows > kLimit) return false;
  int64_t inner = 1, inner_stride = 0, outer_stride = 0;
  if (b.nd == 2) {
    inner = b.size[0];
    inner_stride = b.stride[0];
    outer_stride = b.stride[1];
  } else if (b.nd == 1) {
    outer_stride = b.stride[0];
  }
  if (inner < 1 || inner >= kLimit || inner_stride < 0 || outer_stride < 0) return false;
  const int64_t last = (std::min(inner, rows) - 1) * inner_stride +
                       ((rows - 1) / inner) * outer_stride + D;
  if (last > kLimit) return false;
  out.div = FastDiv::make(static_cast<uint32_t>(inner));
  out.inner = static_cast<uint32_t>(inner);
  out.inner_stride = static_cast<uint32_t>(inner_stride);
  out.outer_stride = static_cast<uint32_t>(outer_stride);
  return true;
}

}  // namespace ltx
