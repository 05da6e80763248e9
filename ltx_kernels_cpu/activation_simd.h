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
// rounding. The erf GELU (geglu's approximate="none") takes its exp's argument exactly (below).
//
// The ISA is chosen at run time (simd.h: LTX_CPU_SIMD). Elsewhere than x86-64 with GCC or
// Clang: the scalar loop.
#pragma once

#include <algorithm>
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

// e^r for |r| <= ln 2 / 2: its Taylor series to degree 7.
template <typename V>
__attribute__((always_inline)) inline V exp_reduced(const V& r) {
  V p = splat<V>(1.f / 5040.f);
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  return p * r + 1.f;
}

// exp(x + tail), tail a small correction to x (|tail| <= 1; 0 by default, which gives the
// same bits as exp(x)), added after the exact reduction step, so that x + tail need not be
// representable: the erf GELU's exp(-x^2 / 2) from x^2's exact split.
template <typename V>
__attribute__((always_inline)) inline V exp_v(const V& x, const V& tail = V{}) {
  using VI = IntOf<V>;
  const V lo = splat<V>(kExpMin), hi = splat<V>(kExpMax);
  const V xc = x < lo ? lo : (x > hi ? hi : x);  // NaN lanes stay NaN: replaced below
  const V n = (xc * kLog2e + kRound) - kRound;
  V r = xc - n * kLn2Hi;
  r = r + tail;
  r = r - n * kLn2Lo;
  const V p = exp_reduced(r);
  const VI ni = __builtin_convertvector(n, VI);
  const VI n1 = ni >> 1;
  const VI n2 = ni - n1;
  const V e = p * (V)((n1 + 127) << 23) * (V)((n2 + 127) << 23);  // bit casts: 2^n1, 2^n2
  V out = x > hi ? splat<V>(__builtin_inff()) : e;
  out = x < lo ? V{} : out;
  return x != x ? x : out;
}

// The erf GELU: the scalar formula (activation_math.h, gelu_erf: erfc(|z|) = exp(-x^2 / 2) t Q(t)
// with the same Q, Phi = 1 - erfc / 2 for x > 0, erfc / 2 otherwise), with exp_v and its exact
// argument: x = xh + xl with xh the 12 high bits of |x|'s significand, x^2 = xh^2 + xl (x + xh)
// with xh^2 exact, the second term passed to exp_v as its tail. Within 6.3 fp32 ulps of the exact
// x * Phi(x) wherever Phi is normal (x > -13; PERFORMANCE.md; the scalar loop: 7.33). |x| is
// clamped as there, so +-inf, NaN and +-0 give the scalar loop's results.
template <typename V>
__attribute__((always_inline)) inline V gelu_erf_v(const V& x) {
  using VI = IntOf<V>;
  const V ax = (V)((VI)x & 0x7FFFFFFF);
  const V xc = ax < kGeluErfClamp ? ax : splat<V>(kGeluErfClamp);  // NaN lanes: finite here
  const V xh = (V)((VI)xc & -4096);                // the 12 high bits of the significand
  const V e = exp_v(-0.5f * (xh * xh), -0.5f * ((xc - xh) * (xc + xh)));
  return gelu_erf_from(x, e, 1.f / (1.f + kErfcT * xc));
}

// 1 + exp(x), the sigmoid's denominator: the same bits as 1 + exp_v(x), in fewer
// instructions. Below x = -87 exp(x) < 2^-125 vanishes beside the 1, so x is clamped there,
// and 2^n (n >= -126) is one factor, 2 * 2^(n - 1), normal up to n = 128 (exp_v's two factors
// are for its denormal results); a NaN x gives a NaN polynomial, so needs no select.
template <typename V>
__attribute__((always_inline)) inline V one_plus_exp_v(const V& x) {
  using VI = IntOf<V>;
  const V hi = splat<V>(kExpMax);
  const V xc = x < -87.f ? splat<V>(-87.f) : (x > hi ? hi : x);
  const V n = (xc * kLog2e + kRound) - kRound;
  V r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  const V p = exp_reduced(r);
  const V e = (p + p) * (V)((__builtin_convertvector(n, VI) + 126) << 23);  // 2^(n - 1)
  return 1.f + (x > hi ? splat<V>(__builtin_inff()) : e);
}

// act(x) = x / (1 + exp(-z)), z = x (SiLU) or the tanh GELU's 2u; the erf GELU above.
template <Act A, typename V>
__attribute__((always_inline)) inline V act_v(const V& x) {
  if constexpr (A == Act::kGeluErf) {
    return gelu_erf_v(x);
  } else {
    V z = x;
    if constexpr (A == Act::kGeluTanh) z = x * (kGeluTanhC1 + kGeluTanhC3 * (x * x));
    return x / one_plus_exp_v(-z);
  }
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

// The first n - n % W elements (W lanes: 16 / 8) of T (float, bf16 or fp16); returns how many.
template <Act A, bool GATED, typename T>
__attribute__((target("avx512f"))) int64_t act_span_avx512(T* out, const T* x, const T* x2,
                                                           int64_t n) {
  const int64_t m = n - n % 16;
  for (int64_t i = 0; i < m; i += 16) {
    const F16 a = load_lanes_avx512(x + i);
    store_lanes_avx512(out + i, act_pair<A, GATED>(a, GATED ? load_lanes_avx512(x2 + i) : a));
  }
  return m;
}

template <Act A, bool GATED, typename T>
__attribute__((target("avx2,fma,f16c"))) int64_t act_span_avx2(T* out, const T* x, const T* x2,
                                                               int64_t n) {
  const int64_t m = n - n % 8;
  for (int64_t i = 0; i < m; i += 8) {
    const F8 a = load_lanes_avx2(x + i);
    store_lanes_avx2(out + i, act_pair<A, GATED>(a, GATED ? load_lanes_avx2(x2 + i) : a));
  }
  return m;
}

}  // namespace simd

// The vector part of act_span_of: the first n - n % W elements, W the lanes of simd_isa()'s
// ISA (8 or 16); returns how many (0 without vectors).
template <Act A, bool GATED, typename T>
inline int64_t act_simd_span(T* out, const T* x, const T* x2, int64_t n) {
  return simd_span([&] { return simd::act_span_avx512<A, GATED>(out, x, x2, n); },
                   [&] { return simd::act_span_avx2<A, GATED>(out, x, x2, n); });
}
#endif  // LTX_CPU_SIMD_X86

// out[i] = act(x[i]) or gated_act(x[i], x2[i]) for n values of T (float, bf16 or fp16), rounded
// once to T: loaded, computed and stored in vector registers where simd_isa() has them, the
// last n % W values too (copied into a zero-padded vector's worth, so that every element of a
// row gets the same formula, rounded the same way); the scalar formulas without vectors.
template <Act A, bool GATED, typename T>
inline void act_span_of(T* out, const T* x, const T* x2, int64_t n) {
  static_assert(std::is_same_v<T, float> || kIs16Bit<T>);
  int64_t done = 0;
#if defined(LTX_CPU_SIMD_X86)
  constexpr int kPad = 16;  // a whole vector in either ISA
  done = act_simd_span<A, GATED>(out, x, x2, n);
  if (done < n && n - done <= kPad) {  // the tail, or a short span (none without vectors)
    T a[kPad]{}, b[kPad]{}, o[kPad];
    std::copy(x + done, x + n, a);
    if constexpr (GATED) std::copy(x2 + done, x2 + n, b);
    if (act_simd_span<A, GATED>(o, a, b, kPad) == kPad) {
      std::copy(o, o + (n - done), out + done);
      done = n;
    }
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
