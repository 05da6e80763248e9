// RMSNorm then RoPE in one pass: out = rope(x * rsqrt(mean(x^2) + eps) [* weight]), fp32 from
// load to store, one rounding to x's dtype. A row is what is normalized: the whole last dim
// (LTX-Video's norm_q / norm_k across heads) or one head (FLUX, Qwen3: the host views x as
// [..., H, D / H]).
//
// As rms_norm.cu: one group of G threads per row, several groups per block for short rows, the
// row in registers between the reduction and the write (CHUNKS items per thread), a streaming
// path that reads x twice for rows too long for registers (CHUNKS == 0). The row is cut into
// items that hold whole rotation pairs (common/rope.cuh), so the rotation needs no data from
// other threads.
//
// rms_norm_rope_qk: when q and k have the same rows (self-attention with as many k heads as q
// heads: LTX-Video, FLUX), one group handles row r of both (NT = 2), so each cos / sin item is
// loaded once for the two; the tables (fp32 [B, S, D] in LTX-Video) are as large as q and k.
// Otherwise (GQA) q and k run one after the other (NT = 1). Tables shared over a leading dim
// (LTX-Video's: the injection passes one sample's, [1, S, D / 2] as pair tables) are read with
// the rows that share them side by side (shared_table_rows_inner, common/op_checks.h). Pair
// tables hold one cos / sin value per rotation pair (load_pair_item, common/rope.cuh).
//
// Run O (H200, ncu): at LTX's q / k pair the kernel is bound by instruction issue, not bytes
// or registers: the row's index math and the reduction are kept to few instructions
// (FastDiv, row_sums).
//
// q and k are read once with an L2 evict-first policy (LTX_LOAD_ONCE 2, common/vec.cuh; the
// other files keep plain loads). Run T (H200, bf16, two runs a side): the pair-table case
// 2x2688x2048 38.8 -> 37.3 us (the L2 flushed by zeroing) and 34.7 -> 34.2 (by a read), the
// other norm + rope cases 0.7-1.4% faster; the same policy in every file was 2-5% slower for
// the activations, level for the norms.
#ifndef LTX_LOAD_ONCE
#define LTX_LOAD_ONCE 2
#endif
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dense.cuh"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/fast_rows.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/reduce.cuh"
#include "ltx_kernels_cuda/common/rope.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

constexpr int kMaxCachedFloats = 64;   // row values a thread keeps in registers
constexpr int kMaxStreamThreads = 512;  // threads per row on the streaming path

// Tensor t (t < NT; q then k for rms_norm_rope_qk) of a launch.
template <typename T, typename W>
struct NormRopeTensor {
  T* out;                      // [rows, D] at out_rows
  const T* x;                  // [rows, D] at x_rows
  const W* weight;             // [D], or nullptr
  FastBcast x_rows, out_rows;  // row r's offset in x / out
};

template <typename T, typename W, typename C>
struct RmsNormRopeParams {
  NormRopeTensor<T, W> t[2];     // NT of them used
  const C* cos;                  // [..., R] (pair tables: [..., R / 2]) at cos_rows
  const C* sin;                  // the same at sin_rows
  FastBcast cos_rows, sin_rows;  // row r's offset in cos / sin (broadcast)
  int64_t rows;
  RopeRow row;
  int group;           // threads per row (G)
  FastDiv group_div;   // division by G (a thread's row within its block)
  int rows_per_block;
  float eps;
  bool sin_like_cos;  // sin has cos's strides: one offset for both
  bool pairs;         // pair tables: one cos / sin value per rotation pair
};

// Normalizes item k of each of the NT tensors (raw values v[t], by inv[t] and its weight),
// rotates them when the item is in the rotary span (one cos / sin load for all), and stores.
template <int NT, typename T, typename W, typename C, int VEC, bool IL>
__device__ __forceinline__ void norm_rope_write(const RmsNormRopeParams<T, W, C>& p,
                                                T* const (&out)[NT], const C* cr, const C* sr,
                                                int k, float (&v)[NT][RopeItem<VEC, IL>::F],
                                                const float (&inv)[NT]) {
  constexpr int F = RopeItem<VEC, IL>::F;
  int pa, pb;
  const bool rot = rope_item_pos<VEC, IL>(p.row, k, pa, pb);
  float c[F], s[F];
  if (rot) {
    if (p.pairs) {
      load_pair_item<C, VEC, IL>(cr, pa, c);
      load_pair_item<C, VEC, IL>(sr, pa, s);
    } else {
      load_item<C, VEC, IL>(cr, pa, pb, p.row.R, c);
      load_item<C, VEC, IL>(sr, pa, pb, p.row.R, s);
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (p.t[t].weight != nullptr) {
      float w[F];
      load_item<W, VEC, IL>(p.t[t].weight, pa, pb, p.row.D, w);
#pragma unroll
      for (int i = 0; i < F; ++i) v[t][i] = v[t][i] * inv[t] * w[i];
    } else {
#pragma unroll
      for (int i = 0; i < F; ++i) v[t][i] *= inv[t];
    }
    if (rot) rope_rotate<RopeItem<VEC, IL>::U, IL>(v[t], c, s);
    store_item<T, VEC, IL>(out[t], pa, pb, p.row.D, v[t]);
  }
}

template <typename T, int VEC, bool IL>
__device__ __forceinline__ float load_item_ss(const T* x, const RopeRow& g, int k,
                                              float (&v)[RopeItem<VEC, IL>::F]) {
  int pa, pb;
  rope_item_pos<VEC, IL>(g, k, pa, pb);
  load_item<T, VEC, IL>(x, pa, pb, g.D, v);  // past the row end: 0, adds nothing
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < RopeItem<VEC, IL>::F; ++i) ss += v[i] * v[i];
  return ss;
}

// The sums of squares of the NT tensors over a row's G threads, NT at once (group_sum's steps
// with one barrier for all: a kernel calls it once). `gi`: the row within the block. Whole-warp
// groups add their warps' sums with a shuffle reduction over the warp's first G / 32 lanes.
template <int NT>
__device__ __forceinline__ void row_sums(float (&ss)[NT], int G, int gi, float (*smem)[32]) {
#pragma unroll
  for (int t = 0; t < NT; ++t) ss[t] = warp_sum(ss[t], G <= 32 ? G : 32);
  if (G <= 32) return;
  const int warp = threadIdx.x / 32, wl = threadIdx.x % 32, wpg = G / 32;
  if (wl == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t) smem[t][warp] = ss[t];
  }
  __syncthreads();
#pragma unroll
  for (int t = 0; t < NT; ++t) ss[t] = warp_sum(wl < wpg ? smem[t][gi * wpg + wl] : 0.f, 32);
}

// Cached blocks have at most 256 threads (so up to 255 registers a thread); streaming blocks
// up to 512 (one long row per block; 128 registers, which the split-halves 16-bit path with
// fp32 tables needs on sm_75 to run without spills).
template <typename T, typename W, typename C, int VEC, bool IL, int CHUNKS, int NT>
__global__ void __launch_bounds__(CHUNKS == 0 ? kMaxStreamThreads : 256)
    rms_norm_rope_kernel(const RmsNormRopeParams<T, W, C> p) {
  constexpr int F = RopeItem<VEC, IL>::F;
  __shared__ float smem[NT][32];
  const int G = p.group;
  const int gi = static_cast<int>(p.group_div.div(threadIdx.x));  // the row within the block
  const int lane = static_cast<int>(threadIdx.x) - gi * G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + gi;
  const bool active = row < p.rows;  // inactive groups still take part in row_sums
  const T* x[NT];
  T* out[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    x[t] = p.t[t].x + (active ? p.t[t].x_rows.offset(row) : 0);
    out[t] = p.t[t].out + (active ? p.t[t].out_rows.offset(row) : 0);
  }
  const int64_t cos_off = active ? p.cos_rows.offset(row) : 0;
  const int64_t sin_off = p.sin_like_cos ? cos_off : active ? p.sin_rows.offset(row) : 0;
  const C* cr = p.cos + cos_off;
  const C* sr = p.sin + sin_off;
  const int items = p.row.items;
  const float d = static_cast<float>(p.row.D);

  if constexpr (CHUNKS > 0) {
    float v[CHUNKS][NT][F];
    float ss[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) ss[t] = 0.f;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int k = c * G + lane;
      if (active && k < items) {
#pragma unroll
        for (int t = 0; t < NT; ++t) ss[t] += load_item_ss<T, VEC, IL>(x[t], p.row, k, v[c][t]);
      }
    }
    row_sums<NT>(ss, G, gi, smem);
    float inv[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) inv[t] = rsqrtf(ss[t] / d + p.eps);
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int k = c * G + lane;
      if (active && k < items) norm_rope_write<NT, T, W, C, VEC, IL>(p, out, cr, sr, k, v[c], inv);
    }
  } else {
    float ss[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) ss[t] = 0.f;
    for (int k = lane; active && k < items; k += G) {
      float v[F];
#pragma unroll
      for (int t = 0; t < NT; ++t) ss[t] += load_item_ss<T, VEC, IL>(x[t], p.row, k, v);
    }
    row_sums<NT>(ss, G, gi, smem);
    float inv[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) inv[t] = rsqrtf(ss[t] / d + p.eps);
    for (int k = lane; active && k < items; k += G) {
      float v[NT][F];
#pragma unroll
      for (int t = 0; t < NT; ++t) load_item_ss<T, VEC, IL>(x[t], p.row, k, v[t]);
      norm_rope_write<NT, T, W, C, VEC, IL>(p, out, cr, sr, k, v, inv);
    }
  }
}

// Threads per row and items per thread: LTX_NORM_ROPE_LOADS [2] 16-byte loads of x in flight
// per thread over all NT tensors (an interleaved item is one load, a split item two), sub-warp
// groups for short rows; the cached path keeps blocks at 256 threads and at most 64 cached
// floats a thread, and rows beyond that stream (CHUNKS = 0) with up to 512 threads. Run L call
// 2 (H200, bf16, LTX shapes): 2 loads (the LTX q / k pair: one item of each a thread, 256
// threads a row) 13-23% faster than the earlier 4 per tensor (8 over q and k: 127 registers,
// 2 blocks a SM), and 4 over both 11-16%; rms_norm_rope (one tensor) 5-7% faster with 2.
inline RowConfig choose_norm_rope_config(int items, int item_floats, int vec, int nt) {
  static const int loads = env_int("LTX_NORM_ROPE_LOADS", 2);
  const int loads_per_item = item_floats / vec;  // 1 interleaved, 2 split or scalar
  const int per_thread = std::max(1, loads / nt / loads_per_item);
  const int want = (items + per_thread - 1) / per_thread;
  RowConfig c{};
  c.group = want <= 32 ? next_pow2(std::max(want, 1)) : std::min(256, (want + 31) / 32 * 32);
  c.chunks = round_chunks((items + c.group - 1) / c.group);
  if (c.chunks * item_floats * nt > kMaxCachedFloats) c.chunks = 0;
  if (c.chunks == 0) {
    c.group = std::min(kMaxStreamThreads, (want + 31) / 32 * 32);
  } else if (c.group >= 32) {
    c.group = ((items + c.chunks - 1) / c.chunks + 31) / 32 * 32;  // trim to the chunks used
  }
  c.rows_per_block = c.group >= 256 ? 1 : 256 / c.group;
  return c;
}

// ---- the dense path (common/dense.cuh), interleaved pairs ----
//
// One 16-byte vector of each of the NT tensors a thread (its U = VEC / 2 interleaved pairs
// need no other thread's data), a block of blockDim.y rows of blockDim.x threads, every
// operand's row offset in 32 bits at up to two levels (Rows2: q and k as views of a fused
// projection, in shared_table_rows_inner's order; tables shared over the batch or per
// sample), the weights and the vector's cos / sin loaded with the row, before the reduction
// (they do not depend on it), and the NT sums in one barrier (block_rows_sums). The layout of
// the AdaLN kernels' dense path (change 44) for the q / k pair, which run O's ncu found bound
// by instruction issue in the generic kernel.
template <typename T, typename W, typename C>
struct NormRopeDenseParams {
  T* out[2];             // [rows, D] at out_rows[t] (NT used)
  const T* x[2];         // [rows, D] at x_rows[t]
  const W* weight[2];    // [D] each (HAS_W), or nullptr
  Rows2 x_rows[2], out_rows[2];
  const C* cos;          // [..., R] (PAIRS: [..., R / 2]) at cos_rows
  const C* sin;          // the same at sin_rows
  Rows2 cos_rows, sin_rows;
  uint32_t rows;
  uint32_t nvec;  // D / VEC
  uint32_t nrot;  // R / VEC: the vectors that rotate (the rest pass through)
  float inv_d;    // 1 / D
  float eps;
};

// EARLY (LATE = false): the weights loaded with the row, before the reduction; 64 registers a
// thread at most (2 blocks of 512 an SM): a thread holds a vector of each tensor, its weights
// and its cos / sin across the barrier (56 registers for LTX's bf16 q / k with fp32 pair
// tables, sm_90). LATE: the weights loaded after the reduction (many rows share them: L1 and
// L2 hits) and the tensors finished one at a time, so that a thread holds only x's vectors and
// cos / sin across the barrier: at most 40 registers, 3 blocks of 512 an SM (75% of the
// warps against 50%). The launcher picks (launch_rms_norm_rope_dense).
template <typename T, typename W, typename C, int NT, bool PAIRS, bool HAS_W, bool LATE>
__global__ void __launch_bounds__(kDenseMaxThreads, LATE ? 3 : 2)
    rms_norm_rope_dense_kernel(const NormRopeDenseParams<T, W, C> p) {
  constexpr int VEC = kVec16<T>;
  constexpr int U = VEC / 2;  // pairs a vector
  __shared__ float red[NT][kDenseMaxThreads / 32];
  const uint32_t row = blockIdx.x * blockDim.y + threadIdx.y;
  const bool on = row < p.rows && threadIdx.x < p.nvec;
  const bool rot = threadIdx.x < p.nrot;
  const uint32_t col = threadIdx.x * VEC;
  Vec<T, VEC> xv[NT];
  Vec<W, VEC> wv[NT];
  float c[VEC], s[VEC];
  if (on) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      xv[t] = load_vec_once<T, VEC>(p.x[t] + p.x_rows[t].offset(row) + col);
      if constexpr (HAS_W && !LATE) wv[t] = load_vec<W, VEC>(p.weight[t] + col);
    }
    if (rot) {
      if constexpr (PAIRS) {
        float h[U], g[U];
        load_floats<C, U>(p.cos + p.cos_rows.offset(row) + col / 2, h);
        load_floats<C, U>(p.sin + p.sin_rows.offset(row) + col / 2, g);
#pragma unroll
        for (int j = 0; j < U; ++j) {
          c[2 * j] = c[2 * j + 1] = h[j];
          s[2 * j] = s[2 * j + 1] = g[j];
        }
      } else {
        load_floats<C, VEC>(p.cos + p.cos_rows.offset(row) + col, c);
        load_floats<C, VEC>(p.sin + p.sin_rows.offset(row) + col, s);
      }
    }
  }
  float v[NT][VEC], ss[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    ss[t] = 0.f;
    if (on) {
      to_floats(xv[t], v[t]);
#pragma unroll
      for (int i = 0; i < VEC; ++i) ss[t] += v[t][i] * v[t][i];
    }
  }
  block_rows_sums<NT>(ss, &red[0][0], kDenseMaxThreads / 32);
  if (!on) return;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const float inv = rsqrtf(ss[t] * p.inv_d + p.eps);
    if constexpr (LATE) to_floats(xv[t], v[t]);  // widened again rather than held
    if constexpr (HAS_W) {
      if constexpr (LATE) wv[t] = load_vec<W, VEC>(p.weight[t] + col);
      float w[VEC];
      to_floats(wv[t], w);
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[t][i] = v[t][i] * inv * w[i];
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[t][i] *= inv;
    }
    if (rot) rope_rotate<U, /*IL=*/true>(v[t], c, s);
    store_floats<T, VEC>(p.out[t] + p.out_rows[t].offset(row) + col, v[t]);
  }
}

// Launches the dense kernel when the knobs want it and the operands allow it (true), else
// returns false: interleaved pairs, 16-byte vectors (`vec_ok`), rows of at most 512 vectors,
// every operand's rows at up to two levels below 2^31 elements. LTX_NORM_ROPE_DENSE [1: every
// grid; 0 off, 2 beyond one wave; set: on any device, else sm_90 only], _MAX_VEC [512].
template <int NT, typename T, typename W, typename C>
bool launch_rms_norm_rope_dense(const RmsNormRopeParams<T, W, C>& p, int D, int R,
                                bool interleaved, bool vec_ok, cudaStream_t stream) {
  static const DenseKnobs k = dense_knobs("LTX_NORM_ROPE_DENSE", 1, kDenseMaxThreads, 0);
  constexpr int V = kVec16<T>;
  const int nvec = D / V;
  if (!interleaved || !vec_ok || D % V != 0 || R % V != 0) return false;
  const DenseBlock db = dense_block(nvec, 1);
  const int64_t blocks = (p.rows + db.rows_per_block - 1) / db.rows_per_block;
  const bool one_wave = blocks <= 2 * static_cast<int64_t>(device_sms());
  if (!dense_wanted(k, nvec, one_wave)) return false;
  NormRopeDenseParams<T, W, C> d{};
  const int64_t tab = p.pairs ? R / 2 : R;
  if (!rows2(p.cos_rows.b, p.rows, tab, d.cos_rows) ||
      !rows2(p.sin_rows.b, p.rows, tab, d.sin_rows)) {
    return false;
  }
  bool has_w = false;
  for (int t = 0; t < NT; ++t) {
    if (!rows2(p.t[t].x_rows.b, p.rows, D, d.x_rows[t]) ||
        !rows2(p.t[t].out_rows.b, p.rows, D, d.out_rows[t])) {
      return false;
    }
    d.x[t] = p.t[t].x;
    d.out[t] = p.t[t].out;
    d.weight[t] = p.t[t].weight;
    has_w = has_w || p.t[t].weight != nullptr;
  }
  // One weight and not the other: the kernel takes both or neither.
  for (int t = 0; t < NT; ++t) {
    if (has_w && d.weight[t] == nullptr) return false;
  }
  d.cos = p.cos;
  d.sin = p.sin;
  d.rows = static_cast<uint32_t>(p.rows);
  d.nvec = static_cast<uint32_t>(nvec);
  d.nrot = static_cast<uint32_t>(R / V);
  d.inv_d = 1.f / static_cast<float>(D);
  d.eps = p.eps;
  const dim3 block(db.width, db.rows_per_block);
  // The weights loaded after the reduction (LATE) for pair tables and for one tensor, with the
  // row otherwise. Run X call 2 (H200, bf16, ours alone, two rounds): late took the pair-table
  // q / k 6-9% faster (LTX's 2x2688x2048 37.5 -> 35.2 us) and one tensor 0.6-1.0%, but the q / k
  // pair with full-width tables 15-23% slower (48.9 -> 56.4 us; not profiled: those tables are
  // twice the bytes and not shared by a block's rows, and with 3 blocks an SM they may evict
  // from L1 the weights that the late loads then wait for past the barrier).
  // LTX_NORM_ROPE_DENSE_LATE: unset that choice, 0 never, 1 always.
  static const int late_knob = env_int("LTX_NORM_ROPE_DENSE_LATE", -1, /*zero_turns_off=*/true);
  const bool late = late_knob < 0 ? (p.pairs || NT == 1) : late_knob != 0;
  auto go = [&](auto pairs_c, auto has_w_c) {
    dispatch_bool(late, [&](auto late_c) {
      rms_norm_rope_dense_kernel<T, W, C, NT, decltype(pairs_c)::value,
                                 decltype(has_w_c)::value, decltype(late_c)::value>
          <<<static_cast<unsigned>(blocks), block, 0, stream>>>(d);
    });
  };
  auto with_w = [&](auto pairs_c) {
    dispatch_bool(has_w, [&](auto has_w_c) { go(pairs_c, has_w_c); });
  };
  dispatch_bool(p.pairs, with_w);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <int NT, typename T, typename W, typename C>
void launch_rms_norm_rope(RmsNormRopeParams<T, W, C> p, int D, int R, bool interleaved,
                          cudaStream_t stream) {
  // 16-byte accesses of x when V divides D and the rotated span's halves (items then hold
  // whole pairs and never straddle R) and every pointer and row start allows them (weight and
  // cos / sin with V elements of their own type; pair tables with an item's U pairs: V / 2
  // interleaved, V split); scalar otherwise.
  constexpr int V = kVec16<T>;
  const int tv = p.pairs && interleaved ? V / 2 : V;
  bool vec_ok = D % V == 0 && (interleaved ? R % V == 0 : (R / 2) % V == 0) &&
                is_aligned(p.cos, sizeof(C) * tv) && is_aligned(p.sin, sizeof(C) * tv) &&
                p.cos_rows.strides_multiple_of(tv) && p.sin_rows.strides_multiple_of(tv);
  for (int t = 0; t < NT; ++t) {
    const NormRopeTensor<T, W>& a = p.t[t];
    vec_ok = vec_ok && is_aligned(a.x, sizeof(T) * V) && is_aligned(a.out, sizeof(T) * V) &&
             (a.weight == nullptr || is_aligned(a.weight, sizeof(W) * V)) &&
             a.x_rows.strides_multiple_of(V) && a.out_rows.strides_multiple_of(V);
  }
  if (launch_rms_norm_rope_dense<NT>(p, D, R, interleaved, vec_ok, stream)) return;
  dispatch_vec<V>(vec_ok ? V : 1, [&](auto vec_c) {
    constexpr int VC = decltype(vec_c)::value;
    auto go = [&](auto il_c) {
      constexpr bool IL = decltype(il_c)::value;
      constexpr int F = RopeItem<VC, IL>::F;
      p.row = rope_row<VC, IL>(D, R);
      const RowConfig cfg = choose_norm_rope_config(p.row.items, F, VC, NT);
      p.group = cfg.group;
      p.group_div = FastDiv::make(static_cast<uint32_t>(cfg.group));
      p.rows_per_block = cfg.rows_per_block;
      const int64_t blocks = (p.rows + cfg.rows_per_block - 1) / cfg.rows_per_block;
      LTX_CHECK(blocks <= 0x7fffffff, "input: too many rows (", p.rows, ")");
      const dim3 grid(static_cast<unsigned>(blocks)), block(cfg.group * cfg.rows_per_block);
      dispatch_chunks(cfg.chunks, [&](auto chunks_c) {
        constexpr int CC = decltype(chunks_c)::value;
        if constexpr (CC * F * NT <= kMaxCachedFloats) {  // the others are never chosen
          rms_norm_rope_kernel<T, W, C, VC, IL, CC, NT><<<grid, block, 0, stream>>>(p);
        }
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    dispatch_bool(interleaved, go);
  });
}

// One tensor's part of the parameters: x viewed as rows (copied when its layout has more
// strided levels than BcastRows holds), out as rows, the weight.
template <typename T, typename W>
NormRopeTensor<T, W> norm_rope_tensor(const NormRopeViews& v,
                                      const std::optional<at::Tensor>& weight, at::Tensor& keep,
                                      const char* out_name) {
  NormRopeTensor<T, W> a{};
  BcastRows x_rows;
  keep = strided_rows_input(v.x, x_rows);
  const int64_t rows = v.x.size(-1) == 0 ? 0 : v.x.numel() / v.x.size(-1);
  a.x_rows = fast_bcast(x_rows, rows);
  a.out_rows = fast_bcast(strided_rows_out(v.out, out_name), rows);
  a.x = reinterpret_cast<const T*>(keep.data_ptr());
  a.out = reinterpret_cast<T*>(v.out.data_ptr());
  a.weight = weight.has_value() ? reinterpret_cast<const W*>(weight->data_ptr()) : nullptr;
  return a;
}

// Runs rms_norm_rope over one tensor (views[1] == nullptr) or over q and k, in one launch when
// their rows match (NT = 2), else one after the other. Weights: each in x's dtype or fp32, the
// two alike (checked); cos / sin in x's dtype or fp32, full or pair tables (both views alike).
inline void run_rms_norm_rope(const NormRopeViews* const (&views)[2],
                              const std::optional<at::Tensor>* const (&weights)[2],
                              const at::Tensor& cos, const at::Tensor& sin, double eps,
                              bool interleaved) {
  const NormRopeViews& v0 = *views[0];
  const c10::cuda::CUDAGuard guard(v0.x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int nt = views[1] == nullptr ? 1 : 2;
  const bool paired = nt == 2 && views[1]->x.sizes() == v0.x.sizes();
  bool w32 = false;
  for (int t = 0; t < nt; ++t) {
    w32 = w32 || (weights[t]->has_value() && (*weights[t])->scalar_type() == at::kFloat);
  }
  const bool c32 = cos.scalar_type() == at::kFloat;
  const int D = static_cast<int>(v0.x.size(-1));
  const int R = static_cast<int>(v0.tab.R);

  LTX_DISPATCH_FLOAT_TYPES(v0.x.scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto w_tag, auto c_tag) {
      using W = typename decltype(w_tag)::type;
      using C = typename decltype(c_tag)::type;
      RmsNormRopeParams<T, W, C> p{};
      p.cos = reinterpret_cast<const C*>(cos.data_ptr());
      p.sin = reinterpret_cast<const C*>(sin.data_ptr());
      p.eps = static_cast<float>(eps);
      p.pairs = v0.tab.pairs;
      at::Tensor keep[2];
      for (int t = 0; t < nt; ++t) {
        p.t[t] = norm_rope_tensor<T, W>(*views[t], *weights[t], keep[t],
                                        nt == 1 ? "out" : t == 0 ? "q_out" : "k_out");
      }
      auto launch_one = [&](int t) {  // tensor t alone
        RmsNormRopeParams<T, W, C> q = p;
        q.t[0] = p.t[t];
        q.rows = views[t]->x.numel() / D;
        q.cos_rows = fast_bcast(views[t]->tab.cos_rows, q.rows);
        q.sin_rows = fast_bcast(views[t]->tab.sin_rows, q.rows);
        q.sin_like_cos = views[t]->tab.sin_like_cos;
        if (q.rows > 0) launch_rms_norm_rope<1>(q, D, R, interleaved, stream);
      };
      if (paired) {
        p.rows = v0.x.numel() / D;
        p.cos_rows = fast_bcast(v0.tab.cos_rows, p.rows);
        p.sin_rows = fast_bcast(v0.tab.sin_rows, p.rows);
        p.sin_like_cos = v0.tab.sin_like_cos;
        if (p.rows > 0) launch_rms_norm_rope<2>(p, D, R, interleaved, stream);
      } else {
        for (int t = 0; t < nt; ++t) launch_one(t);
      }
    };
    // Weight and cos / sin each in x's dtype or fp32 (fp32 x: all fp32).
    if constexpr (std::is_same_v<T, float>) {
      run(TypeTag<float>{}, TypeTag<float>{});
    } else if (w32 && c32) {
      run(TypeTag<float>{}, TypeTag<float>{});
    } else if (w32) {
      run(TypeTag<float>{}, TypeTag<T>{});
    } else if (c32) {
      run(TypeTag<T>{}, TypeTag<float>{});
    } else {
      run(TypeTag<T>{}, TypeTag<T>{});
    }
  });
}

}  // namespace ltx

void rms_norm_rope(at::Tensor& out, const at::Tensor& input,
                   const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                   const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                   bool pair_tables) {
  using namespace ltx;
  NormRopeViews views =
      check_rms_norm_rope_args(out, input, weight, cos, sin, eps, num_heads, pair_tables);
  if (out.numel() == 0) return;
  NormRopeViews* const shared[] = {&views};
  shared_table_rows_inner(shared, 1, cos, sin);
  run_rms_norm_rope({&views, nullptr}, {&weight, nullptr}, cos, sin, eps, interleaved);
}

void rms_norm_rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q,
                      const at::Tensor& k, const std::optional<at::Tensor>& q_weight,
                      const std::optional<at::Tensor>& k_weight, const at::Tensor& cos,
                      const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                      bool pair_tables) {
  using namespace ltx;
  NormRopeQkViews v = check_rms_norm_rope_qk_args(q_out, k_out, q, k, q_weight, k_weight, cos,
                                                  sin, eps, num_heads, pair_tables);
  if (q_out.numel() == 0 && k_out.numel() == 0) return;
  if (v.q.x.sizes() == v.k.x.sizes()) {  // one launch for both: permuted together
    NormRopeViews* const both[] = {&v.q, &v.k};
    shared_table_rows_inner(both, 2, cos, sin);
  } else {
    for (NormRopeViews* one : {&v.q, &v.k}) shared_table_rows_inner(&one, 1, cos, sin);
  }
  run_rms_norm_rope({&v.q, &v.k}, {&q_weight, &k_weight}, cos, sin, eps, interleaved);
}
