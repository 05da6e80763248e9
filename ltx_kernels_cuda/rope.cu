// RoPE: rotates pairs of the first R elements of each row of x by cos / sin (interleaved pairs
// or split halves), copies the rest; fp32 math, one rounding to x's dtype. rope_qk does q and k
// in one launch (the first blocks work on q, the others on k).
//
// Element-wise over pairs: each thread takes one item (see common/rope.cuh) of one row, a
// whole number of pairs, so no data moves between threads (the flat path; where it does not
// apply, the heads path or a group of G threads per row walking the row's items). cos / sin
// rows are found by strides (broadcast over heads, batch or both), never materialized.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/fast_rows.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/rope.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

// One tensor to rotate (q or k).
template <typename T>
struct RopeTensor {
  T* out;                        // [rows, D] at out_rows
  const T* x;                    // [rows, D] at x_rows
  FastBcast x_rows, out_rows;    // row r's offset in x / out
  FastBcast cos_rows, sin_rows;  // row r's offset in cos / sin
  int64_t rows;
};

template <typename T, typename C>
struct RopeParams {
  RopeTensor<T> t[2];  // t[1] only for rope_qk (rows = 0 otherwise)
  int64_t blocks0;     // blocks [0, blocks0) work on t[0], the rest on t[1]
  const C* cos;        // [..., R]
  const C* sin;        // [..., R]
  RopeRow row;
  int group;          // threads per row (G)
  bool sin_like_cos;  // sin has cos's strides for both tensors: one offset for both
};

template <typename T, typename C, int VEC, bool IL>
__global__ void rope_kernel(const RopeParams<T, C> p) {
  using I = RopeItem<VEC, IL>;
  // Block-uniform choice of tensor; fields are selected one by one so that the parameter
  // struct is read in place (no local copy).
  const bool second = blockIdx.x >= p.blocks0;
  const int64_t block = second ? blockIdx.x - p.blocks0 : blockIdx.x;
  const int G = p.group;
  const int64_t row = block * (blockDim.x / G) + threadIdx.x / G;
  const int64_t rows = second ? p.t[1].rows : p.t[0].rows;
  if (row >= rows) return;  // no block-wide synchronization below
  const int lane = threadIdx.x % G;

  const T* x =
      (second ? p.t[1].x : p.t[0].x) + (second ? p.t[1].x_rows : p.t[0].x_rows).offset(row);
  T* out = (second ? p.t[1].out : p.t[0].out) +
           (second ? p.t[1].out_rows : p.t[0].out_rows).offset(row);
  const int64_t cos_off = (second ? p.t[1].cos_rows : p.t[0].cos_rows).offset(row);
  const int64_t sin_off =
      p.sin_like_cos ? cos_off : (second ? p.t[1].sin_rows : p.t[0].sin_rows).offset(row);
  const C* cr = p.cos + cos_off;
  const C* sr = p.sin + sin_off;
  const RopeRow g = p.row;

  for (int k = lane; k < g.items; k += G) {
    int pa, pb;
    const bool rot = rope_item_pos<VEC, IL>(g, k, pa, pb);
    float v[I::F];
    load_item<T, VEC, IL>(x, pa, pb, g.D, v);
    if (rot) {
      float c[I::F], s[I::F];
      load_item<C, VEC, IL>(cr, pa, pb, g.R, c);
      load_item<C, VEC, IL>(sr, pa, pb, g.R, s);
      rope_rotate<I::U, IL>(v, c, s);
    }
    store_item<T, VEC, IL>(out, pa, pb, g.D, v);
  }
}

template <typename T, typename C>
bool rope_vec_ok(const RopeParams<T, C>& p, int count, int D, int R, int V, bool interleaved) {
  // 16-byte accesses of x (and V-element accesses of cos / sin, 32 bytes when they are fp32
  // and x is 16-bit) when V divides D, the rotated span's halves (so that items hold whole
  // pairs and never straddle R), every row start and every pointer; scalar otherwise.
  bool ok = D % V == 0 && (interleaved ? R % V == 0 : (R / 2) % V == 0) &&
            is_aligned(p.cos, sizeof(C) * V) && is_aligned(p.sin, sizeof(C) * V);
  for (int i = 0; i < count; ++i) {
    const RopeTensor<T>& t = p.t[i];
    ok = ok && is_aligned(t.x, sizeof(T) * V) && is_aligned(t.out, sizeof(T) * V) &&
         t.x_rows.strides_multiple_of(V) && t.out_rows.strides_multiple_of(V) &&
         t.cos_rows.strides_multiple_of(V) && t.sin_rows.strides_multiple_of(V);
  }
  return ok;
}

template <typename T, typename C>
void launch_rope(RopeParams<T, C> p, int count, int D, int R, bool interleaved,
                 cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int vec = rope_vec_ok(p, count, D, R, V, interleaved) ? V : 1;
  dispatch_vec<V>(vec, [&](auto vec_c) {
    constexpr int VC = decltype(vec_c)::value;
    auto go = [&](auto il_c) {
      constexpr bool IL = decltype(il_c)::value;
      p.row = rope_row<VC, IL>(D, R);
      // About one item per thread: an item is already 2 or 4 independent 16-byte accesses
      // (x, cos, sin); short rows share a warp (several rows per warp), long rows loop.
      const int items = p.row.items;
      p.group = items <= 32 ? next_pow2(items) : std::min(256, (items + 31) / 32 * 32);
      const int rows_per_block = 256 / p.group;
      p.blocks0 = (p.t[0].rows + rows_per_block - 1) / rows_per_block;
      const int64_t blocks1 = (p.t[1].rows + rows_per_block - 1) / rows_per_block;
      const int64_t blocks = p.blocks0 + blocks1;
      if (blocks == 0) return;
      LTX_CHECK(blocks <= 0x7fffffff, "input: too many rows (", p.t[0].rows + p.t[1].rows, ")");
      rope_kernel<T, C, VC, IL>
          <<<dim3(static_cast<unsigned>(blocks)), dim3(p.group * rows_per_block), 0, stream>>>(p);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    dispatch_bool(interleaved, go);
  });
}

// ---- heads path: cos / sin loaded once per token for all heads ---------------------------------
//
// When cos / sin broadcast over exactly one leading dim of x (the heads: transformers' q / k
// [B, H, S, D] with cos [B, 1, S, D], FLUX's [B, S, H, D] with [S, 1, D]), one thread takes one
// item of one token's rows in every head of a head group: it loads that item of cos and sin
// once and walks the heads of q, then k, HB at a time (their loads issued together). The rows
// path above loads cos / sin with every row: three item loads per row instead of one, and the
// offsets of four operands per row.

// One tensor of the heads path: row (token t, head h) at x_tok.offset(t) + h * x_hstride.
template <typename T>
struct RopeHeadsTensor {
  T* out;
  const T* x;
  FastBcast x_tok, out_tok;  // token t's row of head 0
  int64_t x_hstride, out_hstride;
  int heads;
};

template <typename T, typename C>
struct RopeHeadsParams {
  RopeHeadsTensor<T> t[2];     // t[1].heads == 0 for rope
  FastBcast cos_tok, sin_tok;  // token t's cos / sin row (the same for q and k)
  const C* cos;
  const C* sin;
  RopeRow row;
  int64_t tokens;
  int lanes;         // threads per token and head group: one item each (row.items)
  int tpb;           // tokens per block
  int groups;        // head groups per token: group g takes heads g, g + groups, ...
  int heads_total;   // t[0].heads + t[1].heads
};

// Two adjacent elements (e, e + 1; e even) of a vector as floats, and back (one rounding
// each): 16-bit pairs are one 32-bit word, converted as a pair.
template <typename T, int N>
__device__ __forceinline__ float2 get2(const Vec<T, N>& v, int e) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const uint32_t w = reinterpret_cast<const uint32_t*>(v.v)[e / 2];
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half22float2(reinterpret_cast<const __half2*>(v.v)[e / 2]);
  } else {
    return make_float2(v.v[e], v.v[e + 1]);
  }
}

template <typename T, int N>
__device__ __forceinline__ void set2(Vec<T, N>& v, int e, float2 f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr bool kPackedBf16 = std::is_same_v<T, __nv_bfloat16>;
#else
  constexpr bool kPackedBf16 = false;
#endif
  if constexpr (kPackedBf16) {
    reinterpret_cast<__nv_bfloat162*>(v.v)[e / 2] = __floats2bfloat162_rn(f.x, f.y);
  } else if constexpr (std::is_same_v<T, __half>) {
    reinterpret_cast<__half2*>(v.v)[e / 2] = __floats2half2_rn(f.x, f.y);
  } else {
    v.v[e] = from_float<T>(f.x);
    v.v[e + 1] = from_float<T>(f.y);
  }
}

// An item (x, out, cos or sin) on the vector path as loaded: 1 vector (interleaved: U pairs
// side by side) or 2 (split halves: the first and the second elements of U pairs). The heads
// path keeps items packed and widens two elements at a time, so that a thread holds the packed
// cos / sin of its token and HB heads' packed x (16-bit items: 8 registers each, not 16, and
// no three items of floats live at once as in the rows path).
template <typename T, int VEC, bool IL>
struct PackedItem {
  static constexpr int kVecs = RopeItem<VEC, IL>::F / VEC;
  Vec<T, VEC> a[kVecs];

  // A split-halves item's second vector is skipped at or past `limit` (the row's end: a
  // pass-through tail of an odd number of vectors leaves the last item one vector); the first
  // always lies inside the row.
  __device__ __forceinline__ void load(const T* row, int pa, int pb, int limit) {
    a[0] = load_vec_once<T, VEC>(row + pa);
    if constexpr (kVecs == 2) {
      if (pb < limit) a[1] = load_vec_once<T, VEC>(row + pb);
    }
  }
  __device__ __forceinline__ void store(T* row, int pa, int pb, int limit) const {
    store_vec<T, VEC>(row + pa, a[0]);
    if constexpr (kVecs == 2) {
      if (pb < limit) store_vec<T, VEC>(row + pb, a[1]);
    }
  }
  // A copy the compiler must treat as new in every iteration of a loop, so that it widens the
  // copy where it is used instead of hoisting the widened floats out of the loop (loop-invariant
  // cos / sin would otherwise stay live as 2F floats).
  __device__ __forceinline__ PackedItem opaque() const {
    PackedItem r = *this;
    static_assert(sizeof(r.a) % 4 == 0, "whole 32-bit words");
    uint32_t* w = reinterpret_cast<uint32_t*>(r.a);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(r.a) / 4); ++i) asm volatile("" : "+r"(w[i]));
    return r;
  }
};

// rope_rotate on packed items, two elements of each half at a time: out = x rotated by c / s.
template <typename T, typename C, int VEC, bool IL>
__device__ __forceinline__ void rope_rotate_packed(const PackedItem<T, VEC, IL>& x,
                                                   const PackedItem<C, VEC, IL>& c,
                                                   const PackedItem<C, VEC, IL>& s,
                                                   PackedItem<T, VEC, IL>& out) {
  static_assert(VEC % 2 == 0, "the vector path");
#pragma unroll
  for (int e = 0; e < VEC; e += 2) {
    if constexpr (IL) {  // the pair (e, e + 1)
      const float2 v = get2(x.a[0], e), cc = get2(c.a[0], e), ss = get2(s.a[0], e);
      set2(out.a[0], e, make_float2(v.x * cc.x - v.y * ss.x, v.y * cc.y + v.x * ss.y));
    } else {  // the pairs (e, U + e) and (e + 1, U + e + 1)
      const float2 a = get2(x.a[0], e), b = get2(x.a[1], e);
      const float2 ca = get2(c.a[0], e), cb = get2(c.a[1], e);
      const float2 sa = get2(s.a[0], e), sb = get2(s.a[1], e);
      set2(out.a[0], e, make_float2(a.x * ca.x - b.x * sa.x, a.y * ca.y - b.y * sa.y));
      set2(out.a[1], e, make_float2(b.x * cb.x + a.x * sb.x, b.y * cb.y + a.y * sb.y));
    }
  }
}

template <typename T, typename C, int VEC, bool IL, int HB>
__global__ void rope_heads_kernel(const RopeHeadsParams<T, C> p) {
  const int lane = threadIdx.x % p.lanes;
  const int slot = threadIdx.x / p.lanes;
  const int64_t tok = static_cast<int64_t>(blockIdx.x) * p.tpb + slot % p.tpb;
  const int group = slot / p.tpb;
  if (tok >= p.tokens) return;  // no block-wide synchronization below
  int pa, pb;
  const bool rot = rope_item_pos<VEC, IL>(p.row, lane, pa, pb);
  PackedItem<C, VEC, IL> c{}, s{};
  if (rot) {  // rotated items lie inside R: no limit
    c.load(p.cos + p.cos_tok.offset(tok), pa, pb, p.row.R);
    s.load(p.sin + p.sin_tok.offset(tok), pa, pb, p.row.R);
  }
  const T* x0 = p.t[0].x + p.t[0].x_tok.offset(tok);
  T* o0 = p.t[0].out + p.t[0].out_tok.offset(tok);
  const T* x1 = x0;
  T* o1 = o0;
  if (p.t[1].heads > 0) {
    x1 = p.t[1].x + p.t[1].x_tok.offset(tok);
    o1 = p.t[1].out + p.t[1].out_tok.offset(tok);
  }
  const int h0 = p.t[0].heads;
  for (int j0 = group; j0 < p.heads_total; j0 += HB * p.groups) {
    PackedItem<T, VEC, IL> v[HB];
#pragma unroll
    for (int b = 0; b < HB; ++b) {
      const int j = j0 + b * p.groups;
      if (j < p.heads_total) {
        v[b].load(j < h0 ? x0 + j * p.t[0].x_hstride : x1 + (j - h0) * p.t[1].x_hstride, pa,
                  pb, p.row.D);
      }
    }
#pragma unroll
    for (int b = 0; b < HB; ++b) {
      const int j = j0 + b * p.groups;
      if (j < p.heads_total) {
        PackedItem<T, VEC, IL> o = v[b];
        if (rot) rope_rotate_packed(v[b], c.opaque(), s.opaque(), o);
        o.store(j < h0 ? o0 + j * p.t[0].out_hstride : o1 + (j - h0) * p.t[1].out_hstride, pa,
                pb, p.row.D);
      }
    }
  }
}

// The one leading dim of x over which cos broadcasts while x has more than one row there (the
// heads), or -1 when there is none or more than one.
inline int64_t rope_head_dim(const at::Tensor& x, const at::Tensor& cos) {
  int64_t hd = -1;
  const int64_t off = x.dim() - cos.dim();
  for (int64_t d = 0; d + 1 < x.dim(); ++d) {
    const int64_t cd = d - off;
    if (x.size(d) > 1 && (cd < 0 || cos.size(cd) == 1)) {
      if (hd >= 0) return -1;
      hd = d;
    }
  }
  return hd;
}

// x's, out's and cos / sin's token rows: the views without the head dim hd.
struct RopeHeadsViews {
  at::Tensor x, out, cos, sin;
};

inline RopeHeadsViews rope_heads_views(const at::Tensor& x, const at::Tensor& out,
                                       const at::Tensor& cos, const at::Tensor& sin, int64_t hd) {
  const int64_t cd = hd - (x.dim() - cos.dim());
  return {x.select(hd, 0), out.select(hd, 0), cd >= 0 ? cos.select(cd, 0) : cos,
          cd >= 0 ? sin.select(cd, 0) : sin};
}

// Launches the heads path for `count` tensors (rope: 1, rope_qk: 2) on the vector path, or
// returns false when it does not apply (no single head dim, q and k with other token shapes,
// rows of many items, a layout the token views cannot address) or is turned off
// (LTX_ROPE_HEADS=0).
template <typename T, typename C>
bool launch_rope_heads(at::Tensor* outs, const at::Tensor* xs, int count, const at::Tensor& cos,
                       const at::Tensor& sin, int D, int R, bool interleaved, cudaStream_t stream) {
  static const int enabled = env_int("LTX_ROPE_HEADS", 1, /*zero_turns_off=*/true);
  static const int want_hpt = env_int("LTX_ROPE_HEADS_PER_THREAD", 4);
  static const int hb = env_int("LTX_ROPE_HEADS_BATCH", 2);
  if (!enabled) return false;
  constexpr int V = kVec16<T>;
  RopeHeadsParams<T, C> p{};
  int64_t tokens = -1;
  std::vector<int64_t> tok_shape;
  for (int i = 0; i < count; ++i) {
    if (xs[i].numel() == 0) return false;
    const int64_t hd = rope_head_dim(xs[i], cos);
    if (hd < 0) return false;
    const RopeHeadsViews v = rope_heads_views(xs[i], outs[i], cos, sin, hd);
    BcastRows xr, orr;
    if (!try_strided_rows(v.x, xr) || !try_strided_rows(v.out, orr)) return false;
    if (i == 0) {
      tok_shape = v.x.sizes().vec();
      tokens = v.x.numel() / D;
      p.cos_tok = fast_bcast(broadcast_rows(v.cos, v.x, "cos", R), tokens);
      p.sin_tok = fast_bcast(broadcast_rows(v.sin, v.x, "sin", R), tokens);
    } else if (v.x.sizes() != at::IntArrayRef(tok_shape)) {
      return false;
    }
    RopeHeadsTensor<T>& t = p.t[i];
    t.x = reinterpret_cast<const T*>(xs[i].data_ptr());
    t.out = reinterpret_cast<T*>(outs[i].data_ptr());
    t.x_tok = fast_bcast(xr, tokens);
    t.out_tok = fast_bcast(orr, tokens);
    t.x_hstride = xs[i].stride(hd);
    t.out_hstride = outs[i].stride(hd);
    t.heads = static_cast<int>(xs[i].size(hd));
    // The vector path's alignment: every row start of x / out and of the tables.
    if (!is_aligned(t.x, 16) || !is_aligned(t.out, 16) || !t.x_tok.strides_multiple_of(V) ||
        !t.out_tok.strides_multiple_of(V) || t.x_hstride % V != 0 || t.out_hstride % V != 0) {
      return false;
    }
  }
  if (!is_aligned(cos.data_ptr(), sizeof(C) * V) || !is_aligned(sin.data_ptr(), sizeof(C) * V) ||
      !p.cos_tok.strides_multiple_of(V) || !p.sin_tok.strides_multiple_of(V) || D % V != 0 ||
      (interleaved ? R % V != 0 : (R / 2) % V != 0) || tokens > 0x7fffffffLL) {
    return false;
  }
  auto go = [&](auto il_c) -> bool {
    constexpr bool IL = decltype(il_c)::value;
    p.row = rope_row<V, IL>(D, R);
    p.lanes = p.row.items;
    if (p.lanes > 128) return false;
    p.tokens = tokens;
    p.cos = reinterpret_cast<const C*>(cos.data_ptr());
    p.sin = reinterpret_cast<const C*>(sin.data_ptr());
    p.heads_total = p.t[0].heads + p.t[1].heads;
    // Heads per thread: the knob, halved while the grid would leave SMs idle (few tokens).
    // At one head a thread, the rows path does the same work with smaller blocks: run H, 16
    // tokens of LLaMA's q and k took 7.2 us here and 6.6 there.
    const int64_t enough_blocks = 2 * static_cast<int64_t>(device_sms());
    int hpt = want_hpt;
    int64_t blocks = 0;
    for (; hpt > 1; hpt /= 2) {
      // At most 256 threads a block: every instance fits it at any register count (1024
      // threads of the 80-register fp32-table instance would not).
      p.groups = std::min((p.heads_total + hpt - 1) / hpt, std::max(1, 256 / p.lanes));
      p.tpb = std::max(1, 256 / (p.lanes * p.groups));
      blocks = (tokens + p.tpb - 1) / p.tpb;
      if (blocks >= enough_blocks) break;
    }
    if (hpt <= 1) return false;
    const int threads = p.lanes * p.groups * p.tpb;
    if (hb >= 2) {
      rope_heads_kernel<T, C, V, IL, 2><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p);
    } else {
      rope_heads_kernel<T, C, V, IL, 1><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  };
  return dispatch_bool(interleaved, go);
}

// LTX_ROPE_FLAT [1]: the flat path below; 0 leaves every call to the heads and rows paths.
inline bool rope_flat_on() {
  static const bool on = env_int("LTX_ROPE_FLAT", 1, /*zero_turns_off=*/true) != 0;
  return on;
}

// The flat path walks rows in index order. When x's leading dims are not in memory order
// (transformers' q and k as transposed views of one QKV projection, [B, H, S, D] over memory
// [B, S, H, D]), consecutive threads would read rows a whole token apart, and each DRAM page
// would be opened once per head. rope_memory_order permutes the leading dims of x, out and the
// tables alike (an element-wise op over rows: the same result) so that rows run in x's memory
// order: dims of size > 1 sorted by stride, outermost first (stable). q and k are permuted only
// when both sort to the same order. Returns false (nothing changed) when x is already in that
// order or the knob LTX_ROPE_FLAT_ORDER [1] is 0.
inline bool rope_memory_order(at::Tensor* xs, at::Tensor* outs, int count, at::Tensor& cos,
                              at::Tensor& sin) {
  static const int on = env_int("LTX_ROPE_FLAT_ORDER", 1, /*zero_turns_off=*/true);
  if (!on) return false;
  const int64_t lead = xs[0].dim() - 1;
  auto order_of = [&](const at::Tensor& x) {
    std::vector<int64_t> big, order;
    for (int64_t d = 0; d < lead; ++d) (x.size(d) > 1 ? big : order).push_back(d);
    std::stable_sort(big.begin(), big.end(),
                     [&](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
    order.insert(order.end(), big.begin(), big.end());  // size-1 dims first: any place will do
    order.push_back(lead);
    return order;
  };
  std::vector<int64_t> order = order_of(xs[0]);
  for (int i = 1; i < count; ++i) {
    if (xs[i].dim() != xs[0].dim() || order_of(xs[i]) != order) return false;
  }
  // Already in order when the dims of size > 1 keep their relative order.
  int64_t last = -1;
  bool sorted = true;
  for (const int64_t d : order) {
    if (d == lead || xs[0].size(d) == 1) continue;
    sorted = sorted && d > last;
    last = d;
  }
  if (sorted) return false;
  // Only where x and out both keep rows at strides (a dense permutation of more levels than
  // BcastRows holds is read through a contiguous copy, and its default out is contiguous: out
  // then has x's logical order, not its memory order).
  at::Tensor px[2], po[2];
  for (int i = 0; i < count; ++i) {
    px[i] = xs[i].permute(order);
    po[i] = outs[i].permute(order);
    BcastRows b;
    if (!try_strided_rows(px[i], b) || !try_strided_rows(po[i], b)) return false;
  }
  for (int i = 0; i < count; ++i) {
    xs[i] = px[i];
    outs[i] = po[i];
  }
  auto table = [&](at::Tensor t) {
    while (t.dim() < xs[0].dim()) t = t.unsqueeze(0);
    return t.permute(order);
  };
  cos = table(cos);
  sin = table(sin);
  return true;
}

// ---- flat path: one thread per item ----------------------------------------------------------
//
// Threads over q's rows, then k's, one item a thread (`per_row` = the row's items), with no loop
// and no group: each thread finds its row's offsets itself and holds one item packed (an
// interleaved item is one 16-byte vector of x; a split-halves item its two vectors, x and the
// tables read once each). Row offsets by Rows2 (32 bits, up to two levels an operand:
// transformers' and FLUX's layouts at one batch, or contiguous tables) where every operand
// allows it (LTX_ROPE_FLAT_ROWS32 [1]; 31-40 registers in 16 bits against the heads path's
// 56-64), by FastBcast otherwise; LTX_ROPE_FLAT_THREADS [128] a block. The default path on
// every device wherever the vector path applies (run V, H200, bf16, against the heads / rows
// paths: 0.86-0.95x the time at every rope_qk and rope_qk_gqa case; one 16-byte vector a thread
// with its partner vector loaded too, torch.compile's layout, 0.87-0.94x but 1.20x at head dim
// 64; 64-bit offsets 0.95-1.20x; PERFORMANCE.md, change 59).

template <typename T, typename C, typename Rows>
struct RopeFlatParams {
  struct Tensor {
    T* out;
    const T* x;
    Rows x_rows, out_rows, cos_rows, sin_rows;
  } t[2];  // t[1] only for rope_qk
  const C* cos;
  const C* sin;
  RopeRow row;
  bool sin_like_cos;
  FastDiv per_row_div;
  uint32_t per_row;  // threads a row
  uint32_t n0;       // threads of t[0]
  uint32_t n;        // threads in all
};

// A flat thread's row: x, out and the tables' row starts, and its item in the row.
template <typename T, typename C>
struct FlatRow {
  const T* x;
  T* out;
  const C* cos;
  const C* sin;
  int k;  // the thread's index within its row
};

// Thread i's row, or false past the last thread. Fields are selected one by one so that the
// parameter struct is read in place (no local copy).
template <typename T, typename C, typename Rows>
__device__ __forceinline__ bool flat_row(const RopeFlatParams<T, C, Rows>& p, FlatRow<T, C>& r) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.n) return false;
  const bool second = i >= p.n0;
  const uint32_t j = second ? i - p.n0 : i;
  const uint32_t row = p.per_row_div.div(j);
  r.k = static_cast<int>(j - row * p.per_row);
  r.x = (second ? p.t[1].x : p.t[0].x) + (second ? p.t[1].x_rows : p.t[0].x_rows).offset(row);
  r.out = (second ? p.t[1].out : p.t[0].out) +
          (second ? p.t[1].out_rows : p.t[0].out_rows).offset(row);
  const auto cos_off = (second ? p.t[1].cos_rows : p.t[0].cos_rows).offset(row);
  r.cos = p.cos + cos_off;
  r.sin = p.sin + (p.sin_like_cos ? cos_off
                                  : (second ? p.t[1].sin_rows : p.t[0].sin_rows).offset(row));
  return true;
}

template <typename T, typename C, typename Rows, int VEC, bool IL>
__global__ void rope_flat_item_kernel(const RopeFlatParams<T, C, Rows> p) {
  FlatRow<T, C> r;
  if (!flat_row(p, r)) return;
  int pa, pb;
  const bool rot = rope_item_pos<VEC, IL>(p.row, r.k, pa, pb);
  PackedItem<T, VEC, IL> v;
  v.load(r.x, pa, pb, p.row.D);
  PackedItem<T, VEC, IL> o = v;
  if (rot) {  // rotated items lie inside R
    PackedItem<C, VEC, IL> c, s;
    c.load(r.cos, pa, pb, p.row.R);
    s.load(r.sin, pa, pb, p.row.R);
    rope_rotate_packed(v, c, s, o);
  }
  o.store(r.out, pa, pb, p.row.D);
}

// p's operands as Rows2 (32-bit offsets of up to two levels) for `count` tensors; false when
// one does not fit.
template <typename T, typename C, typename Flat>
bool flat_rows32(const RopeParams<T, C>& p, int count, Flat& f) {
  for (int i = 0; i < count; ++i) {
    const RopeTensor<T>& t = p.t[i];
    auto& o = f.t[i];
    if (!rows2(t.x_rows.b, t.rows, p.row.D, o.x_rows) ||
        !rows2(t.out_rows.b, t.rows, p.row.D, o.out_rows) ||
        !rows2(t.cos_rows.b, t.rows, p.row.R, o.cos_rows) ||
        !rows2(t.sin_rows.b, t.rows, p.row.R, o.sin_rows)) {
      return false;
    }
  }
  return true;
}

// Launches the flat path on the vector path when the thread count fits 32 bits; false
// otherwise or when LTX_ROPE_FLAT is 0.
template <typename T, typename C>
bool launch_rope_flat(RopeParams<T, C> p, int count, int D, int R, bool interleaved,
                      cudaStream_t stream) {
  static const int threads = std::clamp(env_int("LTX_ROPE_FLAT_THREADS", 128), 32, 1024);
  static const int rows32 = env_int("LTX_ROPE_FLAT_ROWS32", 1, /*zero_turns_off=*/true);
  if (!rope_flat_on()) return false;
  constexpr int V = kVec16<T>;
  if (!rope_vec_ok(p, count, D, R, V, interleaved)) return false;
  auto go = [&](auto il_c) -> bool {
    constexpr bool IL = decltype(il_c)::value;
    p.row = rope_row<V, IL>(D, R);
    const int64_t per_row = p.row.items;
    const int64_t n0 = p.t[0].rows * per_row;
    const int64_t n = n0 + (count > 1 ? p.t[1].rows : 0) * per_row;
    if (n == 0) return true;
    if (n >= (int64_t{1} << 31)) return false;
    const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
    auto run = [&](auto& f) {
      f.cos = p.cos;
      f.sin = p.sin;
      f.row = p.row;
      f.sin_like_cos = p.sin_like_cos;
      f.per_row_div = FastDiv::make(static_cast<uint32_t>(per_row));
      f.per_row = static_cast<uint32_t>(per_row);
      f.n0 = static_cast<uint32_t>(n0);
      f.n = static_cast<uint32_t>(n);
      for (int i = 0; i < count; ++i) {
        f.t[i].x = p.t[i].x;
        f.t[i].out = p.t[i].out;
      }
      using F = std::remove_reference_t<decltype(f)>;
      rope_flat_item_kernel<T, C, decltype(F::Tensor::x_rows), V, IL>
          <<<blocks, threads, 0, stream>>>(f);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    RopeFlatParams<T, C, Rows2> f32{};
    if (rows32 && flat_rows32(p, count, f32)) {
      run(f32);
      return true;
    }
    RopeFlatParams<T, C, FastBcast> f64{};
    for (int i = 0; i < count; ++i) {
      f64.t[i].x_rows = p.t[i].x_rows;
      f64.t[i].out_rows = p.t[i].out_rows;
      f64.t[i].cos_rows = p.t[i].cos_rows;
      f64.t[i].sin_rows = p.t[i].sin_rows;
    }
    run(f64);
    return true;
  };
  return dispatch_bool(interleaved, go);
}

// Fills p.t[i] for tensor x (already checked) and its output.
template <typename T>
RopeTensor<T> rope_tensor(at::Tensor& out, const at::Tensor& x, const RopeTables& tab,
                          const char* out_name) {
  RopeTensor<T> t{};
  t.out = reinterpret_cast<T*>(out.data_ptr());
  t.x = reinterpret_cast<const T*>(x.data_ptr());
  t.rows = x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
  BcastRows x_rows;
  const bool ok = try_strided_rows(x, x_rows);
  TORCH_INTERNAL_ASSERT(ok, "x rows must be prepared with strided_rows_input");
  t.x_rows = fast_bcast(x_rows, t.rows);
  t.out_rows = fast_bcast(strided_rows_out(out, out_name), t.rows);
  t.cos_rows = fast_bcast(tab.cos_rows, t.rows);
  t.sin_rows = fast_bcast(tab.sin_rows, t.rows);
  return t;
}

// Runs one or two tensors (q, k) with one cos / sin.
void run_rope(at::Tensor* outs, const at::Tensor* xs, const RopeTables* tabs,
              const char** out_names, int count, const at::Tensor& cos, const at::Tensor& sin,
              bool interleaved) {
  const c10::cuda::CUDAGuard guard(xs[0].device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const bool c32 = cos.scalar_type() == at::kFloat;
  const int D = static_cast<int>(xs[0].size(-1));
  const int R = static_cast<int>(tabs[0].R);

  LTX_DISPATCH_FLOAT_TYPES(xs[0].scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto c_tag) {
      using C = typename decltype(c_tag)::type;
      RopeParams<T, C> p{};
      bool sin_like_cos = true;
      for (int i = 0; i < count; ++i) {
        p.t[i] = rope_tensor<T>(outs[i], xs[i], tabs[i], out_names[i]);
        sin_like_cos = sin_like_cos && tabs[i].sin_like_cos;
      }
      p.cos = reinterpret_cast<const C*>(cos.data_ptr());
      p.sin = reinterpret_cast<const C*>(sin.data_ptr());
      p.sin_like_cos = sin_like_cos;
      if (launch_rope_flat(p, count, D, R, interleaved, stream)) return;
      if (launch_rope_heads<T, C>(outs, xs, count, cos, sin, D, R, interleaved, stream)) return;
      launch_rope(p, count, D, R, interleaved, stream);
    };
    if (std::is_same_v<T, float> || c32) {
      run(TypeTag<float>{});
    } else {
      run(TypeTag<T>{});
    }
  });
}

}  // namespace ltx

void rope(at::Tensor& out, const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin,
          bool interleaved) {
  using namespace ltx;
  RopeTables tab = check_rope_args(out, input, cos, sin);
  if (out.numel() == 0) return;
  at::Tensor ins[1] = {input}, outs[1] = {out};
  at::Tensor c = cos, s = sin;
  if (rope_flat_on() && rope_memory_order(ins, outs, 1, c, s)) {
    tab = rope_tables(c, s, ins[0], "input");  // the permuted views' table rows (checked above)
  }
  BcastRows xr;
  const at::Tensor x = strided_rows_input(ins[0], xr);
  const char* names[1] = {"out"};
  run_rope(outs, &x, &tab, names, 1, c, s, interleaved);
}

void rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
             const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  using namespace ltx;
  RopeQkTables tab = check_rope_qk_args(q_out, k_out, q, k, cos, sin);
  if (q.numel() == 0 && k.numel() == 0) return;
  at::Tensor ins[2] = {q, k}, outs[2] = {q_out, k_out};
  at::Tensor c = cos, s = sin;
  if (rope_flat_on() && rope_memory_order(ins, outs, 2, c, s)) {
    tab = {rope_tables(c, s, ins[0], "q"), rope_tables(c, s, ins[1], "k")};  // checked above
  }
  BcastRows xr;
  const at::Tensor xs[2] = {strided_rows_input(ins[0], xr), strided_rows_input(ins[1], xr)};
  const RopeTables tabs[2] = {tab.q, tab.k};
  const char* names[2] = {"q_out", "k_out"};
  run_rope(outs, xs, tabs, names, 2, c, s, interleaved);
}
