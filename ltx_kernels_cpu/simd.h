// x86-64 vector code for the CPU kernels: the ISA chosen at run time (AVX-512F, 16 float lanes,
// or AVX2 + FMA + F16C, 8 lanes), GCC's generic vector types for both widths, and the 16-bit
// conversions every kernel does at its loads and stores: bf16 and fp16 to floats (exact) and
// floats to bf16 / fp16 rounded to nearest even, bit for bit c10's conversions (a NaN becomes
// c10's NaN: 0x7FC0 in bf16, the sign and 0x7E00 in fp16). c10's own conversions are scalar
// code; fp16 through them cost the activations ~6x PyTorch's time (run X, PERFORMANCE.md "The
// CPU backend"). fp16 uses the F16C / AVX-512F conversion instructions; bf16 is integer
// arithmetic on the bits.
//
// LTX_CPU_SIMD [unset: the widest the CPU has; 0: scalar loops, 1: at most AVX2, 2: at most
// AVX-512], read once. Elsewhere than x86-64 with GCC or Clang: scalar loops.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LTX_CPU_SIMD_X86 1
#include <immintrin.h>
#endif

namespace ltx {
namespace cpu {

enum class SimdIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

inline SimdIsa simd_isa() {
#if defined(LTX_CPU_SIMD_X86)
  static const SimdIsa isa = [] {
    int have = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")) {
      have = 1;
    }
    if (__builtin_cpu_supports("avx512f")) have = 2;
    const char* v = std::getenv("LTX_CPU_SIMD");
    const int want = v != nullptr ? std::atoi(v) : have;
    return static_cast<SimdIsa>(want < 0 ? 0 : (want < have ? want : have));
  }();
  return isa;
#else
  return SimdIsa::kScalar;
#endif
}

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, c10::BFloat16> || std::is_same_v<T, c10::Half>;

#if defined(LTX_CPU_SIMD_X86)
namespace simd {

// The vector types' signatures draw GCC's ABI note for vectors wider than the translation
// unit's baseline ISA (-Wpsabi), which does not apply here: every function taking them is
// inlined into a target-specific one. GCC reports it at the end of the translation unit, so
// it stays off for the rest of every file that includes this one (no pop).
#pragma GCC diagnostic ignored "-Wpsabi"

using F16 = float __attribute__((vector_size(64)));
using I16 = int32_t __attribute__((vector_size(64)));
using U16 = uint32_t __attribute__((vector_size(64)));
using H16 = uint16_t __attribute__((vector_size(32)));  // 16 16-bit lanes
using S16 = int16_t __attribute__((vector_size(32)));
using F8 = float __attribute__((vector_size(32)));
using I8 = int32_t __attribute__((vector_size(32)));
using U8 = uint32_t __attribute__((vector_size(32)));
using H8 = uint16_t __attribute__((vector_size(16)));  // 8 16-bit lanes
using S8 = int16_t __attribute__((vector_size(16)));

// The integer and 16-bit vectors of a float vector's lanes.
template <typename V>
struct Lanes;
template <>
struct Lanes<F16> {
  using I = I16;
  using U = U16;
  using H = H16;
  using S = S16;
};
template <>
struct Lanes<F8> {
  using I = I8;
  using U = U8;
  using H = H8;
  using S = S8;
};

template <typename V>
__attribute__((always_inline)) inline V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <typename V>
__attribute__((always_inline)) inline void store(void* p, const V& v) {
  std::memcpy(p, &v, sizeof(V));
}

// bf16 bits -> floats: the bits in the upper half of each float.
template <typename V>
__attribute__((always_inline)) inline V bf16_to_floats(const uint16_t* p) {
  using L = Lanes<V>;
  return (V)(__builtin_convertvector(load<typename L::H>(p), typename L::U) << 16);
}

// floats -> bf16 bits in the low half of each lane, rounded to nearest even; NaN -> 0x7FC0
// (c10::BFloat16).
template <typename V>
__attribute__((always_inline)) inline typename Lanes<V>::U bf16_bits(const V& f) {
  using U = typename Lanes<V>::U;
  const U b = (U)f;
  const U r = (b + (((b >> 16) & 1) + 0x7FFFu)) >> 16;
  return f != f ? 0x7FC0u : r;
}

// NaN lanes -> the float's sign | 0x7FC00000 (a quiet NaN with only the payload's top bit),
// which the conversion instructions narrow to the sign | 0x7E00 of c10::Half's NaN (they keep
// the top 10 bits of any other payload); done on the floats, where it is a compare and one
// masked bit operation, rather than on the 16-bit results (AVX-512F has no 16-bit blend).
template <typename V>
__attribute__((always_inline)) inline V fp16_canonical_nan(const V& f) {
  using U = typename Lanes<V>::U;
  return f != f ? (V)(((U)f & 0x80000000u) | 0x7FC00000u) : f;
}

// One vector's worth of T (float, bf16 or fp16) as floats, and floats rounded back to T, for
// the loops of each ISA: 16 lanes under AVX-512F, 8 under AVX2 + F16C. They are templates with
// the ISA's target attribute, because intrinsics inline only into functions compiled for their
// ISA (a template without it, shared by both widths, could not call them): fp16 by the
// conversion instructions, bf16 by integer arithmetic on the bits, narrowed 32 -> 16 bits by
// AVX-512F's vpmovdw (GCC 12 turns a vector conversion into two ands, a pack and a permute).
template <typename T>
__attribute__((target("avx512f"), always_inline)) inline F16 load_lanes_avx512(const T* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  if constexpr (std::is_same_v<T, float>) {
    return load<F16>(p);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    return bf16_to_floats<F16>(h);
  } else {
    static_assert(std::is_same_v<T, c10::Half>);
    return (F16)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
  }
}

template <typename T>
__attribute__((target("avx512f"), always_inline)) inline void store_lanes_avx512(T* p,
                                                                              const F16& f) {
  if constexpr (std::is_same_v<T, float>) {
    store(p, f);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    store(p, (H16)_mm512_cvtepi32_epi16((__m512i)bf16_bits(f)));
  } else {
    static_assert(std::is_same_v<T, c10::Half>);
    store(p, (H16)_mm512_cvtps_ph((__m512)fp16_canonical_nan(f),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

template <typename T>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline F8 load_lanes_avx2(const T* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  if constexpr (std::is_same_v<T, float>) {
    return load<F8>(p);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    return bf16_to_floats<F8>(h);
  } else {
    static_assert(std::is_same_v<T, c10::Half>);
    return (F8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
  }
}

template <typename T>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void store_lanes_avx2(T* p,
                                                                                 const F8& f) {
  if constexpr (std::is_same_v<T, float>) {
    store(p, f);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    store(p, __builtin_convertvector(bf16_bits(f), H8));
  } else {
    static_assert(std::is_same_v<T, c10::Half>);
    store(p, (H8)_mm256_cvtps_ph((__m256)fp16_canonical_nan(f),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

// The first n - n % W elements (W lanes) of each conversion; each returns how many.
template <typename T>
__attribute__((target("avx512f"))) inline int64_t widen_span_avx512(const T* src, float* dst,
                                                                     int64_t n) {
  const int64_t m = n - n % 16;
  for (int64_t i = 0; i < m; i += 16) store(dst + i, load_lanes_avx512(src + i));
  return m;
}

template <typename T>
__attribute__((target("avx512f"))) inline int64_t narrow_span_avx512(const float* src, T* dst,
                                                                      int64_t n) {
  const int64_t m = n - n % 16;
  for (int64_t i = 0; i < m; i += 16) store_lanes_avx512(dst + i, load<F16>(src + i));
  return m;
}

template <typename T>
__attribute__((target("avx2,fma,f16c"))) inline int64_t widen_span_avx2(const T* src,
                                                                        float* dst, int64_t n) {
  const int64_t m = n - n % 8;
  for (int64_t i = 0; i < m; i += 8) store(dst + i, load_lanes_avx2(src + i));
  return m;
}

template <typename T>
__attribute__((target("avx2,fma,f16c"))) inline int64_t narrow_span_avx2(const float* src,
                                                                         T* dst, int64_t n) {
  const int64_t m = n - n % 8;
  for (int64_t i = 0; i < m; i += 8) store_lanes_avx2(dst + i, load<F8>(src + i));
  return m;
}

}  // namespace simd
#endif  // LTX_CPU_SIMD_X86

// The vector part of a span: `avx512()` or `avx2()` as simd_isa() says (each returns how many
// elements it did), 0 where the CPU or the setting has neither.
template <typename F512, typename F2>
inline int64_t simd_span(const F512& avx512, const F2& avx2) {
  switch (simd_isa()) {
    case SimdIsa::kAvx512:
      return avx512();
    case SimdIsa::kAvx2:
      return avx2();
    default:
      return 0;
  }
}

// dst[i] = float(src[i]) for n values: vectors for bf16 / fp16 where simd_isa() has them.
template <typename T>
inline void widen(const T* src, float* dst, int64_t n) {
  int64_t done = 0;
#if defined(LTX_CPU_SIMD_X86)
  if constexpr (kIs16Bit<T>) {
    done = simd_span([&] { return simd::widen_span_avx512(src, dst, n); },
                     [&] { return simd::widen_span_avx2(src, dst, n); });
  }
#endif
  for (int64_t i = done; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// dst[i] = T(src[i]) for n values, rounded to nearest even: vectors for bf16 / fp16 where
// simd_isa() has them, bit for bit c10's conversion.
template <typename T>
inline void narrow(const float* src, T* dst, int64_t n) {
  int64_t done = 0;
#if defined(LTX_CPU_SIMD_X86)
  if constexpr (kIs16Bit<T>) {
    done = simd_span([&] { return simd::narrow_span_avx512(src, dst, n); },
                     [&] { return simd::narrow_span_avx2(src, dst, n); });
  }
#endif
  for (int64_t i = done; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

}  // namespace cpu
}  // namespace ltx
