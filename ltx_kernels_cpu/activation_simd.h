// The activations' fp32 formulas (common/activation_math.h) over float arrays, on x86-64
// vectors where the CPU has them: AVX-512F (16 lanes) or AVX2 + FMA (8 lanes), chosen at run
// time; for activation.cpp. The scalar loop's glibc `expf` made the CPU activations 0.15-0.4x
// of PyTorch's (PERFORMANCE.md, "The CPU backend"); here each lane computes its exp in
// registers:
//
// exp(x) = 2^n e^r, n = x / ln 2 rounded, r = x - n ln 2 (Cody-Waite: ln 2 in two parts),
// |r| <= ln 2 / 2, e^r by its Taylor series to degree 7 (truncation below 2^-27 relative), and
// 2^n as the product of two powers of two, each normal for n in [-150, 128], so that results in
// the denormal range round once. x > 88.7228317 (just below ln FLT_MAX) gives +inf, x < -104
// gives +0 and NaN gives NaN, as `expf`; elsewhere within about 2 ulps of it. The rest of each
// formula is the scalar one's (GCC may fuse a multiply and an add of it into an FMA): the
// results differ from the scalar loop's by a few fp32 ulps at most, far below a 16-bit
// rounding. The erf GELU stays scalar.
//
// The ISA is chosen at run time (simd.h: LTX_CPU_SIMD). Elsewhere than x86-64 with GCC or
// Clang: the scalar loop.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/activation_math.h"
#include "ltx_kernels_cpu/simd.h"

namespace ltx {
namespace cpu {

#if defined(LTX_CPU_SIMD_X86)
namespace simd {

// The functions below are always inlined into the target-specific spans, where GCC's generic
// vectors (simd.h) compile to that ISA's instructions.
template <typename V>
using IntOf = typename Lanes<V>::I;

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo; n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kRound = 12582912.f;    // 1.5 * 2^23: (v + kRound) - kRound rounds v
constexpr float kExpMax = 88.7228317f;
constexpr float kExpMin = -104.f;

template <typename V>
__attribute__((always_inline)) inline V splat(float v) {
  return V{} + v;
}

template <typename V>
__attribute__((always_inline)) inline V exp_v(const V& x) {
  using VI = IntOf<V>;
  const V lo = splat<V>(kExpMin), hi = splat<V>(kExpMax);
  const V xc = x < lo ? lo : (x > hi ? hi : x);  // NaN lanes stay NaN: replaced below
  const V n = (xc * kLog2e + kRound) - kRound;
  V r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  V p = splat<V>(1.f / 5040.f);
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const VI ni = __builtin_convertvector(n, VI);
  const VI n1 = ni >> 1;
  const VI n2 = ni - n1;
  const V e = p * (V)((n1 + 127) << 23) * (V)((n2 + 127) << 23);  // bit casts: 2^n1, 2^n2
  V out = x > hi ? splat<V>(__builtin_inff()) : e;
  out = x < lo ? V{} : out;
  return x != x ? x : out;
}

// act(x) = x / (1 + exp(-z)), z = x (SiLU) or the tanh GELU's 2u.
template <Act A, typename V>
__attribute__((always_inline)) inline V act_v(const V& x) {
  V z = x;
  if constexpr (A == Act::kGeluTanh) z = x * (kGeluTanhC1 + kGeluTanhC3 * (x * x));
  return x / (1.f + exp_v(-z));
}

// act(a), or the gated formula with the second operand b.
template <Act A, bool GATED, typename V>
__attribute__((always_inline)) inline V act_pair(const V& a, const V& b) {
  if constexpr (!GATED) {
    return act_v<A>(a);
  } else if constexpr (A == Act::kSilu) {
    return act_v<A>(a) * b;  // silu_and_mul, silu_mul: silu(a) * b
  } else {
    return a * act_v<A>(b);  // geglu: a * gelu(b)
  }
}

// The first n - n % W elements (W lanes); returns how many.
template <Act A, bool GATED, typename V, typename T>
__attribute__((always_inline)) inline int64_t act_span(T* out, const T* x, const T* x2,
                                                       int64_t n) {
  constexpr int64_t W = sizeof(V) / sizeof(float);
  const int64_t m = n - n % W;
  for (int64_t i = 0; i < m; i += W) {
    const V a = load_floats<V>(x + i);
    store_floats(out + i, act_pair<A, GATED>(a, GATED ? load_floats<V>(x2 + i) : a));
  }
  return m;
}

template <Act A, bool GATED, typename T>
__attribute__((target("avx512f"))) int64_t act_span_avx512(T* out, const T* x, const T* x2,
                                                           int64_t n) {
  return act_span<A, GATED, F16>(out, x, x2, n);
}

template <Act A, bool GATED, typename T>
__attribute__((target("avx2,fma"))) int64_t act_span_avx2(T* out, const T* x, const T* x2,
                                                          int64_t n) {
  return act_span<A, GATED, F8>(out, x, x2, n);
}

// The same for fp16 (bits), whose conversion intrinsics need each ISA's own loop.
template <Act A, bool GATED>
__attribute__((target("avx512f"))) int64_t act_span_fp16_avx512(uint16_t* out,
                                                                const uint16_t* x,
                                                                const uint16_t* x2, int64_t n) {
  const int64_t m = n - n % 16;
  for (int64_t i = 0; i < m; i += 16) {
    const F16 a = fp16_to_floats_avx512(x + i);
    floats_to_fp16_avx512(out + i,
                          act_pair<A, GATED>(a, GATED ? fp16_to_floats_avx512(x2 + i) : a));
  }
  return m;
}

template <Act A, bool GATED>
__attribute__((target("avx2,fma,f16c"))) int64_t act_span_fp16_avx2(uint16_t* out,
                                                                   const uint16_t* x,
                                                                   const uint16_t* x2,
                                                                   int64_t n) {
  const int64_t m = n - n % 8;
  for (int64_t i = 0; i < m; i += 8) {
    const F8 a = fp16_to_floats_avx2(x + i);
    floats_to_fp16_avx2(out + i, act_pair<A, GATED>(a, GATED ? fp16_to_floats_avx2(x2 + i) : a));
  }
  return m;
}

}  // namespace simd
#endif  // LTX_CPU_SIMD_X86

// out[i] = act(x[i]) or gated_act(x[i], x2[i]) for n values of T (float, bf16 or fp16), rounded
// once to T: loaded, computed and stored in vector registers where simd_isa() has them (not for
// the erf GELU), the scalar formulas for the rest.
template <Act A, bool GATED, typename T>
inline void act_span_of(T* out, const T* x, const T* x2, int64_t n) {
  static_assert(std::is_same_v<T, float> || kIs16Bit<T>);
  int64_t done = 0;
#if defined(LTX_CPU_SIMD_X86)
  if constexpr (A != Act::kGeluErf && std::is_same_v<T, c10::Half>) {
    auto* o = reinterpret_cast<uint16_t*>(out);
    const auto* a = reinterpret_cast<const uint16_t*>(x);
    const auto* b = reinterpret_cast<const uint16_t*>(x2);
    done = simd_span([&] { return simd::act_span_fp16_avx512<A, GATED>(o, a, b, n); },
                     [&] { return simd::act_span_fp16_avx2<A, GATED>(o, a, b, n); });
  } else if constexpr (A != Act::kGeluErf) {
    done = simd_span([&] { return simd::act_span_avx512<A, GATED>(out, x, x2, n); },
                     [&] { return simd::act_span_avx2<A, GATED>(out, x, x2, n); });
  }
#endif
  for (int64_t i = done; i < n; ++i) {
    if constexpr (GATED) {
      out[i] = static_cast<T>(gated_act<A, false>(static_cast<float>(x[i]),
                                                  static_cast<float>(x2[i])));
    } else {
      out[i] = static_cast<T>(act<A, false>(static_cast<float>(x[i])));  // x2 may be null
    }
  }
}

}  // namespace cpu
}  // namespace ltx
