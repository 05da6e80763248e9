// Vector types and conversions for the CUDA kernels. No torch headers: device code only.
//
// Math is always in fp32. 16-bit values are converted on load and rounded once on store.
// Packed bf16 conversions need sm_80; sm_75 (T4) takes the scalar conversion path, which the
// cuda_bf16 header implements with integer operations.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ltx {

// N values of T, aligned so that one load or store is a single (or paired) 16-byte access.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Round a float to T and back: the value PyTorch would see after `.to(T)`.
template <typename T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

// N values of T at p (aligned to the vector size when N > 1), as stored.
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, N>*>(p);
}

// How loads of data that a kernel reads once are issued (load_vec_once; copy16_async<true> in
// stage.cuh): rows of x, y, the residual; not weights, tables or modulation rows, which many
// rows share. 0: plain loads. 1: ld.global.cs (evict-first in L1 and L2). 2: L1::no_allocate
// with an L2 evict-first policy (sm_80+; plain below). The intent: evict-first lines are the
// first an L2 set gives up, so a kernel's clean, consumed input lines would make room for its
// outputs instead of lines another kernel left dirty (a DRAM write each). Measured (run T,
// change 51; 2 against 0): level for the norms and AdaLN, 2-5% slower for the activations,
// 1-4% faster for the norm + rope kernels. Set at build time (tools/build.py -D
// LTX_LOAD_ONCE=N), or by a source before its includes: rms_norm_rope.cu takes 2, the rest 0.
#ifndef LTX_LOAD_ONCE
#define LTX_LOAD_ONCE 0
#endif

// The L2 evict-first policy for LTX_LOAD_ONCE == 2 (and the staged copies).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

// The L2 evict-last policy: lines a kernel reads again soon (load_vec_evict<true>).
__device__ __forceinline__ uint64_t l2_evict_last_policy() {
  uint64_t policy = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}

// N values of T at p, a global-memory address, read once by this kernel (LTX_LOAD_ONCE).
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_vec_once(const T* p) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
#if LTX_LOAD_ONCE == 1
  if constexpr (kBytes == 16) {
    const uint4 w = __ldcs(reinterpret_cast<const uint4*>(p));
    Vec<T, N> v;
    memcpy(&v, &w, 16);
    return v;
  } else if constexpr (kBytes == 8) {
    const uint2 w = __ldcs(reinterpret_cast<const uint2*>(p));
    Vec<T, N> v;
    memcpy(&v, &w, 8);
    return v;
  }
#elif LTX_LOAD_ONCE == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kBytes == 16) {
    uint32_t w[4];
    asm volatile(
        "ld.global.L1::no_allocate.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
        : "l"(p), "l"(l2_evict_first_policy()));
    Vec<T, N> v;
    memcpy(&v, w, 16);
    return v;
  }
#endif
  return load_vec<T, N>(p);
}

// A 16-byte vector of T at p, a global-memory address, loaded by an instruction the compiler
// neither drops nor merges with another load of p: rms_norm's two-pass path reads each row
// twice and wants the second read issued (from the L2), not the first one's registers kept.
template <typename T>
__device__ __forceinline__ Vec<T, 16 / sizeof(T)> load_vec_issued(const T* p) {
  uint32_t w[4];
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p));
  Vec<T, 16 / sizeof(T)> v;
  memcpy(&v, w, 16);
  return v;
}

// A 16-byte vector of T at p with the cache priorities torch.compile's kernels give their
// two-pass reductions (Triton's `eviction_policy`; inductor's RMSNorm at D = 8192):
// EVICT_LAST for the first read of a row and for the weight (`ld.global.L1::evict_last` under
// an L2 evict-last policy: SASS `LDG.E.EL.128`), !EVICT_LAST for the row's second and last
// read (`L1::evict_first`, L2 evict-first: `LDG.E.EF.128`). Like load_vec_issued, never dropped
// or merged with another load of p. sm_80+ (the L2 policy); a plain load below.
template <bool EVICT_LAST, typename T>
__device__ __forceinline__ Vec<T, 16 / sizeof(T)> load_vec_evict(const T* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t w[4];
  if constexpr (EVICT_LAST) {
    asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p), "l"(l2_evict_last_policy()));
  } else {
    asm volatile("ld.global.L1::evict_first.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p), "l"(l2_evict_first_policy()));
  }
  Vec<T, 16 / sizeof(T)> v;
  memcpy(&v, w, 16);
  return v;
#else
  return load_vec_issued(p);
#endif
}

template <typename T, int N>
__device__ __forceinline__ void to_floats(const Vec<T, N>& v, float (&f)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = to_float(v.v[i]);
}

// Loads N values of T at p (aligned to the vector size when N > 1) into floats.
template <typename T, int N>
__device__ __forceinline__ void load_floats(const T* p, float (&f)[N]) {
  to_floats(load_vec<T, N>(p), f);
}

// Stores N values of T at p, a global-memory address aligned to the vector size, in one
// instruction. A plain store of the Vec struct (or of a uint4 made from it) reached PTX as four
// st.global.u32 in the streaming kernels (activation, gated_residual: four L1 -> L2 requests
// per 16 bytes; run M), while the norms' stores stayed st.global.v4; so 16- and 8-byte vectors
// are stored with st.global.v4.b32 / v2.b32. The "memory" clobber keeps the compiler from
// moving other memory accesses across the store, as it would not move them across a plain
// store to p that may alias them (out may be x).
template <typename T, int N>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, N>& v) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  if constexpr (kBytes == 16) {
    uint32_t w[4];
    memcpy(w, &v, 16);
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
  } else if constexpr (kBytes == 8) {
    uint32_t w[2];
    memcpy(w, &v, 8);
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]) : "memory");
  } else {
    *reinterpret_cast<Vec<T, N>*>(p) = v;
  }
}

// N floats rounded to T (packed bf16 pairs on sm_80+).
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> round_vec(const float (&f)[N]) {
  Vec<T, N> v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr bool kPacked = std::is_same_v<T, __nv_bfloat16> && N % 2 == 0;
#else
  constexpr bool kPacked = false;
#endif
  if constexpr (kPacked) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const __nv_bfloat162 pair = __floats2bfloat162_rn(f[i], f[i + 1]);
      v.v[i] = pair.x;
      v.v[i + 1] = pair.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = from_float<T>(f[i]);
  }
  return v;
}

// Rounds N floats to T and stores them at p, in global memory (aligned to the vector size when
// N > 1).
template <typename T, int N>
__device__ __forceinline__ void store_floats(T* p, const float (&f)[N]) {
  store_vec<T, N>(p, round_vec<T, N>(f));
}

// The same into shared memory (the staged rows), where the plain store is one STS.128.
template <typename T, int N>
__device__ __forceinline__ void store_floats_shared(T* p, const float (&f)[N]) {
  *reinterpret_cast<Vec<T, N>*>(p) = round_vec<T, N>(f);
}

// 16 bytes of T: 4 floats or 8 halves / bf16s.
template <typename T>
constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));

inline bool is_aligned(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

}  // namespace ltx
