// Rotary-embedding math shared by rope.cu and rms_norm_rope.cu: how a row is cut into items
// that each hold whole rotation pairs, item loads and stores, and the rotation itself (row
// offsets of strided / broadcast operands: common/fast_rows.cuh).
//
// Pairs, as the models define them (cos / sin already repeated per pair, full rotary dim R; or,
// with pair tables, one value per pair: R / 2 of them, see load_pair_item):
//   interleaved (LTX-Video, FLUX `apply_rotary_emb`): pairs (2i, 2i+1);
//   split halves (transformers `apply_rotary_pos_emb`, rotate_half): pairs (i, i + R/2).
// For a pair (a, b) at positions (p, q):
//   out[p] = a*cos[p] - b*sin[p], out[q] = b*cos[q] + a*sin[q].
// Elements R..D-1 are not rotated (partial rotary) and pass through.
#pragma once

#include <cstdint>

#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

// An item is F = 2U floats that one thread loads, rotates and stores together; memory is
// accessed VEC elements at a time (VEC = 1: the scalar path).
//   interleaved: item k is elements [kF, kF + F): U adjacent pairs. It is rotated when
//     k < n_rot = R / F (R is a multiple of F: vector path when VEC divides R; F = 2 otherwise),
//     so no item straddles R.
//   split halves: items k < n_rot = R / (2U) are [kU, kU + U) and their partners
//     [R/2 + kU, R/2 + kU + U); later items are the pass-through tail in runs of F elements
//     [R + jF, R + jF + F), j = k - n_rot, as two halves of U.
// An access that starts at or past the end of the row is skipped (loads give 0). On the vector
// path VEC divides D and R/2 (split) or R (interleaved), so an access is never cut by the end.
template <int VEC, bool IL>
struct RopeItem {
  static constexpr int U = IL ? (VEC >= 2 ? VEC / 2 : 1) : VEC;
  static constexpr int F = 2 * U;
};

// The row geometry, computed on the host (rope_row below) for the chosen VEC.
struct RopeRow {
  int D;      // elements per row (normalized / rotated dim)
  int R;      // rotary dim: even, 2 <= R <= D
  int n_rot;  // items that rotate
  int items;  // items per row
};

template <int VEC, bool IL>
inline RopeRow rope_row(int D, int R) {
  using I = RopeItem<VEC, IL>;
  RopeRow g;
  g.D = D;
  g.R = R;
  g.n_rot = IL ? R / I::F : (R / 2) / I::U;
  g.items = g.n_rot + (D - R + I::F - 1) / I::F;
  return g;
}

// Positions of item k's two halves (pa: first U or all F elements, pb: second U); true when it
// rotates.
template <int VEC, bool IL>
__device__ __forceinline__ bool rope_item_pos(const RopeRow& g, int k, int& pa, int& pb) {
  using I = RopeItem<VEC, IL>;
  if (k < g.n_rot) {
    pa = IL ? k * I::F : k * I::U;
    pb = IL ? pa + I::U : g.R / 2 + k * I::U;
    return true;
  }
  pa = g.R + (k - g.n_rot) * I::F;
  pb = pa + I::U;
  return false;
}

// N values at p[s..s+N) in accesses of VEC elements; accesses at or past `limit` give 0.
template <typename T, int VEC, int N>
__device__ __forceinline__ void load_span(const T* p, int s, int limit, float* f) {
  static_assert(N % VEC == 0, "a span is whole accesses");
#pragma unroll
  for (int a = 0; a < N / VEC; ++a) {
    float t[VEC];
    if (s + a * VEC < limit) {
      load_floats<T, VEC>(p + s + a * VEC, t);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) t[i] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) f[a * VEC + i] = t[i];
  }
}

template <typename T, int VEC, int N>
__device__ __forceinline__ void store_span(T* p, int s, int limit, const float* f) {
#pragma unroll
  for (int a = 0; a < N / VEC; ++a) {
    if (s + a * VEC < limit) {
      float t[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) t[i] = f[a * VEC + i];
      store_floats<T, VEC>(p + s + a * VEC, t);
    }
  }
}

// An item of a row (x, out, weight, cos or sin) at the positions given by rope_item_pos.
template <typename T, int VEC, bool IL>
__device__ __forceinline__ void load_item(const T* row, int pa, int pb, int limit,
                                          float (&f)[RopeItem<VEC, IL>::F]) {
  constexpr int U = RopeItem<VEC, IL>::U;
  if constexpr (IL) {
    load_span<T, VEC, 2 * U>(row, pa, limit, f);
  } else {
    load_span<T, VEC, U>(row, pa, limit, f);
    load_span<T, VEC, U>(row, pb, limit, f + U);
  }
}

template <typename T, int VEC, bool IL>
__device__ __forceinline__ void store_item(T* row, int pa, int pb, int limit,
                                           const float (&f)[RopeItem<VEC, IL>::F]) {
  constexpr int U = RopeItem<VEC, IL>::U;
  if constexpr (IL) {
    store_span<T, VEC, 2 * U>(row, pa, limit, f);
  } else {
    store_span<T, VEC, U>(row, pa, limit, f);
    store_span<T, VEC, U>(row, pb, limit, f + U);
  }
}

// An item's cos or sin values from a pair table (R / 2 values a row, one per rotation pair):
// the item's U pairs are pairs (IL ? pa / 2 : pa) + j of the row, j < U, each value given to
// both elements of its pair, at the positions load_item would have filled from a full table.
// One access of U values (the item's first pair is a multiple of U: the table row and its
// strides must allow U-element accesses on the vector path).
template <typename T, int VEC, bool IL>
__device__ __forceinline__ void load_pair_item(const T* row, int pa,
                                               float (&f)[RopeItem<VEC, IL>::F]) {
  constexpr int U = RopeItem<VEC, IL>::U;
  float h[U];
  load_floats<T, U>(row + (IL ? pa / 2 : pa), h);
#pragma unroll
  for (int j = 0; j < U; ++j) {
    f[IL ? 2 * j : j] = h[j];
    f[IL ? 2 * j + 1 : U + j] = h[j];
  }
}

// Rotates the U pairs of an item in place: interleaved pairs are (2j, 2j+1) of the item,
// split-halves pairs (j, U + j). c and s hold cos / sin at the same positions as v.
template <int U, bool IL>
__device__ __forceinline__ void rope_rotate(float (&v)[2 * U], const float (&c)[2 * U],
                                            const float (&s)[2 * U]) {
#pragma unroll
  for (int j = 0; j < U; ++j) {
    const int p = IL ? 2 * j : j;
    const int q = IL ? 2 * j + 1 : U + j;
    const float a = v[p], b = v[q];
    v[p] = a * c[p] - b * s[p];
    v[q] = b * c[q] + a * s[q];
  }
}

}  // namespace ltx
