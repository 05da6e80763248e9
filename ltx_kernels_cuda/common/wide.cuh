// The row kernels' "wide" path: one 16-byte vector of a row per thread, held in registers
// from its load to its write, the whole row in one block (rows of more than 32 vectors) or a
// power-of-two group of lanes of one warp (shorter rows, several a block).
//
// Why (run P's ncu of the gated AdaLN at LTX 2B, 2 x 2688 x 2048 bf16): torch.compile's
// kernel for it holds one vector a thread in 30 registers and runs at 89% occupancy, 8 rows of
// 8 KB in flight per SM, and issues 10.0 M instructions; the staged path (common/stage.cuh)
// issues 14.7 M (cp.async, shared-memory round trips, 4 vectors a thread walked in loops) in
// 68 registers at 39% occupancy and took 25.8 us against 22.4. The register path with one
// vector a thread (change 10) was slower still because it was bounded to 64 registers and four
// blocks a SM. Here the kernels are bounded to 32 registers (__launch_bounds__(1024, 2): full
// occupancy with blocks of up to 1024 threads), everything a thread loads is issued before its
// first store, and a row's sum takes one barrier (wide_sum: a fresh buffer per reduction).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/reduce.cuh"

namespace ltx {

// Threads per block at most (a row of 1024 vectors: 8192 16-bit values, 4096 fp32).
constexpr int kWideMaxThreads = 1024;
// Blocks of short rows (groups of at most 32 lanes): this many threads.
constexpr int kWideShortBlock = 128;

// When a row kernel takes the wide path: `mode` 0 never, 1 every grid, 2 grids beyond one wave
// (one-wave grids keep choose_row_launch's preloading path), for rows of at most `max_vec`
// 16-byte vectors; by default on devices of compute capability `min_major` and up (where it
// was measured), on any device when the mode is set in the environment. Read as VAR and
// VAR_MAX_VEC (VAR: LTX_RMS_WIDE, LTX_ADALN_WIDE, LTX_GATED_WIDE).
struct WideKnobs {
  int mode;
  int max_vec;
  bool forced;  // VAR set: whatever the device
};

// `max_vec` is also the most the kernel's block allows (its __launch_bounds__).
inline WideKnobs wide_knobs(const std::string& var, int mode, int max_vec) {
  WideKnobs k;
  k.forced = std::getenv(var.c_str()) != nullptr;
  k.mode = env_int(var.c_str(), mode, /*zero_turns_off=*/true);
  k.max_vec = std::min(max_vec, env_int((var + "_MAX_VEC").c_str(), max_vec));
  return k;
}

inline bool wide_wanted(const WideKnobs& k, bool one_wave, int nvec, int64_t rows,
                        int min_major = 9) {
  if (k.mode <= 0 || nvec > k.max_vec || rows < 1) return false;
  if (k.mode == 2 && one_wave) return false;
  return k.forced || device_attr<cudaDevAttrComputeCapabilityMajor>() >= min_major;
}

// `group` lanes a row: a power of two up to 32 (log2 in group_log2), else a multiple of 32 with
// one row a block. Lanes at and past the row's vector count hold nothing.
struct WideConfig {
  int group;
  int group_log2;
  int rows_per_block;
};

inline WideConfig wide_config(int nvec) {
  WideConfig c{};
  if (nvec <= 32) {
    c.group = next_pow2(std::max(1, nvec));
    while ((1 << c.group_log2) < c.group) ++c.group_log2;
    c.rows_per_block = kWideShortBlock / c.group;
  } else {
    c.group = (nvec + 31) / 32 * 32;
    c.rows_per_block = 1;
  }
  return c;
}

template <typename Kernel, typename Params>
void launch_wide(Kernel kernel, const WideConfig& c, int64_t rows, const Params& p,
                 cudaStream_t stream) {
  const int64_t blocks = (rows + c.rows_per_block - 1) / c.rows_per_block;
  kernel<<<static_cast<unsigned>(blocks), c.group * c.rows_per_block, 0, stream>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// A thread's place in the wide layout: its row of the block (`sub`) and its vector (`lane`).
struct WideSlot {
  int sub;
  int lane;
};

__device__ __forceinline__ WideSlot wide_slot(int group, int group_log2) {
  if (group <= 32) return {static_cast<int>(threadIdx.x) >> group_log2,
                           static_cast<int>(threadIdx.x) & (group - 1)};
  return {0, static_cast<int>(threadIdx.x)};
}

// Sum of `v` over the `group` lanes of the calling thread's row (every lane gets it). The whole
// block calls it. `smem`: one float per warp, not used by an earlier call in this launch (so no
// barrier is needed before writing it): a kernel that reduces twice passes two buffers.
__device__ __forceinline__ float wide_sum(float v, int group, float* smem) {
  if (group <= 32) return warp_sum(v, group);
  v = warp_sum(v, 32);
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < group / 32; ++w) total += smem[w];
  return total;
}

}  // namespace ltx
