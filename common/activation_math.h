// Activation formulas in fp32, shared by the CPU kernels and (compiled by nvcc) the CUDA kernels,
// so that both backends evaluate the same expression and round only at the store.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define LTX_ACT_FN __host__ __device__ __forceinline__
#else
#define LTX_ACT_FN inline __attribute__((always_inline))  // also into the CPU's ISA-specific spans
#endif

namespace ltx {

enum class Act : int {
  kGeluTanh,  // F.gelu(x, approximate="tanh")
  kGeluErf,   // F.gelu(x) (approximate="none")
  kSilu,      // F.silu(x)
};

// x / (1 + exp(-z)) = x * sigmoid(z), with one rounding fewer than the product.
// FAST (CUDA, 16-bit outputs only): __expf and __fdividef, within a few fp32 ulps (about 1e-6
// relative in the range where the result is not negligible), far below one 16-bit rounding.
// Otherwise (fp32 outputs, and always on the CPU) the accurate expf and an IEEE division.
// Limits: z -> -inf gives exp = inf and x / inf = +-0; z -> +inf gives x.
template <bool FAST>
LTX_ACT_FN float mul_sigmoid(float x, float z) {
#if defined(__CUDA_ARCH__)
  if constexpr (FAST) {
    return __fdividef(x, 1.f + __expf(-z));
  } else {
    return x / (1.f + expf(-z));
  }
#else
  return x / (1.f + expf(-z));
#endif
}

// tanh GELU: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3) (PyTorch's formula).
// Evaluated as x * sigmoid(2u), the same function (0.5 (1 + tanh(u)) = sigmoid(2u)): one exp
// instead of tanh, and no cancellation in 1 + tanh(u) for negative x.
constexpr float kGeluTanhC1 = 1.5957691216057308f;   // 2 sqrt(2/pi)
constexpr float kGeluTanhC3 = 0.07135481627260025f;  // 2 sqrt(2/pi) * 0.044715

// erf GELU: x Phi(x), Phi(x) = erfc(-z) / 2, z = x / sqrt(2). PyTorch's 0.5 x (1 + erf(z)) is
// the same function, but for negative x the 1 + erf cancels: its error is ~1e-7 absolute,
// thousands of fp32 ulps at x in [-4, -1.2) and no correct bit below x = -5.5 (where it is 0;
// tools/gelu_erf_accuracy.py measures it). One formula for every x, on both backends (the CPU's
// vector form in ltx_kernels_cpu/activation_simd.h shares its polynomial), with a = |z|:
//   erfc(a) = exp(-a^2) * t * Q(t),  t = 1 / (1 + 0.4 a),  Q of degree 10
//   (tools/fit_gelu_erf.py derives Q: t Q(t) within 2.4e-7 relative of erfc(a) exp(a^2));
//   Phi = 1 - erfc(a) / 2 for x > 0, erfc(a) / 2 otherwise,
// so the negative tail has no cancellation, and no branch: one exp and one reciprocal, about the
// cost of CUDA's erff (erfcf costs twice that and made the CUDA GEGLU 11-17% slower than the
// memory traffic; PERFORMANCE.md, run HH). exp's argument -x^2 / 2 is taken exactly: h = x^2
// rounded, its error l = fmaf(|x|, |x|, -h) exact, exp(-(h + l) / 2) = exp(-h / 2) (1 - l / 2)
// (l <= 2^-24 h: the dropped terms are below 2^-40); rounding x^2 alone would cost up to ~x^2 / 2
// ulps of erfc. Within 7.4 fp32 ulps of the exact x Phi(x) wherever Phi is normal (x > -13;
// measured: CUDA 7.39, the CPU scalar loop 7.33, the CPU vectors 6.3).
// FAST (CUDA, 16-bit outputs): __expf of the rounded -h / 2 and an approximate reciprocal
// (relative error ~1e-5 at x = -14, 2^-9 would be one bf16 rounding); __expf flushes below
// 2^-126, so outputs for x < -13.2 are 0 there instead of denormal (F.gelu is 0 below -5.5).
// |x| is clamped where exp(-x^2 / 2) is 0 in fp32 (14.8), so +-inf give PyTorch's inf and NaN
// (-inf * 0), NaN stays NaN through the final product, and Phi(0) is exactly 1/2 (Q(1) sums to
// 1 in fp32), so gelu(x) = x / 2 bit for bit near 0, as PyTorch.
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kErfcT = 0.4f * kSqrtHalf;  // t = 1 / (1 + kErfcT |x|)
constexpr float kGeluErfClamp = 14.8f;      // exp(-14.8^2 / 2) < 2^-149

// t Q(t) ~ erfc(a) exp(a^2), for a float or (on the CPU) a vector of floats.
template <typename V>
LTX_ACT_FN V erfc_scaled(V t) {
  V q = t * -0.021154765f + 0.0938881561f;
  q = q * t + -0.117985062f;
  q = q * t + -0.0328048281f;
  q = q * t + 0.109681249f;
  q = q * t + -0.0111700082f;
  q = q * t + 0.157548845f;
  q = q * t + 0.161467746f;
  q = q * t + 0.209333554f;
  q = q * t + 0.225512594f;
  return t * (q * t + 0.225682497f);
}

// x Phi(x) from e = exp(-x^2 / 2) and t = 1 / (1 + kErfcT |x|).
template <typename V>
LTX_ACT_FN V gelu_erf_from(V x, V e, V t) {
  const V half_erfc = 0.5f * (e * erfc_scaled(t));
  return x * (x > 0.f ? 1.f - half_erfc : half_erfc);
}

template <bool FAST>
LTX_ACT_FN float gelu_erf(float x) {
  const float a = fminf(fabsf(x), kGeluErfClamp);  // NaN: 14.8 here, NaN from x at the end
  const float h = a * a;
#if defined(__CUDA_ARCH__)
  if constexpr (FAST) {
    return gelu_erf_from(x, __expf(-0.5f * h), __fdividef(1.f, 1.f + kErfcT * a));
  }
#endif
  float e = expf(-0.5f * h);
  e = fmaf(e, -0.5f * fmaf(a, a, -h), e);
  return gelu_erf_from(x, e, 1.f / (1.f + kErfcT * a));
}

template <Act A, bool FAST>
LTX_ACT_FN float act(float x) {
  if constexpr (A == Act::kGeluTanh) {
    return mul_sigmoid<FAST>(x, x * (kGeluTanhC1 + kGeluTanhC3 * (x * x)));
  } else if constexpr (A == Act::kGeluErf) {
    return gelu_erf<FAST>(x);
  } else {
    return mul_sigmoid<FAST>(x, x);  // SiLU: x / (1 + exp(-x)), as PyTorch
  }
}

#if defined(__CUDACC__)
// tanh GELU with one special-function instruction per element instead of two: 0.5 x (1 + t),
// t = tanh.approx.f32(u) (relative error about 2^-11), where the sigmoid form above needs ex2 and
// rcp. At 16 such instructions per clock per SM the two-instruction form is as slow as the
// memory traffic of the elementwise op on an H200 (PERFORMANCE.md). Used for bf16 outputs of
// the elementwise op only: their rounding (2^-9 relative) dwarfs the approximation, while
// fp16 (2^-11) and the gated ops (the error is multiplied by the other half) keep the exact
// form. |u| > 9 saturates exactly (tanh(9) is 1 in fp32), so tails and +-inf stay exact.
__device__ __forceinline__ float gelu_tanh_1mufu(float x) {
  const float u = x * (0.5f * kGeluTanhC1 + 0.5f * kGeluTanhC3 * (x * x));
  float t;
  if (fabsf(u) > 9.f) {
    t = copysignf(1.f, u);
  } else {
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  }
  return 0.5f * x * (1.f + t);
}
#endif

// The gated ops on the two halves of a [..., 2H] row, value `a` = x[..., :H] and `b` =
// x[..., H:]: GEGLU (diffusers' order) a * gelu(b); silu_and_mul (vLLM's order) silu(a) * b.
template <Act A, bool FAST>
LTX_ACT_FN float gated_act(float a, float b) {
  if constexpr (A == Act::kSilu) {
    return act<A, FAST>(a) * b;
  } else {
    return a * act<A, FAST>(b);
  }
}

}  // namespace ltx
