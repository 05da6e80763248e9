// Helpers shared by the CPU kernels: dtype dispatch to c10 types and float conversion.
//
// CPU kernels mirror the CUDA ones: fp32 math, one rounding at the store, rows in parallel
// (at::parallel_for), and plain loops over contiguous floats that the compiler vectorizes (the
// 16-bit loads and stores and the activations in explicit x86-64 vectors: simd.h).
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/op_checks.h"
#include "ltx_kernels_cpu/simd.h"

namespace ltx {
namespace cpu {

// Converts n values of T to floats (16-bit types in vector registers where the CPU has them:
// simd.h).
template <typename T>
inline void load_row(const T* src, float* dst, int64_t n) {
  widen(src, dst, n);
}

// Rounds n floats to T (to nearest even, as c10's conversions).
template <typename T>
inline void store_row(const float* src, T* dst, int64_t n) {
  narrow(src, dst, n);
}

// n values of S as floats: the row itself when S is float, else converted into `scratch`.
template <typename S>
inline const float* float_row(const S* row, float* scratch, int64_t n) {
  if constexpr (std::is_same_v<S, float>) {
    return row;
  } else {
    load_row(row, scratch, n);
    return scratch;
  }
}

// A broadcast operand's rows as floats (a gate, scale or shift row per sample, repeated for
// every row of its sample): converted into its own scratch row only when the row changes.
template <typename S>
struct CachedRow {
  const S* last = nullptr;
  const float* get(const S* row, float* scratch, int64_t n) {
    if constexpr (!std::is_same_v<S, float>) {
      if (row == last) return scratch;
      last = row;
    }
    return float_row(row, scratch, n);
  }
};

// Where a row's results are computed before they are stored: the output row itself when O is
// float (no copy), else `scratch`; finish_row then puts them in the output.
template <typename O>
inline float* out_row(O* dst, float* scratch) {
  if constexpr (std::is_same_v<O, float>) {
    return dst;
  } else {
    return scratch;
  }
}

// out_row for a loop whose rows are declared not to overlap (__restrict): scratch also when
// the output row is one of the loop's input rows (fp32 in place).
template <typename O>
inline float* distinct_out_row(O* dst, float* scratch, const float* in1, const float* in2) {
  float* o = out_row(dst, scratch);
  return (o == in1 || o == in2) ? scratch : o;
}

// The row's values into the output: rounded (16 bits), copied (fp32 computed in scratch), or
// nothing (fp32 computed in place).
template <typename O>
inline void finish_row(const float* src, O* dst, int64_t n) {
  if constexpr (std::is_same_v<O, float>) {
    if (src != dst) std::copy(src, src + n, dst);
  } else {
    narrow(src, dst, n);
  }
}

// v[i] = float(T(v[i])) for n values, the value PyTorch sees after `.to(T)`, through the T row
// `tmp` (vectors where simd.h has them); nothing for float.
template <typename T>
inline void round_row(float* v, T* tmp, int64_t n) {
  if constexpr (!std::is_same_v<T, float>) {
    narrow(v, tmp, n);
    widen(tmp, v, n);
  }
}

// Sum of (v[i] - center)^2 (center 0: the sum of squares; the mean: n * the variance). Eight
// partial sums, like the CUDA kernels' per-thread partials: more accurate than one running sum
// over a long row, and the compiler vectorizes it without reassociating anything itself.
inline float sum_sq_dev(const float* v, int64_t n, float center) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = v[i + l] - center;
      acc[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const float d = v[i] - center;
    acc[0] += d * d;
  }
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

// Sum of v[i], with partial sums as in sum_sq_dev.
inline float sum_of(const float* v, int64_t n) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += v[i + l];
  }
  for (; i < n; ++i) acc[0] += v[i];
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

// Rows per parallel task: about 64 KB of work each, at least one row.
inline int64_t grain_rows(int64_t D) { return D >= 16384 ? 1 : (16384 + D - 1) / D; }

// `n` float scratch rows of D per task, reused across its rows: 16-bit rows converted whole, in
// vectors (float_row, finish_row), rather than one element at a time through c10's scalar
// conversions (fp16's cost the norms 4-6x bf16's time on the CPU before run Z); fp32 rows are
// read and written in place.
struct Scratch {
  std::vector<float> a;
  int64_t D;
  explicit Scratch(int64_t D, int n = 1) : a(static_cast<size_t>(D * n)), D(D) {}
  float* row(int i) { return a.data() + i * D; }
};

}  // namespace cpu
}  // namespace ltx

// Runs the body with `scalar_t` bound to float, c10::Half or c10::BFloat16.
#define LTX_CPU_DISPATCH_FLOAT_TYPES(dtype, name, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, name, __VA_ARGS__)
