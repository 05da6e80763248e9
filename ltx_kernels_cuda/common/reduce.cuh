// Sum reductions over a group of G consecutive threads that work on one row.
//
// G is a power of two up to 32 (sub-warp groups, for short rows: several rows per warp) or a
// multiple of 32 up to 1024 (whole warps, combined through shared memory).
#pragma once

namespace ltx {

// `mask`: the warp's lanes that exist (all but in a block of fewer than 32 threads).
__device__ __forceinline__ float warp_sum(float v, int width, unsigned mask = 0xffffffffu) {
  // xor-shuffles stay inside aligned groups of `width` lanes.
  for (int offset = width / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(mask, v, offset);
  }
  return v;
}

// The lanes of the calling warp that exist: all 32, but in a block of fewer threads.
__device__ __forceinline__ unsigned lanes_mask() {
  return blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1u;
}

// Sum of `v` over the G threads of the calling thread's group; every thread of the group gets
// the total. `smem` holds one float per warp of the block. The whole block must call it
// (it synchronizes when G > 32). `mask`: as for warp_sum (only G <= 32 can be a block of fewer
// than 32 threads).
__device__ __forceinline__ float group_sum(float v, int G, float* smem,
                                           unsigned mask = 0xffffffffu) {
  if (G <= 32) return warp_sum(v, G, mask);
  v = warp_sum(v, 32);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps_per_group = G / 32;
  const int first_warp = (warp / warps_per_group) * warps_per_group;
  __syncthreads();  // smem may still be read by an earlier call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < warps_per_group; ++w) total += smem[first_warp + w];
  return total;
}

// Sums of the N values `v` over the threads of the calling thread's row in a block of
// blockDim.y rows of blockDim.x threads each (a power of two up to 32, or a multiple of 32 up
// to 1024): every thread of the row gets the totals, in place. `smem` holds one float per warp
// of the block for each value (value n's at smem + n * stride), and no other call may use it
// before the block's next barrier (LayerNorm's two sums take two). The whole block must call
// it (one barrier for all N when blockDim.x > 32).
template <int N>
__device__ __forceinline__ void block_rows_sums(float (&v)[N], float* smem, int stride) {
  const int width = blockDim.x;
  if (width <= 32) {
#pragma unroll
    for (int n = 0; n < N; ++n) v[n] = warp_sum(v[n], width);
    return;
  }
  const int warps = width / 32;
  const int lane = threadIdx.x % 32;
  float* mine = smem + threadIdx.y * warps;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    v[n] = warp_sum(v[n], 32);
    if (lane == 0) mine[n * stride + threadIdx.x / 32] = v[n];
  }
  __syncthreads();
  // The row's warp sums, one a lane, summed by shuffles: a load and five steps, not a loop of
  // `warps` loads.
#pragma unroll
  for (int n = 0; n < N; ++n) v[n] = warp_sum(lane < warps ? mine[n * stride + lane] : 0.f, 32);
}

// block_rows_sums of one value.
__device__ __forceinline__ float block_rows_sum(float v, float* smem) {
  float a[1] = {v};
  block_rows_sums<1>(a, smem, 0);
  return a[0];
}

}  // namespace ltx
