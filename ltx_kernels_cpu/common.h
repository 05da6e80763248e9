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

#include <cstdint>
#include <vector>

#include "common/op_checks.h"
#include "ltx_kernels_cpu/simd.h"

namespace ltx {
namespace cpu {

template <typename T>
inline float to_float(T v) {
  return static_cast<float>(v);
}

// Round a float to T and back: the value PyTorch would see after `.to(T)`.
template <typename T>
inline float round_to(float v) {
  return static_cast<float>(static_cast<T>(v));
}

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

// One float scratch row per task, reused across its rows.
struct Scratch {
  std::vector<float> a;
  explicit Scratch(int64_t D) : a(static_cast<size_t>(D)) {}
};

}  // namespace cpu
}  // namespace ltx

// Runs the body with `scalar_t` bound to float, c10::Half or c10::BFloat16.
#define LTX_CPU_DISPATCH_FLOAT_TYPES(dtype, name, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, name, __VA_ARGS__)
