// RMSNorm: out = x * rsqrt(mean(x^2) + eps) [* weight], fp32 math, one rounding to the output
// dtype, or two where LlamaRMSNorm rounds (normalized value to x's dtype, then times weight).
//
// One group of G threads normalizes one row; a block holds several groups when rows are short.
// The row stays in registers between the reduction and the write (CHUNKS vectors of VEC
// elements per thread), so x is read from memory once; rows too long for that take a
// streaming path that reads x twice (CHUNKS == 0).
//
// On sm_80+, grids beyond one wave of rows of at most 384 16-byte vectors (D <= 3072 in 16
// bits; 4096 for fused_add_rms_norm) take the staged path instead (common/stage.cuh): the row,
// the residual and the weight copied to shared memory by cp.async, one group of up to 128
// threads per row working from there (where it measured faster: launch_rms_norm).
//
// On sm_90, rms_norm's 16-bit rows of D = 8192 in grids from 64 MiB of x take the two-pass
// path: one row a block of 512 threads holding nothing but the sum across the reduction, the
// row read again (from the L2) for the write (launch_rms_norm_two_pass).
//
// fused_add_rms_norm is the same kernel with ADD: the row is residual + x, rounded to T and
// stored to residual as it is loaded (vLLM / FlashInfer semantics), and the output goes to x.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dense.cuh"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/reduce.cuh"
#include "ltx_kernels_cuda/common/rows.cuh"
#include "ltx_kernels_cuda/common/stage.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

template <typename T, typename W, typename O>
struct RmsNormParams {
  O* out;           // [rows, D] at out_rows (ADD: the same memory as x)
  const T* x;       // [rows, D] at x_rows
  const W* weight;  // [D], or nullptr
  T* residual;      // [rows, D] at res_rows, read and written (ADD only)
  Rows x_rows, out_rows, res_rows;
  int64_t rows;
  int D;
  int group;           // threads per row (G)
  int group_log2;      // log2(G) (staged path: G is a power of two)
  int rows_per_block;  // groups per block
  StageSlot st_w, st_x, st_res;  // staged path: the weight (block-wide), x and residual rows
  float inv_d;         // 1 / D
  float eps;
  bool round_before_weight;  // LlamaRMSNorm: weight * x_normed.to(x.dtype)
};

// One output value: v * inv, rounded to T first with `round_before_weight` (LlamaRMSNorm),
// times the weight `w` when there is one.
template <typename T>
__device__ __forceinline__ float rms_norm_value(float v, float inv, bool round_before_weight,
                                                bool has_w, float w) {
  float n = v * inv;
  if (round_before_weight) n = round_to<T>(n);
  return has_w ? n * w : n;
}

// Writes one 16-byte vector's output to `out`: `v` (x, widened) times `inv`, times the weight
// vector `wv` when HAS_W (wv unread otherwise). The dense and two-pass kernels' write.
template <typename T, typename W, typename O, int VEC, bool HAS_W>
__device__ __forceinline__ void rms_norm_store_vec(O* out, const float (&v)[VEC],
                                                   const Vec<W, VEC>& wv, float inv,
                                                   bool round_before_weight) {
  float w[VEC], y[VEC];
  if constexpr (HAS_W) to_floats(wv, w);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    y[k] = rms_norm_value<T>(v[k], inv, round_before_weight, HAS_W, HAS_W ? w[k] : 0.f);
  }
  store_floats<O, VEC>(out, y);
}

// Writes vector `idx` of the output. PRELOAD: the weight was loaded with the row (wv), else
// it is read here, after the reduction.
template <typename T, typename W, typename O, int VEC, bool PRELOAD>
__device__ __forceinline__ void rms_norm_write(const RmsNormParams<T, W, O>& p, O* out, int idx,
                                               const float (&v)[VEC], float inv,
                                               const Vec<W, VEC>& wv) {
  float y[VEC];
  float w[VEC];
  if (p.weight != nullptr) {
    if constexpr (PRELOAD) {
      to_floats(wv, w);
    } else {
      load_floats<W, VEC>(p.weight + idx * VEC, w);
    }
  }
#pragma unroll
  for (int i = 0; i < VEC; ++i) y[i] = rms_norm_value<T>(v[i], inv, p.round_before_weight,
                                                        p.weight != nullptr, w[i]);
  store_floats<O, VEC>(out + idx * VEC, y);
}

// Loads vector `idx` of the row: x, or with ADD the rounded sum x + residual (read from
// res_in), which is stored to res_out (the residual; res_in is it too, or its staged copy).
template <typename T, int VEC, bool ADD>
__device__ __forceinline__ void rms_norm_load(const T* x, const T* res_in, T* res_out, int idx,
                                              float (&v)[VEC]) {
  load_floats<T, VEC>(x + idx * VEC, v);
  if constexpr (ADD) {
    float r[VEC];
    load_floats<T, VEC>(res_in + idx * VEC, r);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = round_to<T>(v[i] + r[i]);
    store_floats<T, VEC>(res_out + idx * VEC, v);
  }
}

// PRELOAD (cached path only): the weight is loaded together with the row, before the
// reduction, instead of after it. For grids that run in one wave (few rows: decode, small
// batches) the kernel's time is one row's chain of memory round trips, and this takes one out;
// it costs registers (the weight's vectors stay live across the reduction), so larger grids
// keep the default order.
template <typename T, typename W, typename O, int VEC, int CHUNKS, bool ADD, bool PRELOAD>
__global__ void rms_norm_kernel(const RmsNormParams<T, W, O> p) {
  __shared__ float smem[32];
  const int G = p.group;
  const int sub = threadIdx.x / G;  // row within the block: one division by the run-time G
  const int lane = threadIdx.x - sub * G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + sub;
  const bool active = row < p.rows;  // inactive groups still take part in group_sum's barriers
  const T* x = p.x + (active ? p.x_rows.offset(row) : 0);
  O* out = p.out + (active ? p.out_rows.offset(row) : 0);
  T* res = ADD ? p.residual + (active ? p.res_rows.offset(row) : 0) : nullptr;
  const int nvec = p.D / VEC;

  if constexpr (CHUNKS > 0) {
    float v[CHUNKS][VEC];
    float ss = 0.f;
    Vec<W, VEC> wv[PRELOAD ? CHUNKS : 1];
    if constexpr (PRELOAD) {
      if (p.weight != nullptr) {
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
          const int idx = c * G + lane;
          if (active && idx < nvec) wv[c] = load_vec<W, VEC>(p.weight + idx * VEC);
        }
      }
    }
    if constexpr (ADD) {
      // Every chunk's x and residual loaded before the first store to residual: loaded chunk
      // by chunk, each chunk's loads would wait for the previous chunk's store (they may alias
      // as far as the compiler knows), one memory round trip per chunk.
      Vec<T, VEC> xv[CHUNKS], rv[CHUNKS];
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const int idx = c * G + lane;
        if (active && idx < nvec) {
          xv[c] = load_vec<T, VEC>(x + idx * VEC);
          rv[c] = load_vec<T, VEC>(res + idx * VEC);
        }
      }
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const int idx = c * G + lane;
        if (active && idx < nvec) {
          float r[VEC];
          to_floats(xv[c], v[c]);
          to_floats(rv[c], r);
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[c][i] = round_to<T>(v[c][i] + r[i]);
          store_floats<T, VEC>(res + idx * VEC, v[c]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[c][i] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) ss += v[c][i] * v[c][i];
      }
    } else {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const int idx = c * G + lane;
        if (active && idx < nvec) {
          load_floats<T, VEC>(x + idx * VEC, v[c]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[c][i] = 0.f;
        }
#pragma unroll
        for (int i = 0; i < VEC; ++i) ss += v[c][i] * v[c][i];
      }
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss * p.inv_d + p.eps);
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int idx = c * G + lane;
      if (active && idx < nvec) {
        rms_norm_write<T, W, O, VEC, PRELOAD>(p, out, idx, v[c], inv, wv[PRELOAD ? c : 0]);
      }
    }
  } else {
    float ss = 0.f;
    for (int idx = lane; active && idx < nvec; idx += G) {
      float v[VEC];
      rms_norm_load<T, VEC, ADD>(x, res, res, idx, v);
#pragma unroll
      for (int i = 0; i < VEC; ++i) ss += v[i] * v[i];
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss * p.inv_d + p.eps);
    // Second pass: the row again (with ADD, the rounded sum this thread stored to residual).
    for (int idx = lane; active && idx < nvec; idx += G) {
      float v[VEC];
      load_floats<T, VEC>((ADD ? res : x) + idx * VEC, v);
      rms_norm_write<T, W, O, VEC, false>(p, out, idx, v, inv, Vec<W, VEC>{});
    }
  }
}

// The staged path (common/stage.cuh): the block's threads copy the weight to shared memory,
// each group its row (and with ADD the residual row) in the same 16-byte vectors it reads
// back, all by cp.async before any of them is waited for; then the sum of squares from shared
// memory (with ADD: the rounded sum, stored to residual and kept in place of x), a shuffle
// reduction, one barrier for the weight (written by other threads), and the write.
template <typename T, typename W, typename O, int VEC, bool ADD>
__global__ void rms_norm_staged_kernel(const RmsNormParams<T, W, O> p) {
  extern __shared__ __align__(16) unsigned char stage[];
  __shared__ float red[kStageReduceFloats];  // group_sum's, for groups of several warps
  const int G = p.group;
  const int sub = threadIdx.x >> p.group_log2;
  const int lane = threadIdx.x & (G - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + sub;
  const bool active = row < p.rows;
  const int nvec = p.D / VEC;
  const bool has_w = p.weight != nullptr;
  W* sw = p.st_w.template at<W>(stage, 0);
  T* sx = p.st_x.template at<T>(stage, sub);
  T* sres = ADD ? p.st_res.template at<T>(stage, sub) : nullptr;
  if (has_w) stage_row_async<W, VEC>(p.st_w, stage, 0, p.weight, threadIdx.x, blockDim.x, nvec);
  copy_async_commit();
  const T* x = p.x + (active ? p.x_rows.offset(row) : 0);
  O* out = p.out + (active ? p.out_rows.offset(row) : 0);
  T* res = ADD ? p.residual + (active ? p.res_rows.offset(row) : 0) : nullptr;
  if (active) {
    stage_row_async<T, VEC, true>(p.st_x, stage, sub, x, lane, G, nvec);
    if constexpr (ADD) stage_row_async<T, VEC, true>(p.st_res, stage, sub, res, lane, G, nvec);
  }
  copy_async_commit();
  // The weight first (the older group), shared by the block; then this thread's own vectors.
  copy_async_wait<1>();
  if (has_w) __syncthreads();
  copy_async_wait<0>();
  float ss = 0.f;
  if (active) {
#pragma unroll 4
    for (int i = lane; i < nvec; i += G) {
      float v[VEC];
      rms_norm_load<T, VEC, ADD>(sx, sres, res, i, v);
      if constexpr (ADD) store_floats_shared<T, VEC>(sx + i * VEC, v);  // exact: v is rounded to T
#pragma unroll
      for (int k = 0; k < VEC; ++k) ss += v[k] * v[k];
    }
  }
  ss = group_sum(ss, G, red, lanes_mask());
  const float inv = rsqrtf(ss * p.inv_d + p.eps);
  if (active) {
#pragma unroll 4
    for (int i = lane; i < nvec; i += G) {
      float v[VEC];
      load_floats<T, VEC>(sx + i * VEC, v);
      const Vec<W, VEC> wv = has_w ? *reinterpret_cast<const Vec<W, VEC>*>(sw + i * VEC)
                                   : Vec<W, VEC>{};
      rms_norm_write<T, W, O, VEC, true>(p, out, i, v, inv, wv);
    }
  }
}

// Launches the staged kernel when the rows fit (true), else returns false.
template <bool ADD, typename T, typename W, typename O>
bool launch_rms_norm_staged(RmsNormParams<T, W, O>& p, const StageKnobs& k,
                            cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int nvec = p.D / V;
  const StageConfig c = stage_config(nvec, k, [&](int rpb) {
    StagePlan plan;
    if (p.weight != nullptr) plan.block(p.st_w, p.D * static_cast<int>(sizeof(W)));
    plan.per_row(p.st_x, p.D * static_cast<int>(sizeof(T)));
    if (ADD) plan.per_row(p.st_res, p.D * static_cast<int>(sizeof(T)));
    return plan.finish(rpb);
  });
  if (!c.ok) return false;
  p.group = c.group;
  p.group_log2 = c.group_log2;
  p.rows_per_block = c.rows_per_block;
  launch_staged(rms_norm_staged_kernel<T, W, O, V, ADD>, c, p.rows, p, stream);
  return true;
}

// ---- the dense path (common/dense.cuh) ----
//
// Rows at one stride each (x, out, residual; contiguous or slices of wider rows) addressed in
// 32 bits, VPT 16-byte vectors a thread (1, or 2 for rows of more than 512 vectors), the
// weight loaded with the row: Liger's and torch.compile's layout for RMSNorm (one row a
// program, one vector a thread), with this project's block of several rows for short rows.
// With ADD every load comes before the first store to residual (which may alias x or the
// weight as far as the compiler knows).
template <typename T, typename W, typename O>
struct RmsNormDenseParams {
  O* out;           // [rows, D] at row * out_stride (ADD: x itself)
  const T* x;       // [rows, D] at row * x_stride
  const W* weight;  // [D] (HAS_W), or nullptr
  T* residual;      // [rows, D] at row * res_stride (ADD only)
  uint32_t x_stride, out_stride, res_stride;
  uint32_t rows;
  uint32_t nvec;  // D / VEC
  float inv_d;    // 1 / D
  float eps;
  bool round_before_weight;
};

// Blocks of 512 an SM the register bound keeps: 4 (32 registers a thread) for one vector a
// thread of x and a weight of its type; 3 (40) with fp32 weights or outputs or the residual,
// 2 (64) for two vectors a thread: the fewest that do not spill (tools/resources.py, sm_90:
// at 32 the bf16 ADD instance spilled 16 bytes, at 40 the two-vector ones 8-80).
template <typename T, typename W, typename O, int VPT, bool ADD>
constexpr int kRmsDenseBlocksPerSm =
    VPT > 1 ? 2 : (ADD || sizeof(W) > sizeof(T) || sizeof(O) > sizeof(T)) ? 3 : 4;

template <typename T, typename W, typename O, int VPT, bool ADD, bool HAS_W>
__global__ void __launch_bounds__(kDenseMaxThreads, (kRmsDenseBlocksPerSm<T, W, O, VPT, ADD>))
    rms_norm_dense_kernel(const RmsNormDenseParams<T, W, O> p) {
  constexpr int VEC = kVec16<T>;
  __shared__ float red[kDenseMaxThreads / 32];
  const uint32_t row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool row_on = row < p.rows;
  const T* x = p.x + (row_on ? row * p.x_stride : 0);
  T* res = ADD ? p.residual + (row_on ? row * p.res_stride : 0) : nullptr;
  bool on[VPT];
  Vec<T, VEC> xv[VPT], rv[VPT];
  Vec<W, VEC> wv[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const uint32_t idx = threadIdx.x + i * blockDim.x;
    on[i] = row_on && idx < p.nvec;
    if (on[i]) {
      xv[i] = load_vec_once<T, VEC>(x + idx * VEC);
      if constexpr (ADD) rv[i] = load_vec_once<T, VEC>(res + idx * VEC);
      if constexpr (HAS_W) wv[i] = load_vec<W, VEC>(p.weight + idx * VEC);
    }
  }
  float v[VPT][VEC];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    if (on[i]) {
      if constexpr (ADD) {
        // residual + x rounded once into a vector, stored, and widened back (exact).
        float a[VEC], b[VEC];
        to_floats(xv[i], a);
        to_floats(rv[i], b);
#pragma unroll
        for (int k = 0; k < VEC; ++k) a[k] += b[k];
        const Vec<T, VEC> r = round_vec<T, VEC>(a);
        store_vec<T, VEC>(res + (threadIdx.x + i * blockDim.x) * VEC, r);
        to_floats(r, v[i]);
      } else {
        to_floats(xv[i], v[i]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[i][k] = 0.f;
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) ss += v[i][k] * v[i][k];
  }
  ss = block_rows_sum(ss, red);
  const float inv = rsqrtf(ss * p.inv_d + p.eps);
  O* out = p.out + (row_on ? row * p.out_stride : 0);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    if (!on[i]) continue;
    rms_norm_store_vec<T, W, O, VEC, HAS_W>(out + (threadIdx.x + i * blockDim.x) * VEC, v[i],
                                            wv[i], inv, p.round_before_weight);
  }
}

// The dense layout's parameters from `p` (rows of `nvec` 16-byte vectors) into `d`: true when
// x, out and with ADD the residual are rows at one stride each addressed in 32 bits
// (dense_rows), false otherwise (d then unusable). Shared by the dense and two-pass paths.
template <bool ADD, typename T, typename W, typename O>
bool dense_params(const RmsNormParams<T, W, O>& p, int nvec, RmsNormDenseParams<T, W, O>& d) {
  d = RmsNormDenseParams<T, W, O>{};
  if (!dense_rows(p.x_rows, p.rows, p.D, d.x_stride) ||
      !dense_rows(p.out_rows, p.rows, p.D, d.out_stride) ||
      (ADD && !dense_rows(p.res_rows, p.rows, p.D, d.res_stride))) {
    return false;
  }
  d.out = p.out;
  d.x = p.x;
  d.weight = p.weight;
  d.residual = p.residual;
  d.rows = static_cast<uint32_t>(p.rows);
  d.nvec = static_cast<uint32_t>(nvec);
  d.inv_d = p.inv_d;
  d.eps = p.eps;
  d.round_before_weight = p.round_before_weight;
  return true;
}

// Launches the dense kernel when the knobs want it and the rows allow it (true), else returns
// false. Two layouts: rms_norm's rows of up to 512 vectors ("short": D <= 4096 in 16 bits)
// take blocks of 256 threads with two vectors a thread, up to 44 MiB of x (run U, below);
// longer rows and fused_add_rms_norm take blocks of LTX_DENSE_BLOCK_THREADS [512] with one
// vector a thread (two beyond 512 vectors), rms_norm up to 8 MiB of x (run R). Knobs
// (DenseKnobs; set, each applies to both layouts): LTX_RMS_DENSE [1: every grid; 0 off, 2
// beyond one wave; set: on any device, else sm_90 only], LTX_RMS_DENSE_MAX_VEC [1024: D <=
// 8192 in 16 bits], LTX_RMS_DENSE_MAX_MB [short 44, long rms_norm 8, fused_add_rms_norm 0
// (no limit): only while x is at most that many MiB], LTX_RMS_DENSE_VPT [short 2, else 1]:
// vectors a thread at least (rows of more than 512 vectors always take 2),
// LTX_RMS_DENSE_THREADS [LTX_DENSE_BLOCK_THREADS when set, else short 256 and long 512]: a
// block's threads.
// Run U (H200, bf16, rms_norm alone, one lease; the defaults then were run R's long layout up
// to 8 MiB and the staged / register paths beyond): the short layout took 2-7% off every
// shape up to 42 MiB of x (1x4096x4096 24.5 -> 23.0 us, 2x2688x4096 29.1 -> 28.1,
// 2x2688x2048 17.4 -> 17.1, 1x1024x4096 10.9 -> 10.2, 1x1x4096 5.8-6.0 -> 5.6), level at 48
// MiB (2x6144x2048 31.1 / 31.2) and 2-12% slower beyond; two vectors a thread in 512-thread
// blocks, or one in 256-thread blocks, were each slower than both (PERFORMANCE.md, change 54).
// Run R (H200, bf16, against the staged and register paths, two runs a side):
// fused_add_rms_norm 1-12% faster at every shape of the table (1x4096x4096 40.5 -> 38.3 us,
// 1x1x4096 6.6 -> 5.8); rms_norm 3-10% faster up to 8 MiB of x (1x1x4096 6.3 -> 5.7,
// 2x1024x2048 10.9 -> 10.5; level at 1x1024x4096) but 4-23% slower from 16 MiB
// (2x2688x2048 17.6 -> 18.7, 1x16384x8192 135.6 -> 166.3): as for plain adaln (change 44),
// x alone is too few bytes in flight at one vector a thread, where fused_add's residual
// doubles them; two vectors a thread (LTX_RMS_DENSE_VPT=2, 48 registers) was slower still.
template <bool ADD, typename T, typename W, typename O>
bool launch_rms_norm_dense(const RmsNormParams<T, W, O>& p, bool one_wave, cudaStream_t stream) {
  constexpr int kShortVec = 512;
  static const DenseKnobs k_short = dense_knobs("LTX_RMS_DENSE", 1, kShortVec, 44);
  static const DenseKnobs k_long =
      dense_knobs("LTX_RMS_DENSE", 1, 2 * kDenseMaxThreads, ADD ? 0 : 8);
  static const int vpt_short = std::clamp(env_int("LTX_RMS_DENSE_VPT", 2), 1, 2);
  static const int vpt_long = std::clamp(env_int("LTX_RMS_DENSE_VPT", 1), 1, 2);
  static const int threads_short = std::clamp(
      env_int("LTX_RMS_DENSE_THREADS", env_int("LTX_DENSE_BLOCK_THREADS", 256)), 32,
      kDenseMaxThreads);
  static const int threads_long =
      std::clamp(env_int("LTX_RMS_DENSE_THREADS", 0), 0, kDenseMaxThreads);
  constexpr int V = kVec16<T>;
  const int nvec = p.D / V;
  const bool short_rows = !ADD && nvec <= kShortVec;
  const DenseKnobs& k = short_rows ? k_short : k_long;
  const int min_vpt = short_rows ? vpt_short : vpt_long;
  if (!dense_wanted(k, nvec, one_wave)) return false;
  if (dense_over_mb(k, p.rows * p.D * static_cast<int64_t>(sizeof(T)))) return false;
  RmsNormDenseParams<T, W, O> d;
  if (!dense_params<ADD>(p, nvec, d)) return false;
  const int vpt = std::max(min_vpt, (nvec + kDenseMaxThreads - 1) / kDenseMaxThreads);
  if (vpt > 2) return false;
  const DenseBlock db = dense_block(nvec, vpt, short_rows ? threads_short : threads_long);
  const auto blocks =
      static_cast<unsigned>((p.rows + db.rows_per_block - 1) / db.rows_per_block);
  const dim3 block(db.width, db.rows_per_block);
  auto go = [&](auto vpt_c, auto has_w_c) {
    rms_norm_dense_kernel<T, W, O, decltype(vpt_c)::value, ADD, decltype(has_w_c)::value>
        <<<blocks, block, 0, stream>>>(d);
  };
  auto with_w = [&](auto vpt_c) {
    dispatch_bool(p.weight != nullptr, [&](auto has_w_c) { go(vpt_c, has_w_c); });
  };
  if (vpt == 1) {
    with_w(IntC<1>{});
  } else {
    with_w(IntC<2>{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// ---- the two-pass path ----
//
// rms_norm's rows of 1024 16-byte vectors (D = 8192 in 16 bits) in grids of at least 64 MiB
// of x, on sm_90: torch.compile's layout for them (inductor's looped reduction: one row a
// program of 512 threads at 32 registers, x read twice, the second time from the L2), which
// led the register path by 1-4% there (runs CC, DD; change 82). Change 83's two-pass kernel was
// 1.3-1.5x slower, with generic row offsets, a bounds test and a run-time loop per vector;
// this one has the dense path's addressing (rows at one 32-bit stride, no division) and a
// thread's NV vectors fixed at compile time (the row exactly NV * blockDim.x vectors: no
// bounds test, nothing looped), and holds nothing but the sum across the reduction (26-40
// registers at two vectors a thread, kTwoPassBlocksPerSm). Change 99 (run RR, H100, bf16, 512
// threads): 1x4096x8192 51.9 -> 50.2 us, 1x16384x8192 183.7 -> 181.6, torch.compile 50.0 /
// 181.7 beside them; L2 evict-last / evict-first hints on the two passes (inductor's) measured
// the same as plain loads, so there are none; 256 threads (four vectors a thread at D = 8192)
// 50.3 / 182.7, and at D = 2048 / 4096 (one / two vectors a thread) 1.01x / 1.13x the
// defaults' time. On the H200 (run RR, one sweep a side) it is level with the register path:
// 39.5 against 39.3 us, 134.6 against 134.4, torch.compile 37.2 / 129.2 beside them, so there
// compile's lead is not its layout.
constexpr int kTwoPassMaxThreads = 512;
// Blocks of 512 an SM the register bound keeps: 4 (32 registers) for two vectors a thread with
// a weight and an output of x's type, 3 (40) with fp32 weights or outputs (at 32 they spilled
// 8-48 bytes), 2 (64) for four vectors a thread, which only the knobs reach (the instance with
// fp32 weights and output spills 16 bytes there; tools/resources.py, sm_90).
template <typename T, typename W, typename O, int NV>
constexpr int kTwoPassBlocksPerSm =
    NV > 2 ? 2 : (sizeof(W) > sizeof(T) || sizeof(O) > sizeof(T)) ? 3 : 4;

// A 16-byte vector of the two-pass kernel's row: with HINTS under inductor's cache priorities
// (load_vec_evict: EVICT_LAST for the first read, not for the second), else a plain load the
// compiler keeps (load_vec_issued).
template <bool HINTS, bool EVICT_LAST, typename T>
__device__ __forceinline__ Vec<T, kVec16<T>> two_pass_load(const T* p) {
  if constexpr (HINTS) {
    return load_vec_evict<EVICT_LAST>(p);
  } else {
    return load_vec_issued(p);
  }
}

// The two-pass kernel. HINTS (LTX_RMS_TWO_PASS_HINTS=1, two vectors a thread only; off by
// default): the cache priorities of inductor's kernel for this layout (load_vec_evict: L1 and
// L2 evict-last on the first read of the row and on the weight, evict-first on the second
// read). Run WW read that kernel's SASS offline (tools/experiments/inductor_rms_norm_sass.py):
// the configuration with the 32 registers Nsight Compute saw is one row a block of 512
// threads, two 16-byte loads of x a thread a pass, as here; change 99's hints were the L2
// policies alone, measured level on the H100 only. Change 101, not yet run on a GPU.
template <typename T, typename W, typename O, int NV, bool HAS_W, bool HINTS = false>
__global__ void __launch_bounds__(kTwoPassMaxThreads, (kTwoPassBlocksPerSm<T, W, O, NV>))
    rms_norm_two_pass_kernel(const RmsNormDenseParams<T, W, O> p) {
  constexpr int VEC = kVec16<T>;
  __shared__ float red[kTwoPassMaxThreads / 32];
  const T* x = p.x + blockIdx.x * p.x_stride;
  O* out = p.out + blockIdx.x * p.out_stride;
  float ss = 0.f;
  {
    Vec<T, VEC> xv[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      xv[i] = two_pass_load<HINTS, true>(x + (threadIdx.x + i * blockDim.x) * VEC);
    }
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      float v[VEC];
      to_floats(xv[i], v);
#pragma unroll
      for (int k = 0; k < VEC; ++k) ss += v[k] * v[k];
    }
  }
  ss = block_rows_sum(ss, red);
  const float inv = rsqrtf(ss * p.inv_d + p.eps);
  Vec<T, VEC> xv[NV];
  Vec<W, VEC> wv[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const uint32_t idx = threadIdx.x + i * blockDim.x;
    xv[i] = two_pass_load<HINTS, false>(x + idx * VEC);
    if constexpr (HAS_W && HINTS && sizeof(W) == sizeof(T)) {
      wv[i] = load_vec_evict<true>(p.weight + idx * VEC);
    } else if constexpr (HAS_W) {
      wv[i] = load_vec<W, VEC>(p.weight + idx * VEC);
    }
  }
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    float v[VEC];
    to_floats(xv[i], v);
    rms_norm_store_vec<T, W, O, VEC, HAS_W>(out + (threadIdx.x + i * blockDim.x) * VEC, v, wv[i],
                                            inv, p.round_before_weight);
  }
}

// Launches the two-pass kernel when the knobs want it and the rows allow it (true), else
// returns false. rms_norm only (fused_add_rms_norm at D = 8192 is level with the peers on the
// dense path). Knobs (DenseKnobs, common/dense.cuh): LTX_RMS_TWO_PASS [1: every grid; 0 off, 2
// beyond one wave; unset: sm_90 and 16-bit rows only, set: any device and dtype],
// LTX_RMS_TWO_PASS_MAX_VEC [1024, at most 2048] and LTX_RMS_TWO_PASS_MIN_VEC [1024]: rows of
// that many 16-byte vectors (D = 8192 in 16 bits, where it was measured), _MIN_MB [64] and
// _MAX_MB [0: no limit]: x at least / at most that many MiB, LTX_RMS_TWO_PASS_THREADS [512, at
// most 512: a block's threads; the row must be 1, 2 or 4 times that many vectors],
// LTX_RMS_TWO_PASS_HINTS [0; 1: inductor's cache priorities where a thread has two vectors].
template <bool ADD, typename T, typename W, typename O>
bool launch_rms_norm_two_pass(const RmsNormParams<T, W, O>& p, bool one_wave,
                              cudaStream_t stream) {
  static const DenseKnobs k =
      dense_knobs("LTX_RMS_TWO_PASS", 1, 1024, 0, /*cap=*/4 * kTwoPassMaxThreads);
  static const int min_vec = env_int("LTX_RMS_TWO_PASS_MIN_VEC", 1024);
  static const int min_mb = env_int("LTX_RMS_TWO_PASS_MIN_MB", 64);
  static const int threads =
      std::clamp(env_int("LTX_RMS_TWO_PASS_THREADS", 512), 32, kTwoPassMaxThreads) / 32 * 32;
  static const bool hints = env_int("LTX_RMS_TWO_PASS_HINTS", 0) > 0;
  constexpr int V = kVec16<T>;
  const int nvec = p.D / V;
  const int64_t x_bytes = p.rows * p.D * static_cast<int64_t>(sizeof(T));
  if (ADD || (!k.forced && sizeof(T) != 2) || nvec < min_vec || nvec % threads != 0 ||
      x_bytes < (int64_t{min_mb} << 20) || dense_over_mb(k, x_bytes) ||
      !dense_wanted(k, nvec, one_wave)) {
    return false;
  }
  const int nv = nvec / threads;
  if (nv != 1 && nv != 2 && nv != 4) return false;
  RmsNormDenseParams<T, W, O> d;
  if (!dense_params<ADD>(p, nvec, d)) return false;
  auto go = [&](auto nv_c, auto hints_c) {
    dispatch_bool(p.weight != nullptr, [&](auto has_w_c) {
      rms_norm_two_pass_kernel<T, W, O, decltype(nv_c)::value, decltype(has_w_c)::value,
                               decltype(hints_c)::value>
          <<<static_cast<unsigned>(p.rows), threads, 0, stream>>>(d);
    });
  };
  if (nv == 1) {
    go(IntC<1>{}, std::false_type{});
  } else if (nv == 2) {
    dispatch_bool(hints, [&](auto hints_c) { go(IntC<2>{}, hints_c); });
  } else {
    go(IntC<4>{}, std::false_type{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <bool ADD, typename T, typename W, typename O>
void launch_rms_norm(RmsNormParams<T, W, O> p, cudaStream_t stream) {
  // 16-byte accesses when every row start and every pointer allows them, scalar otherwise.
  constexpr int V = kVec16<T>;
  const bool vec_ok = p.D % V == 0 && is_aligned(p.x, 16) && is_aligned(p.out, sizeof(O) * V) &&
                      (p.weight == nullptr || is_aligned(p.weight, sizeof(W) * V)) &&
                      p.x_rows.outer_stride % V == 0 && p.x_rows.inner_stride % V == 0 &&
                      p.out_rows.outer_stride % V == 0 && p.out_rows.inner_stride % V == 0 &&
                      (!ADD || (is_aligned(p.residual, 16) && p.res_rows.outer_stride % V == 0 &&
                                p.res_rows.inner_stride % V == 0));
  const int vec = vec_ok ? V : 1;
  const RowLaunch launch = choose_row_launch(p.D / vec, p.rows, /*one_vec_small=*/true);
  p.inv_d = 1.f / static_cast<float>(p.D);
  // When the staged path runs and how (common/launch.cuh, StageKnobs): LTX_STAGE [2: beyond
  // one wave], LTX_STAGE_MAX_VEC [384; fused_add_rms_norm 512], LTX_STAGE_MAX_GROUP [128].
  // Run K (H200, bf16, one build): groups of up to 128 threads (2 warps a row at D = 2048, 4
  // at 4096) against one warp a row: RMSNorm 1-3% faster at D = 2048 from 4096 rows
  // (1x4096x2048 15.4 -> 15.0 us; 2x2688x2048 1% slower), fused_add_rms_norm 3-5% faster
  // (1x1024x4096 15.9 -> 15.0, 1x4096x4096 42.8 -> 40.5). Against run J's defaults (the
  // register path at D = 4096): fused_add_rms_norm 1x1024x4096 17.0 -> 15.0, level from 4096
  // tokens; RMSNorm at D = 4096 staged was -3% to +3%, so its cap stays at D = 3072 (16-bit).
  static const StageKnobs stage = stage_knobs("LTX_STAGE", 2, ADD ? 512 : 384, 128);
  // The dense path first where it applies (launch_rms_norm_dense), then the two-pass path
  // (launch_rms_norm_two_pass).
  if (vec_ok && launch_rms_norm_dense<ADD>(p, launch.preload, stream)) return;
  if (vec_ok && launch_rms_norm_two_pass<ADD>(p, launch.preload, stream)) return;
  if (vec_ok && stage_wanted(stage, launch.preload, p.D / V, p.rows) &&
      launch_rms_norm_staged<ADD>(p, stage, stream)) {
    return;
  }
  p.group = launch.cfg.group;
  p.rows_per_block = launch.cfg.rows_per_block;
  launch_rows<V>(vec, launch, p.rows, p, stream, [](auto vec_c, auto chunks_c, auto preload_c) {
    return rms_norm_kernel<T, W, O, decltype(vec_c)::value, decltype(chunks_c)::value, ADD,
                           decltype(preload_c)::value>;
  });
}

}  // namespace ltx

void rms_norm(at::Tensor& out, const at::Tensor& input,
              const std::optional<at::Tensor>& weight, double eps, bool round_before_weight) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_rms_norm_args(out, x, weight, eps);
  if (out.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const RowLayout xl = row_layout(x, "input"), ol = row_layout(out, "out");
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  const bool o32 = out.scalar_type() == at::kFloat;

  LTX_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto w_tag, auto o_tag) {
      using W = typename decltype(w_tag)::type;
      using O = typename decltype(o_tag)::type;
      RmsNormParams<T, W, O> p{};
      p.out = reinterpret_cast<O*>(out.data_ptr());
      p.x = reinterpret_cast<const T*>(x.data_ptr());
      p.weight = weight.has_value() ? reinterpret_cast<const W*>(weight->data_ptr()) : nullptr;
      p.x_rows = to_rows(xl);
      p.out_rows = to_rows(ol);
      p.rows = xl.rows;
      p.D = static_cast<int>(x.size(-1));
      p.eps = static_cast<float>(eps);
      p.round_before_weight = round_before_weight;
      launch_rms_norm<false>(p, stream);
    };
    if constexpr (std::is_same_v<T, float>) {
      run(TypeTag<float>{}, TypeTag<float>{});
    } else if (!w32) {
      run(TypeTag<T>{}, TypeTag<T>{});
    } else if (!o32) {
      run(TypeTag<float>{}, TypeTag<T>{});
    } else {
      run(TypeTag<float>{}, TypeTag<float>{});
    }
  });
}

void fused_add_rms_norm(at::Tensor& input, at::Tensor& residual,
                        const std::optional<at::Tensor>& weight, double eps) {
  using namespace ltx;
  check_fused_add_rms_norm_args(input, residual, weight, eps);
  if (input.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const RowLayout xl = row_layout(input, "input"), rl = row_layout(residual, "residual");
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;

  LTX_DISPATCH_FLOAT_TYPES(input.scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto w_tag) {
      using W = typename decltype(w_tag)::type;
      RmsNormParams<T, W, T> p{};
      // In place: each thread reads its elements of x before it writes them.
      p.out = reinterpret_cast<T*>(input.data_ptr());
      p.x = p.out;
      p.weight = weight.has_value() ? reinterpret_cast<const W*>(weight->data_ptr()) : nullptr;
      p.residual = reinterpret_cast<T*>(residual.data_ptr());
      p.x_rows = to_rows(xl);
      p.out_rows = p.x_rows;
      p.res_rows = to_rows(rl);
      p.rows = xl.rows;
      p.D = static_cast<int>(input.size(-1));
      p.eps = static_cast<float>(eps);
      p.round_before_weight = false;
      launch_rms_norm<true>(p, stream);
    };
    if (w32) {
      run(TypeTag<float>{});
    } else {
      run(TypeTag<T>{});
    }
  });
}
