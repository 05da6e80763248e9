// AdaLN: out = (norm(x) [* weight] [+ bias]) * (1 + scale) + shift, norm RMSNorm or LayerNorm,
// fp32 math, one rounding. gated_residual_adaln is the same kernel with GATED: the row is first
// x + y * gate, rounded to T and stored to residual_out (the residual stream of a DiT / LTX
// block), and the norm is taken of that rounded row.
//
// Structure as in rms_norm.cu: one group of G threads per row, the row cached in registers
// (CHUNKS vectors of VEC elements per thread) between the reductions and the write; rows too
// long for registers take a streaming path (CHUNKS == 0) that reads the row again from memory
// (from residual_out with GATED, which this thread wrote). LayerNorm takes two reductions over
// the cached row: the mean first, then the sum of squared deviations from it, which does not
// lose the variance to cancellation the way E[x^2] - E[x]^2 does when |mean| >> std.
//
// On sm_80+, adaln grids beyond one wave of rows of at most 384 16-byte vectors take the
// staged path instead (common/stage.cuh): x, the modulation rows and the affine copied to
// shared memory by cp.async, one group of up to 32 threads per row working from there; a
// modulation row shared by every row of a block (per sample, or one [D] row) is staged once
// per block. gated_residual_adaln has the staged kernel too (launch_adaln says when it runs):
// x and y staged (or y read from global memory: AdaLNParams::stage_y), x + y * gate replacing
// x in shared memory.
//
// On sm_90, contiguous rows of at most 512 16-byte vectors whose modulation is a [D] row, per
// sample or per token take the dense path before either (adaln_dense_kernel: one vector a
// thread, torch.compile's layout with its set-up specialized away; plain adaln with shared
// modulation only up to 32 MB of x, beyond which the staged path is faster).
//
// scale, shift and gate broadcast against x's rows by strides (BcastRows): [D], [B,1,D] and
// [B,S,D] for x [B,S,D] all read their row at an offset, nothing is materialized.
//
// gated_residual is that residual alone (out = x + y * gate, through the same gated_sum), for
// the residuals no norm follows: a streaming kernel, rows x tiles of vectors, with no row
// cached and no reduction.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <type_traits>

#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dense.cuh"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/fast_rows.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/reduce.cuh"
#include "ltx_kernels_cuda/common/rows.cuh"
#include "ltx_kernels_cuda/common/stage.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

// T: x's dtype (also y, out, residual_out); M: scale / shift / gate; W: weight / bias.
template <typename T, typename M, typename W>
struct AdaLNParams {
  T* out;           // [rows, D] at out_rows: the modulated norm
  T* residual_out;  // [rows, D] at res_rows: x + y * gate (GATED only)
  const T* x;       // [rows, D] at x_rows
  const T* y;       // [rows, D] at y_rows (GATED only)
  const M* gate;    // one [D] row per x row at gate_b.offset(row), or nullptr: x + y
  const M* scale;   // one [D] row per x row at scale_b.offset(row)
  const M* shift;   // one [D] row per x row at shift_b.offset(row)
  const W* weight;  // [D], or nullptr
  const W* bias;    // [D], or nullptr
  Rows x_rows, y_rows, out_rows, res_rows;
  FastBcast gate_b, scale_b, shift_b;
  int64_t rows;
  int D;
  int group;           // threads per row (G)
  int group_log2;      // staged path: log2(G), G a power of two
  int rows_per_block;  // staged path: groups per block
  StageSlot st_x, st_y, st_scale, st_shift, st_gate, st_w, st_b;  // staged path
  bool stage_shared;  // staged path: some slot is block-wide (a barrier before reading it)
  // Staged path with GATED: y copied in by cp.async as x is, or (false) read from global memory
  // into the sum, which takes x's place in shared memory either way.
  bool stage_y;
  float eps;
  bool layer;  // LayerNorm (subtract the mean) rather than RMSNorm: the kernel's LAYER
};

// The row to normalize with GATED, from vectors as loaded: v = x + y * gate (x + y when
// !has_gate) rounded to T. The product is kept apart from the sum (no FMA contraction), so that
// the rounded residual stream is bit-identical to the CPU kernel's.
// gated_sum_unrounded is the sum before that rounding (for callers that round it to T once).
template <typename T, typename M, int VEC>
__device__ __forceinline__ void gated_sum_unrounded(const Vec<T, VEC>& xv, const Vec<T, VEC>& yv,
                                                    const Vec<M, VEC>& gv, bool has_gate,
                                                    float (&v)[VEC]) {
  float yf[VEC];
  to_floats(xv, v);
  to_floats(yv, yf);
  if (has_gate) {
    float g[VEC];
    to_floats(gv, g);
#pragma unroll
    for (int i = 0; i < VEC; ++i) yf[i] = __fmul_rn(yf[i], g[i]);
  }
#pragma unroll
  for (int i = 0; i < VEC; ++i) v[i] = __fadd_rn(v[i], yf[i]);
}

template <typename T, typename M, int VEC>
__device__ __forceinline__ void gated_sum(const Vec<T, VEC>& xv, const Vec<T, VEC>& yv,
                                          const Vec<M, VEC>& gv, bool has_gate,
                                          float (&v)[VEC]) {
  gated_sum_unrounded<T, M, VEC>(xv, yv, gv, has_gate, v);
#pragma unroll
  for (int i = 0; i < VEC; ++i) v[i] = round_to<T>(v[i]);
}

// Loads vector `idx` of the row to normalize: x, or with GATED the rounded x + y * gate, which
// is also stored to residual_out.
template <typename T, typename M, int VEC, bool GATED>
__device__ __forceinline__ void adaln_load(const T* x, const T* y, const M* gate, T* res, int idx,
                                           float (&v)[VEC]) {
  if constexpr (GATED) {
    Vec<M, VEC> gv{};
    if (gate != nullptr) gv = load_vec<M, VEC>(gate + idx * VEC);
    gated_sum<T, M, VEC>(load_vec<T, VEC>(x + idx * VEC), load_vec<T, VEC>(y + idx * VEC), gv,
                         gate != nullptr, v);
    store_floats<T, VEC>(res + idx * VEC, v);
  } else {
    load_floats<T, VEC>(x + idx * VEC, v);
  }
}

// Writes vector `idx` of the output: ((v [- mean]) * inv [* w] [+ b]) * (1 + scale) + shift; the
// mean only with LAYER (subtracted before the multiply: exact when |mean| >> std, where
// v * inv - mean * inv would cancel).
// PRELOAD: scale / shift were loaded with the row (scv, shv), else they are read here.
// weight / bias: the affine (global or shared memory), or nullptr.
template <typename T, typename M, typename W, int VEC, bool LAYER, bool PRELOAD = false>
__device__ __forceinline__ void adaln_write(const W* weight, const W* bias, T* out,
                                            const M* scale, const M* shift, int idx,
                                            const float (&v)[VEC], float mean, float inv,
                                            const Vec<M, VEC>& scv = {},
                                            const Vec<M, VEC>& shv = {}) {
  float sc[VEC], sh[VEC], o[VEC];
  if constexpr (PRELOAD) {
    to_floats(scv, sc);
    to_floats(shv, sh);
  } else {
    load_floats<M, VEC>(scale + idx * VEC, sc);
    load_floats<M, VEC>(shift + idx * VEC, sh);
  }
#pragma unroll
  for (int i = 0; i < VEC; ++i) o[i] = (LAYER ? v[i] - mean : v[i]) * inv;
  if (weight != nullptr) {
    float w[VEC];
    load_floats<W, VEC>(weight + idx * VEC, w);
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] *= w[i];
  }
  if (bias != nullptr) {
    float b[VEC];
    load_floats<W, VEC>(bias + idx * VEC, b);
#pragma unroll
    for (int i = 0; i < VEC; ++i) o[i] += b[i];
  }
#pragma unroll
  for (int i = 0; i < VEC; ++i) o[i] = o[i] * (1.f + sc[i]) + sh[i];
  store_floats<T, VEC>(out + idx * VEC, o);
}

// The first pass's sum over one vector of the row: of the values (LAYER, for the mean) or of
// their squares (RMSNorm).
template <int VEC, bool LAYER>
__device__ __forceinline__ void accumulate_row(const float (&v)[VEC], float& sum, float& ss) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    if (LAYER) {
      sum += v[i];
    } else {
      ss += v[i] * v[i];
    }
  }
}

// PRELOAD (cached path only): scale and shift are loaded with the row, before the reductions,
// for grids that run in one wave, where the kernel's time is one row's chain of round trips.
template <typename T, typename M, typename W, int VEC, int CHUNKS, bool GATED, bool LAYER,
          bool PRELOAD>
__global__ void adaln_kernel(const AdaLNParams<T, M, W> p) {
  __shared__ float smem[32];
  const int G = p.group;
  const int lane = threadIdx.x % G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  const bool active = row < p.rows;
  const int64_t r = active ? row : 0;  // inactive threads only take part in the reductions
  const T* x = p.x + p.x_rows.offset(r);
  T* out = p.out + p.out_rows.offset(r);
  const M* scale = p.scale + p.scale_b.offset(r);
  const M* shift = p.shift + p.shift_b.offset(r);
  const T* y = nullptr;
  T* res = nullptr;
  const M* gate = nullptr;
  if constexpr (GATED) {
    y = p.y + p.y_rows.offset(r);
    res = p.residual_out + p.res_rows.offset(r);
    if (p.gate != nullptr) gate = p.gate + p.gate_b.offset(r);
  }
  const int nvec = p.D / VEC;
  const float d = static_cast<float>(p.D);

  if constexpr (CHUNKS > 0) {
    float v[CHUNKS][VEC];
    float sum = 0.f, ss = 0.f;
    Vec<M, VEC> scv[PRELOAD ? CHUNKS : 1], shv[PRELOAD ? CHUNKS : 1];
    if constexpr (PRELOAD) {
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        const int idx = c * G + lane;
        if (active && idx < nvec) {
          scv[c] = load_vec<M, VEC>(scale + idx * VEC);
          shv[c] = load_vec<M, VEC>(shift + idx * VEC);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int idx = c * G + lane;
      if (active && idx < nvec) {
        adaln_load<T, M, VEC, GATED>(x, y, gate, res, idx, v[c]);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[c][i] = 0.f;
      }
      accumulate_row<VEC, LAYER>(v[c], sum, ss);
    }
    float mean = 0.f;
    if (LAYER) {
      mean = group_sum(sum, G, smem) / d;
      ss = 0.f;
#pragma unroll
      for (int c = 0; c < CHUNKS; ++c) {
        if (active && c * G + lane < nvec) {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            const float dev = v[c][i] - mean;
            ss += dev * dev;
          }
        }
      }
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss / d + p.eps);
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int idx = c * G + lane;
      if (active && idx < nvec) {
        adaln_write<T, M, W, VEC, LAYER, PRELOAD>(p.weight, p.bias, out, scale, shift, idx,
                                                  v[c], mean, inv,
                                                  scv[PRELOAD ? c : 0], shv[PRELOAD ? c : 0]);
      }
    }
  } else {
    // The row again after the first pass: from residual_out with GATED (this thread's own
    // stores, so no barrier is needed), else from x.
    const T* row_again = GATED ? res : x;
    float sum = 0.f, ss = 0.f;
    for (int idx = lane; active && idx < nvec; idx += G) {
      float v[VEC];
      adaln_load<T, M, VEC, GATED>(x, y, gate, res, idx, v);
      accumulate_row<VEC, LAYER>(v, sum, ss);
    }
    float mean = 0.f;
    if (LAYER) {
      mean = group_sum(sum, G, smem) / d;
      ss = 0.f;
      for (int idx = lane; active && idx < nvec; idx += G) {
        float v[VEC];
        load_floats<T, VEC>(row_again + idx * VEC, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float dev = v[i] - mean;
          ss += dev * dev;
        }
      }
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss / d + p.eps);
    for (int idx = lane; active && idx < nvec; idx += G) {
      float v[VEC];
      load_floats<T, VEC>(row_again + idx * VEC, v);
      adaln_write<T, M, W, VEC, LAYER>(p.weight, p.bias, out, scale, shift, idx, v, mean, inv);
    }
  }
}

// The staged path (common/stage.cuh). Block-wide slots (the affine, and modulation rows the
// host found shared by every row of the block) are copied by all threads of the block from the
// block's first row; per-row slots (x, y, per-token modulation) by each group from its row, in
// the same vectors it reads back. All copies are issued before any is waited for; then one
// barrier for the block-wide slots, the row from shared memory (with GATED: x + y * gate,
// rounded, stored to residual_out and kept in place of x), shuffle reductions, the write.
template <typename T, typename M, typename W, int VEC, bool GATED, bool LAYER>
__global__ void adaln_staged_kernel(const AdaLNParams<T, M, W> p) {
  extern __shared__ __align__(16) unsigned char stage[];
  __shared__ float red[kStageReduceFloats];  // group_sum's, for groups of several warps
  const int G = p.group;
  const int sub = threadIdx.x >> p.group_log2;
  const int lane = threadIdx.x & (G - 1);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * p.rows_per_block;
  const int64_t row = first + sub;
  const bool active = row < p.rows;
  const int nvec = p.D / VEC;
  const float d = static_cast<float>(p.D);
  const bool has_gate = GATED && p.gate != nullptr;

  // A modulation operand's row for block row `sub` (block-wide slot: the block's first row).
  auto mod_src = [&](const M* base, const FastBcast& b, const StageSlot& s) {
    return base + b.offset(s.row_stride == 0 ? first : row);
  };
  const int tid = threadIdx.x, nthreads = blockDim.x;
  if (p.st_w.staged()) stage_row_async<W, VEC>(p.st_w, stage, 0, p.weight, tid, nthreads, nvec);
  if (p.st_b.staged()) stage_row_async<W, VEC>(p.st_b, stage, 0, p.bias, tid, nthreads, nvec);
  if (p.st_scale.row_stride == 0) {
    stage_row_async<M, VEC>(p.st_scale, stage, 0, mod_src(p.scale, p.scale_b, p.st_scale),
                            tid, nthreads, nvec);
  }
  if (p.st_shift.row_stride == 0) {
    stage_row_async<M, VEC>(p.st_shift, stage, 0, mod_src(p.shift, p.shift_b, p.st_shift),
                            tid, nthreads, nvec);
  }
  if (has_gate && p.st_gate.row_stride == 0) {
    stage_row_async<M, VEC>(p.st_gate, stage, 0, mod_src(p.gate, p.gate_b, p.st_gate),
                            tid, nthreads, nvec);
  }
  copy_async_commit();
  const int64_t r = active ? row : first;
  T* out = p.out + p.out_rows.offset(r);
  T* res = GATED ? p.residual_out + p.res_rows.offset(r) : nullptr;
  if (active) {
    stage_row_async<T, VEC, true>(p.st_x, stage, sub, p.x + p.x_rows.offset(row), lane, G,
                                  nvec);
    if constexpr (GATED) {
      if (p.stage_y) {
        stage_row_async<T, VEC, true>(p.st_y, stage, sub, p.y + p.y_rows.offset(row), lane, G,
                                      nvec);
      }
      if (has_gate && p.st_gate.row_stride != 0) {
        stage_row_async<M, VEC>(p.st_gate, stage, sub, mod_src(p.gate, p.gate_b, p.st_gate),
                                lane, G, nvec);
      }
    }
    if (p.st_scale.row_stride != 0) {
      stage_row_async<M, VEC>(p.st_scale, stage, sub, mod_src(p.scale, p.scale_b, p.st_scale),
                              lane, G, nvec);
    }
    if (p.st_shift.row_stride != 0) {
      stage_row_async<M, VEC>(p.st_shift, stage, sub, mod_src(p.shift, p.shift_b, p.st_shift),
                              lane, G, nvec);
    }
  }
  copy_async_commit();
  // The block-wide slots first (the older group), written by other threads; then this
  // thread's own vectors.
  copy_async_wait<1>();
  if (p.stage_shared) __syncthreads();
  copy_async_wait<0>();

  T* sx = p.st_x.template at<T>(stage, sub);
  float sum = 0.f, ss = 0.f;
  if (active) {
    if constexpr (GATED) {
      // x + y * gate in batches of kBatch vectors a thread: the batch's reads of x and y
      // (y from global memory when not staged) are all issued before its stores, which the
      // compiler could not move them past (the stores to residual_out may alias y as far as
      // it knows). 2 a batch: 69 registers (4: 101). Run J's loop (each vector's reads behind
      // the previous one's stores) was 3-20% slower than the register path; this one is ahead
      // of it from 88 MB (launch_adaln).
      constexpr int kBatch = 2;
      const T* y = p.stage_y ? p.st_y.template at<T>(stage, sub) : p.y + p.y_rows.offset(row);
      const M* sg = has_gate ? p.st_gate.template at<M>(stage, sub) : nullptr;
      for (int i0 = lane; i0 < nvec; i0 += kBatch * G) {
        Vec<T, VEC> xv[kBatch], yv[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int i = i0 + b * G;
          if (i < nvec) {
            xv[b] = load_vec<T, VEC>(sx + i * VEC);
            yv[b] = load_vec<T, VEC>(y + i * VEC);
          }
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int i = i0 + b * G;
          if (i < nvec) {
            const Vec<M, VEC> gv = has_gate ? load_vec<M, VEC>(sg + i * VEC) : Vec<M, VEC>{};
            float v[VEC];
            gated_sum<T, M, VEC>(xv[b], yv[b], gv, has_gate, v);
            store_floats<T, VEC>(res + i * VEC, v);
            store_floats_shared<T, VEC>(sx + i * VEC, v);  // exact: v is already rounded to T
            accumulate_row<VEC, LAYER>(v, sum, ss);
          }
        }
      }
    } else {
#pragma unroll 4
      for (int i = lane; i < nvec; i += G) {
        float v[VEC];
        load_floats<T, VEC>(sx + i * VEC, v);
        accumulate_row<VEC, LAYER>(v, sum, ss);
      }
    }
  }
  const unsigned mask = lanes_mask();
  float mean = 0.f;
  if (LAYER) {
    mean = group_sum(sum, G, red, mask) / d;
    if (active) {
#pragma unroll 4
      for (int i = lane; i < nvec; i += G) {
        float v[VEC];
        load_floats<T, VEC>(sx + i * VEC, v);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float dev = v[k] - mean;
          ss += dev * dev;
        }
      }
    }
  }
  ss = group_sum(ss, G, red, mask);
  const float inv = rsqrtf(ss / d + p.eps);
  if (active) {
    const M* sc = p.st_scale.template at<M>(stage, sub);
    const M* sh = p.st_shift.template at<M>(stage, sub);
    const W* w = p.st_w.staged() ? p.st_w.template at<W>(stage, 0) : nullptr;
    const W* b = p.st_b.staged() ? p.st_b.template at<W>(stage, 0) : nullptr;
#pragma unroll 4
    for (int i = lane; i < nvec; i += G) {
      float v[VEC];
      load_floats<T, VEC>(sx + i * VEC, v);
      adaln_write<T, M, W, VEC, LAYER>(w, b, out, sc, sh, i, v, mean, inv);
    }
  }
}

// Launches the staged kernel when the rows fit (true), else returns false.
template <bool GATED, bool LAYER, typename T, typename M, typename W>
bool launch_adaln_staged(AdaLNParams<T, M, W>& p, const StageKnobs& k, cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int xb = p.D * static_cast<int>(sizeof(T)), mb = p.D * static_cast<int>(sizeof(M)),
            wb = p.D * static_cast<int>(sizeof(W));
  const StageConfig c = stage_config(p.D / V, k, [&](int rpb) {
    StagePlan plan;
    p.st_w = p.st_b = p.st_gate = p.st_y = StageSlot{};
    if (p.weight != nullptr) plan.block(p.st_w, wb);
    if (p.bias != nullptr) plan.block(p.st_b, wb);
    // A modulation row shared by the block's rows is staged once for the block.
    auto mod = [&](StageSlot& s, const FastBcast& b) {
      if (b.b.same_row_in_runs_of(rpb)) {
        plan.block(s, mb);
      } else {
        plan.per_row(s, mb);
      }
    };
    mod(p.st_scale, p.scale_b);
    mod(p.st_shift, p.shift_b);
    plan.per_row(p.st_x, xb);
    if (GATED) {
      if (p.gate != nullptr) mod(p.st_gate, p.gate_b);
      if (p.stage_y) plan.per_row(p.st_y, xb);
    }
    p.stage_shared = plan.has_block_slots();
    return plan.finish(rpb);
  });
  if (!c.ok) return false;
  p.group = c.group;
  p.group_log2 = c.group_log2;
  p.rows_per_block = c.rows_per_block;
  launch_staged(adaln_staged_kernel<T, M, W, V, GATED, LAYER>, c, p.rows, p, stream);
  return true;
}

// ---- the dense path: one vector a thread ----
//
// For rows of D back to back (x, out, and with GATED y and residual_out: a contiguous
// [rows, D]) with every modulation operand a RunBcast (a [D] row, per sample or per token),
// fewer than 2^31 elements and rows of at most 512 vectors: torch.compile's layout, specialized
// as its kernels are. Each thread holds one 16-byte vector of its row and the operands for it;
// a block is blockDim.y rows of blockDim.x threads (threadIdx.y the row, threadIdx.x the
// vector: no division), and the row's sums are shuffles and one barrier each
// (block_rows_sum). Offsets are 32-bit, the modulation's one multiply-shift each, 1 / D a
// parameter, the affine and gate pointers checked once. Run P's generic one-vector kernel
// (change 41, reverted) issued 2.3x the instructions of compile's at LTX's gated shape from
// its run-time broadcast walks, 64-bit offsets and a division (PERFORMANCE.md).
// AFFINE: weight or bias given (instances without it issue none of its predicated work).
template <typename T, typename M, typename W>
struct AdaLNDenseParams {
  T* out;
  T* residual_out;  // GATED only
  const T* x;
  const T* y;       // GATED only
  const M* gate;    // GATED: or nullptr (x + y)
  const M* scale;
  const M* shift;
  const W* weight;  // or nullptr
  const W* bias;    // or nullptr
  RunBcast gate_b, scale_b, shift_b;
  uint32_t rows;
  uint32_t D;
  uint32_t nvec;  // D / VEC
  float inv_d;    // 1 / D
  float eps;
};

// A register bound of 32 (4 blocks of kDenseMaxThreads an SM, as compile's kernel at 30
// registers); 40 (3 blocks) for fp32 modulation of a 16-bit x, whose three operand vectors are
// twice the registers (at 32 those instances spilled 24-48 bytes).
template <typename T, typename M, typename W, bool GATED, bool LAYER, bool AFFINE>
__global__ void __launch_bounds__(kDenseMaxThreads, sizeof(M) > sizeof(T) ? 3 : 4)
adaln_dense_kernel(const AdaLNDenseParams<T, M, W> p) {
  constexpr int VEC = kVec16<T>;
  __shared__ float red[LAYER ? 2 : 1][kDenseMaxThreads / 32];
  const uint32_t row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool on = row < p.rows && threadIdx.x < p.nvec;
  const uint32_t col = threadIdx.x * VEC;
  const uint32_t at = row * p.D + col;  // in x, y, out and residual_out
  const bool has_gate = GATED && p.gate != nullptr;
  // Every load of the row's operands before the residual's store (a store the compiler cannot
  // prove apart from them would order the loads written after it); the affine, shared by
  // every row, is read where it is used.
  Vec<T, VEC> xv, yv;
  Vec<M, VEC> gv{}, scv, shv;
  if (on) {
    xv = load_vec_once<T, VEC>(p.x + at);
    if constexpr (GATED) {
      yv = load_vec_once<T, VEC>(p.y + at);
      if (has_gate) gv = load_vec<M, VEC>(p.gate + p.gate_b.offset(row) + col);
    }
    scv = load_vec<M, VEC>(p.scale + p.scale_b.offset(row) + col);
    shv = load_vec<M, VEC>(p.shift + p.shift_b.offset(row) + col);
  }
  float v[VEC];
  float sum = 0.f, ss = 0.f;
  if (on) {
    if constexpr (GATED) {
      // The sum rounded once into a vector, stored, and widened back (exact): fewer
      // conversions than gated_sum's rounding of each element and the store's packing.
      float s[VEC];
      gated_sum_unrounded<T, M, VEC>(xv, yv, gv, has_gate, s);
      const Vec<T, VEC> r = round_vec<T, VEC>(s);
      store_vec<T, VEC>(p.residual_out + at, r);
      to_floats(r, v);
    } else {
      to_floats(xv, v);
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = 0.f;
  }
  accumulate_row<VEC, LAYER>(v, sum, ss);
  float mean = 0.f;
  if constexpr (LAYER) {
    mean = block_rows_sum(sum, red[0]) * p.inv_d;
    if (on) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float dev = v[i] - mean;
        ss += dev * dev;
      }
    }
  }
  ss = block_rows_sum(ss, red[LAYER ? 1 : 0]);
  const float inv = rsqrtf(ss * p.inv_d + p.eps);
  if (!on) return;
  adaln_write<T, M, W, VEC, LAYER, /*PRELOAD=*/true>(
      AFFINE ? p.weight : nullptr, AFFINE ? p.bias : nullptr, p.out + row * p.D, nullptr,
      nullptr, threadIdx.x, v, mean, inv, scv, shv);
}

// When the dense path runs (DenseKnobs, common/dense.cuh; VAR: LTX_ADALN_DENSE,
// LTX_GATED_DENSE): rows of at most 512 vectors; `max_mb` > 0: where the staged path would
// run and the modulation is shared by rows (a [D] row, or per sample), only while x is at most
// that many MB (0: no limit). LTX_DENSE_BLOCK_THREADS [512]: a block's threads (its rows),
// compile's at LTX's shape.
//
// Launches the dense kernel when the knobs want it and the tensors allow it (true), else
// returns false. `staged`: the staged path would run otherwise (for DenseKnobs::max_mb).
template <bool GATED, bool LAYER, typename T, typename M, typename W>
bool launch_adaln_dense(const AdaLNParams<T, M, W>& p, const DenseKnobs& k, bool one_wave,
                        bool staged, cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int nvec = p.D / V;
  if (!dense_wanted(k, nvec, one_wave)) return false;
  const int64_t D = p.D;
  auto dense = [&](const Rows& r) { return r.inner == 1 && r.outer_stride == D; };
  if (!dense(p.x_rows) || !dense(p.out_rows) || p.rows * D >= (int64_t{1} << 31)) return false;
  if (GATED && (!dense(p.y_rows) || !dense(p.res_rows))) return false;
  AdaLNDenseParams<T, M, W> d{};
  if (!run_bcast(p.scale_b.b, p.rows, D, d.scale_b) ||
      !run_bcast(p.shift_b.b, p.rows, D, d.shift_b)) {
    return false;
  }
  if (GATED && p.gate != nullptr && !run_bcast(p.gate_b.b, p.rows, D, d.gate_b)) return false;
  // One modulation row per x row: one level (runs of one row), not broadcast.
  auto per_row = [](const BcastRows& b) { return b.nd == 1 && b.stride[0] != 0; };
  if (staged && !per_row(p.scale_b.b) && !per_row(p.shift_b.b) &&
      dense_over_mb(k, p.rows * D * static_cast<int64_t>(sizeof(T)))) {
    return false;
  }
  const DenseBlock db = dense_block(nvec, 1);
  d.out = p.out;
  d.residual_out = p.residual_out;
  d.x = p.x;
  d.y = p.y;
  d.gate = p.gate;
  d.scale = p.scale;
  d.shift = p.shift;
  d.weight = p.weight;
  d.bias = p.bias;
  d.rows = static_cast<uint32_t>(p.rows);
  d.D = static_cast<uint32_t>(p.D);
  d.nvec = static_cast<uint32_t>(nvec);
  d.inv_d = 1.f / static_cast<float>(p.D);
  d.eps = p.eps;
  const auto blocks =
      static_cast<unsigned>((p.rows + db.rows_per_block - 1) / db.rows_per_block);
  const dim3 block(db.width, db.rows_per_block);
  if (p.weight != nullptr || p.bias != nullptr) {
    adaln_dense_kernel<T, M, W, GATED, LAYER, true><<<blocks, block, 0, stream>>>(d);
  } else {
    adaln_dense_kernel<T, M, W, GATED, LAYER, false><<<blocks, block, 0, stream>>>(d);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

inline bool rows_multiple_of(const Rows& r, int v) {
  return r.outer_stride % v == 0 && r.inner_stride % v == 0;
}

// A modulation operand (scale, shift, gate) allows V-element vectors: its pointer aligned to
// V of M, every row it reads starting at a multiple of V.
template <int V, typename M>
bool mod_vec_ok(const M* ptr, const FastBcast& b) {
  return is_aligned(ptr, sizeof(M) * V) && b.strides_multiple_of(V);
}

template <bool GATED, typename T, typename M, typename W>
void launch_adaln(AdaLNParams<T, M, W> p, cudaStream_t stream) {
  // 16-byte accesses of x when D, every row start and every pointer allow them (the fp32
  // operands of a 16-bit x are then read VEC at a time too, as two 16-byte loads); scalar
  // otherwise.
  constexpr int V = kVec16<T>;
  auto affine_ok = [&](const W* ptr) { return ptr == nullptr || is_aligned(ptr, sizeof(W) * V); };
  bool vec_ok = p.D % V == 0 && is_aligned(p.x, 16) && is_aligned(p.out, 16) &&
                rows_multiple_of(p.x_rows, V) && rows_multiple_of(p.out_rows, V) &&
                mod_vec_ok<V>(p.scale, p.scale_b) && mod_vec_ok<V>(p.shift, p.shift_b) &&
                affine_ok(p.weight) && affine_ok(p.bias);
  if (GATED) {
    vec_ok = vec_ok && is_aligned(p.y, 16) && is_aligned(p.residual_out, 16) &&
             rows_multiple_of(p.y_rows, V) && rows_multiple_of(p.res_rows, V) &&
             (p.gate == nullptr || mod_vec_ok<V>(p.gate, p.gate_b));
  }
  const int vec = vec_ok ? V : 1;
  // Blocks of LTX_ADALN_BLOCK_THREADS [128] threads beyond one wave: run H (H200, bf16),
  // 1-5% faster than 256 at every larger AdaLN and gated AdaLN shape of the table (change 24).
  static const int big_threads = env_int("LTX_ADALN_BLOCK_THREADS", 128);
  const RowLaunch launch =
      choose_row_launch(p.D / vec, p.rows, /*one_vec_small=*/false, big_threads);
  // When the staged path runs and how (StageKnobs): LTX_ADALN_STAGE [2: beyond one wave],
  // _MAX_VEC [384], _MAX_GROUP [32] for adaln; LTX_GATED_STAGE [2], _MAX_VEC [384],
  // _MAX_GROUP [64], _MIN_ROWS_PER_SM [24] for gated_residual_adaln, and LTX_GATED_STAGE_Y
  // [1]: y staged as x is (0: read from global memory into the sum; half the shared memory a
  // row). Run J (H200, bf16, against the register path): adaln staged 12-18% faster from
  // 33 MB (LTX 2x2688x2048: 22.7 -> 18.9 us), level in one-wave grids and per token. Run K:
  // the gated kernel staged with its sum in batches, 2 warps a row, 9-14% faster from 88 MB
  // at D <= 3072 (2x2688x2048 34.6 -> 31.3 us, 4x4096x3072 123.8 -> 106.0), 2% at 4096 rows,
  // but 5-9% slower at 2048 rows (2x1024x2048, 16 a SM: hence the minimum); one warp a row
  // was 1-7% behind 2 warps, y read instead of staged 0-9% behind; adaln in 2 warps a row
  // was mixed (-2% to +4%).
  static const StageKnobs stage = GATED ? stage_knobs("LTX_GATED_STAGE", 2, 384, 64, 24)
                                        : stage_knobs("LTX_ADALN_STAGE", 2, 384, 32);
  static const bool stage_y = env_int("LTX_GATED_STAGE_Y", 1, /*zero_turns_off=*/true) != 0;
  const bool staged = vec_ok && stage_wanted(stage, launch.preload, p.D / V, p.rows);
  p.stage_y = stage_y;
  // The dense path (DenseKnobs), before the staged path where it applies: LTX_ADALN_DENSE /
  // LTX_GATED_DENSE [1: every grid], _MAX_VEC [512], _MAX_MB [adaln 32, gated 0]. Run Q (H200,
  // against the staged and register paths, two runs a side): gated_residual_adaln 4-28% faster
  // at every shape of the table in bf16 and fp16 (2x2688x2048 31.0 -> 27.8 us, 2x2688x4096
  // 59.6 -> 48.6, 1x1024x2048 12.1 -> 10.0), adaln per token 3-9%; adaln with shared
  // modulation 2-12% faster up to 22 MB of x (1x1024x2048 8.6 -> 7.6, 2x2688x2048 19.1 ->
  // 18.7) and at D = 4096 (over the staged path's cap: 34.2 -> 31.1), level at 17 MB, but 2-8%
  // slower from 50 MB where the staged path runs (4x4096x3072 57.1 -> 61.7): with x the row's
  // only stream, one 16-byte vector a thread keeps too few bytes in flight over many waves.
  static const DenseKnobs dense =
      GATED ? dense_knobs("LTX_GATED_DENSE", 1, kDenseMaxThreads, 0)
            : dense_knobs("LTX_ADALN_DENSE", 1, kDenseMaxThreads, 32);
  auto go = [&](auto layer_c) {
    if (vec_ok &&
        launch_adaln_dense<GATED, decltype(layer_c)::value>(p, dense, launch.preload, staged,
                                                            stream)) {
      return;
    }
    if (staged &&
        launch_adaln_staged<GATED, decltype(layer_c)::value>(p, stage, stream)) {
      return;
    }
    p.group = launch.cfg.group;
    launch_rows<V>(vec, launch, p.rows, p, stream, [](auto vec_c, auto chunks_c, auto preload_c) {
      return adaln_kernel<T, M, W, decltype(vec_c)::value, decltype(chunks_c)::value, GATED,
                          decltype(layer_c)::value, decltype(preload_c)::value>;
    });
  };
  dispatch_bool(p.layer, go);
}

// Fills the params from the (checked) tensors and launches, with T, M and W bound.
template <bool GATED, typename T, typename M, typename W>
void run_adaln(at::Tensor& out, at::Tensor* residual_out, const at::Tensor& x,
               const at::Tensor* y, const std::optional<at::Tensor>& gate,
               const at::Tensor& scale, const at::Tensor& shift,
               const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
               const AdaLNArgs& a, double eps, cudaStream_t stream) {
  AdaLNParams<T, M, W> p{};
  p.out = reinterpret_cast<T*>(out.data_ptr());
  p.x = reinterpret_cast<const T*>(x.data_ptr());
  p.scale = reinterpret_cast<const M*>(scale.data_ptr());
  p.shift = reinterpret_cast<const M*>(shift.data_ptr());
  p.weight = weight.has_value() ? reinterpret_cast<const W*>(weight->data_ptr()) : nullptr;
  p.bias = bias.has_value() ? reinterpret_cast<const W*>(bias->data_ptr()) : nullptr;
  const RowLayout xl = row_layout(x, "input");
  p.x_rows = to_rows(xl);
  p.out_rows = to_rows(row_layout(out, "out"));
  p.scale_b = fast_bcast(a.scale, xl.rows);
  p.shift_b = fast_bcast(a.shift, xl.rows);
  if constexpr (GATED) {
    p.residual_out = reinterpret_cast<T*>(residual_out->data_ptr());
    p.y = reinterpret_cast<const T*>(y->data_ptr());
    p.gate = gate.has_value() ? reinterpret_cast<const M*>(gate->data_ptr()) : nullptr;
    p.y_rows = to_rows(row_layout(*y, "y"));
    p.res_rows = to_rows(row_layout(*residual_out, "residual_out"));
    p.gate_b = fast_bcast(a.gate, xl.rows);
  }
  p.rows = xl.rows;
  p.D = static_cast<int>(x.size(-1));
  p.eps = static_cast<float>(eps);
  p.layer = a.norm == NormKind::kLayer;
  launch_adaln<GATED>(p, stream);
}

// Binds T from x's dtype, M (modulation) and W (affine) to T or float.
template <bool GATED>
void dispatch_adaln(at::Tensor& out, at::Tensor* residual_out, const at::Tensor& x,
                    const at::Tensor* y, const std::optional<at::Tensor>& gate,
                    const at::Tensor& scale, const at::Tensor& shift,
                    const std::optional<at::Tensor>& weight,
                    const std::optional<at::Tensor>& bias, const AdaLNArgs& a, double eps) {
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  LTX_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto m_tag, auto w_tag) {
      using M = typename decltype(m_tag)::type;
      using W = typename decltype(w_tag)::type;
      run_adaln<GATED, T, M, W>(out, residual_out, x, y, gate, scale, shift, weight, bias, a,
                                eps, stream);
    };
    if constexpr (std::is_same_v<T, float>) {
      run(TypeTag<float>{}, TypeTag<float>{});
    } else if (a.mod32) {
      if (a.affine32) {
        run(TypeTag<float>{}, TypeTag<float>{});
      } else {
        run(TypeTag<float>{}, TypeTag<T>{});
      }
    } else {
      if (a.affine32) {
        run(TypeTag<T>{}, TypeTag<float>{});
      } else {
        run(TypeTag<T>{}, TypeTag<T>{});
      }
    }
  });
}

// ---- gated_residual ----

template <typename T, typename M>
struct GatedResidualParams {
  T* out;         // [rows, D] at out_rows; may be x itself (in place)
  const T* x;     // [rows, D] at x_rows
  const T* y;     // [rows, D] at y_rows
  const M* gate;  // one [D] row per x row at gate_b.offset(row)
  Rows x_rows, y_rows, out_rows;
  FastBcast gate_b;
  int64_t rows;
  int D;
  int64_t row_blocks;  // blocks of blockDim.y rows
  int64_t tiles;       // tiles of blockDim.x * UNROLL vectors per row
};

// Block (bx, by), thread (tx, ty): UNROLL vectors, blockDim.x apart, of tile by of row
// bx * blockDim.y + ty. All loads of x, y and gate are issued before the first store (out may
// be x, so the compiler keeps them in that order); the row offsets, the gate's through its
// FastBcast, are computed once per row. The grid strides over row blocks and tiles beyond its
// limits.
template <typename T, typename M, int VEC, int UNROLL>
__global__ void __launch_bounds__(kStreamThreads)
gated_residual_kernel(const GatedResidualParams<T, M> p) {
  const int64_t nvec = p.D / VEC;
  for (int64_t rb = blockIdx.x; rb < p.row_blocks; rb += gridDim.x) {
    const int64_t row = rb * blockDim.y + threadIdx.y;
    if (row >= p.rows) return;  // the last row block's spare threads
    const T* x = p.x + p.x_rows.offset(row);
    const T* y = p.y + p.y_rows.offset(row);
    const M* gate = p.gate + p.gate_b.offset(row);
    T* out = p.out + p.out_rows.offset(row);
    for (int64_t t = blockIdx.y; t < p.tiles; t += gridDim.y) {
      const int64_t first = t * blockDim.x * UNROLL + threadIdx.x;
      Vec<T, VEC> xv[UNROLL], yv[UNROLL];
      Vec<M, VEC> gv[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int64_t i = first + u * blockDim.x;
        if (i < nvec) {
          xv[u] = load_vec_once<T, VEC>(x + i * VEC);
          yv[u] = load_vec_once<T, VEC>(y + i * VEC);
          gv[u] = load_vec<M, VEC>(gate + i * VEC);
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int64_t i = first + u * blockDim.x;
        if (i < nvec) {
          float v[VEC];
          gated_sum<T, M, VEC>(xv[u], yv[u], gv[u], /*has_gate=*/true, v);
          store_floats<T, VEC>(out + i * VEC, v);
        }
      }
    }
  }
}

// Dense x, y and out (rows of D back to back) with fewer than 2^31 vectors: one vector a thread,
// enumerated over the whole tensor with 32-bit indices (row = i / (D / VEC) by a FastDiv), so
// that a thread holds one vector each of x, y and gate and little else (torch.compile's kernel
// does the same). Run M, H200, bf16: the row kernel above held 80 registers (3 blocks a SM) and
// reached 56% of the copy at 2x2688x2048 against compile's 70%. The gate's row offset: with
// RUN_GATE, run_gate's (a [D] row, per sample or per token: one FastDiv), where the gate has
// that form; else p.gate_b's walk over up to four broadcast levels (read in place from the
// parameters: a FastBcast passed as a parameter of its own was copied to the stack, 2.3x the
// time, run W call 2). Run W (ncu, H200, bf16 2x2688x2048): with FastBcast for every gate the
// kernel held 34 registers (75% occupancy) and ran 5.98 M instructions against inductor's 26
// registers and 3.61 M (16.58 / 16.13 us); with RunBcast 26 registers.
template <typename T, typename M, int VEC, bool RUN_GATE>
__global__ void __launch_bounds__(kStreamThreads)
gated_residual_flat_kernel(const GatedResidualParams<T, M> p, const RunBcast run_gate,
                           const FastDiv nvec_div, const uint32_t nvec, const uint32_t total) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const uint32_t row = nvec_div.div(i);
  const uint32_t col = i - row * nvec;
  const Vec<T, VEC> xv = load_vec_once<T, VEC>(p.x + static_cast<int64_t>(i) * VEC);
  const Vec<T, VEC> yv = load_vec_once<T, VEC>(p.y + static_cast<int64_t>(i) * VEC);
  const int64_t gate_row = RUN_GATE ? static_cast<int64_t>(run_gate.offset(row))
                                    : p.gate_b.offset(row);
  const Vec<M, VEC> gv = load_vec<M, VEC>(p.gate + gate_row + col * VEC);
  float v[VEC];
  gated_sum<T, M, VEC>(xv, yv, gv, /*has_gate=*/true, v);
  store_floats<T, VEC>(p.out + static_cast<int64_t>(i) * VEC, v);
}

template <typename T, typename M>
void launch_gated_residual(GatedResidualParams<T, M> p, bool dense, cudaStream_t stream) {
  // 16-byte vectors when D, every pointer and every row start allow them, as launch_adaln
  // decides; scalar otherwise.
  constexpr int V = kVec16<T>;
  const bool vec_ok = p.D % V == 0 && is_aligned(p.x, 16) && is_aligned(p.y, 16) &&
                      is_aligned(p.out, 16) && rows_multiple_of(p.x_rows, V) &&
                      rows_multiple_of(p.y_rows, V) && rows_multiple_of(p.out_rows, V) &&
                      mod_vec_ok<V>(p.gate, p.gate_b);
  dispatch_vec<V>(vec_ok ? V : 1, [&](auto vec_c) {
    constexpr int VC = decltype(vec_c)::value;
    // The flat kernel for dense tensors (LTX_GATED_RESIDUAL_FLAT [1]; 0: always the row
    // kernel, for A/B runs).
    // Threads a block: LTX_GATED_RESIDUAL_FLAT_THREADS [128], 32..256, inductor's block for
    // the same sum. Run N (H200, one build, twice each): 128 took 0.970-0.998x of 256's time
    // at all 16 shapes (2x2688x2048 bf16 23.15 -> 22.87 us).
    static const bool flat_on = env_int("LTX_GATED_RESIDUAL_FLAT", 1, true) != 0;
    static const int flat_threads =
        std::clamp(env_int("LTX_GATED_RESIDUAL_FLAT_THREADS", 128), 32, kStreamThreads);
    const int64_t nvec = p.D / VC;
    const int64_t total = p.rows * nvec;
    if (dense && flat_on && p.gate_b.fast && total < (int64_t{1} << 31)) {
      const int64_t blocks = (total + flat_threads - 1) / flat_threads;
      // The RunBcast gate (LTX_GATED_RESIDUAL_RUN_GATE [1]; 0: FastBcast always, for A/B runs).
      static const bool run_gate_on = env_int("LTX_GATED_RESIDUAL_RUN_GATE", 1, true) != 0;
      RunBcast run_gate{};
      const bool run = run_gate_on && run_bcast(p.gate_b.b, p.rows, p.D, run_gate);
      dispatch_bool(run, [&](auto run_c) {
        gated_residual_flat_kernel<T, M, VC, decltype(run_c)::value>
            <<<static_cast<unsigned>(blocks), flat_threads, 0, stream>>>(
                p, run_gate, FastDiv::make(static_cast<uint32_t>(nvec)),
                static_cast<uint32_t>(nvec), static_cast<uint32_t>(total));
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return;
    }
    // The row kernel: 2 vectors of x and 2 of y a thread (80 registers for bf16 x on sm_90:
    // 3 blocks of 256 threads a SM; fp16 56), 4 scalars of each on the scalar path. Run L
    // (H200, bf16, 2x2688x2048): 4 and 4 a thread, 127 registers, 31.8 us; 2 and 2, 28.5 us.
    // Run M: 1 vector a thread 26.0 us (56 registers), 4 and 4 with a 4-blocks-a-SM bound
    // 82.5 us (spills); see PERFORMANCE.md.
    constexpr int U = VC == 1 ? 4 : 2;
    const StreamConfig cfg = choose_stream_config(nvec, p.rows, U);
    p.tiles = cfg.tiles;
    p.row_blocks = cfg.blocks / cfg.tiles;
    // gridDim.x is at most 2^31 - 1 and gridDim.y 65535; the kernel strides over the rest.
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(p.row_blocks, 0x7fffffff)),
                    static_cast<unsigned>(std::min<int64_t>(p.tiles, 65535)));
    const dim3 block(cfg.group, cfg.rows_per_block);
    gated_residual_kernel<T, M, VC, U><<<grid, block, 0, stream>>>(p);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Fills the params from the (checked) tensors and launches, with T and M (gate) bound.
template <typename T, typename M>
void run_gated_residual(at::Tensor& out, const at::Tensor& x, const at::Tensor& y,
                        const at::Tensor& gate, const BcastRows& gate_b, cudaStream_t stream) {
  GatedResidualParams<T, M> p{};
  p.out = reinterpret_cast<T*>(out.data_ptr());
  p.x = reinterpret_cast<const T*>(x.data_ptr());
  p.y = reinterpret_cast<const T*>(y.data_ptr());
  p.gate = reinterpret_cast<const M*>(gate.data_ptr());
  const RowLayout xl = row_layout(x, "input");
  p.x_rows = to_rows(xl);
  p.y_rows = to_rows(row_layout(y, "y"));
  p.out_rows = to_rows(row_layout(out, "out"));
  p.gate_b = fast_bcast(gate_b, xl.rows);
  p.rows = xl.rows;
  p.D = static_cast<int>(x.size(-1));
  launch_gated_residual(p, x.is_contiguous() && y.is_contiguous() && out.is_contiguous(), stream);
}

// Binds T from x's dtype and M from the gate's (T or float).
inline void dispatch_gated_residual(at::Tensor& out, const at::Tensor& x, const at::Tensor& y,
                                    const at::Tensor& gate, const BcastRows& gate_b) {
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  LTX_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    if (gate.scalar_type() == at::kFloat) {
      run_gated_residual<T, float>(out, x, y, gate, gate_b, stream);
    } else {
      run_gated_residual<T, T>(out, x, y, gate, gate_b, stream);
    }
  });
}

}  // namespace ltx

void adaln(at::Tensor& out, const at::Tensor& input, const at::Tensor& scale,
           const at::Tensor& shift, const std::optional<at::Tensor>& weight,
           const std::optional<at::Tensor>& bias, c10::string_view norm, double eps) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const AdaLNArgs a = check_adaln_args(out, x, scale, shift, weight, bias, norm, eps);
  if (out.numel() == 0) return;
  dispatch_adaln<false>(out, nullptr, x, nullptr, std::nullopt, scale, shift, weight, bias, a,
                        eps);
}

void gated_residual_adaln(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& input,
                          const at::Tensor& y, const std::optional<at::Tensor>& gate,
                          const at::Tensor& scale, const at::Tensor& shift,
                          const std::optional<at::Tensor>& weight,
                          const std::optional<at::Tensor>& bias, c10::string_view norm,
                          double eps) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const at::Tensor yr = contiguous_rows(y, "y");
  const AdaLNArgs a = check_gated_residual_adaln_args(out, residual_out, x, yr, gate, scale,
                                                      shift, weight, bias, norm, eps);
  if (out.numel() == 0) return;
  dispatch_adaln<true>(out, &residual_out, x, &yr, gate, scale, shift, weight, bias, a, eps);
}

void gated_residual(at::Tensor& out, const at::Tensor& input, const at::Tensor& y,
                    const at::Tensor& gate) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const at::Tensor yr = contiguous_rows(y, "y");
  const BcastRows gate_b = check_gated_residual_args(out, x, yr, gate);
  if (out.numel() == 0) return;
  dispatch_gated_residual(out, x, yr, gate, gate_b);
}
