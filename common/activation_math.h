// Activation formulas in fp32, shared by the CPU kernels and (compiled by nvcc) the CUDA kernels,
// so that both backends evaluate the same expression and round only at the store.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define LTX_ACT_FN __host__ __device__ __forceinline__
#else
#define LTX_ACT_FN inline
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

// erf GELU: x Phi(x) = 0.5 x erfc(z), z = -x / sqrt(2). PyTorch's 0.5 x (1 + erf(-z)) is the
// same function, but for negative x the 1 + erf cancels: its error is ~1e-7 absolute, thousands
// of fp32 ulps at x in [-4, -1.2) and no correct bit below x = -5.5 (where it is 0); erfc has no
// cancellation (tools/gelu_erf_accuracy.py measures both). What is left is z's rounding, which
// erfc turns into ~2 z^2 ulps (~160 at x = -13): EXACT_Z (fp32 outputs) takes it back by one
// Taylor term, erfc(z + zl) = erfc(z) - zl 2/sqrt(pi) exp(-z^2), with zl the product's exact
// rounding error (fmaf) plus the constant's own (kSqrtHalfLo). |z| >= 10 skips the term
// (erfc is 0 or 2 there, and zl of an infinite x would be NaN), so +-inf give PyTorch's inf
// and NaN, +-0 give +-0, and NaN stays NaN. 16-bit outputs round far above z's error.
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kSqrtHalfLo = 1.2101617e-08f;     // sqrt(1/2) - kSqrtHalf
constexpr float kTwoOverSqrtPi = 1.1283791670955126f;

template <bool EXACT_Z>
LTX_ACT_FN float gelu_erf(float x) {
  const float z = -x * kSqrtHalf;
  float e = erfcf(z);
  if constexpr (EXACT_Z) {
    if (fabsf(z) < 10.f) {
      const float zl = fmaf(-x, kSqrtHalf, -z) - x * kSqrtHalfLo;
      e = fmaf(-zl * kTwoOverSqrtPi, expf(-z * z), e);
    }
  }
  return 0.5f * x * e;
}

template <Act A, bool FAST>
LTX_ACT_FN float act(float x) {
  if constexpr (A == Act::kGeluTanh) {
    return mul_sigmoid<FAST>(x, x * (kGeluTanhC1 + kGeluTanhC3 * (x * x)));
  } else if constexpr (A == Act::kGeluErf) {
    return gelu_erf<!FAST>(x);
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
