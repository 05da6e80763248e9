// The dense row path shared by the row kernels (adaln.cu, rms_norm.cu, rms_norm_rope.cu): rows
// held one 16-byte vector a thread (or VPT vectors, VPT threads' worth apart), a block of
// blockDim.y rows of blockDim.x threads, so that a thread's row and vector come from its thread
// index with no division; 32-bit offsets; each row's sums by shuffles and one barrier
// (block_rows_sums, common/reduce.cuh). torch.compile's and Liger's layout for these ops,
// specialized as their kernels are: no run-time walk of broadcast levels, 1 / D a parameter
// (PERFORMANCE.md, changes 41 and 44-47).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/rows.cuh"

namespace ltx {

// Threads a block at most: the dense kernels' __launch_bounds__ (512 threads, 4 blocks an SM
// at 32 registers: compile's and Liger's occupancy at these shapes).
constexpr int kDenseMaxThreads = 512;

// When a dense path runs, read once from the environment as VAR, VAR_MAX_VEC and VAR_MAX_MB
// (VAR: LTX_ADALN_DENSE, LTX_GATED_DENSE, LTX_RMS_DENSE, LTX_NORM_ROPE_DENSE): `mode` 0 never,
// 1 every grid, 2 grids beyond one wave; rows of at most `max_vec` vectors (VAR_MAX_VEC can
// lower it, or raise it up to `cap`, the most the launcher takes: `max_vec` unless given);
// `max_mb` > 0: a size limit the launcher applies where it says. Taken on sm_90 and newer, or
// on any device when VAR is set (`forced`).
struct DenseKnobs {
  int mode;
  int max_vec;
  int max_mb;
  bool forced;
};

inline DenseKnobs dense_knobs(const std::string& var, int mode, int max_vec, int max_mb,
                              int cap = 0) {
  DenseKnobs k;
  k.forced = std::getenv(var.c_str()) != nullptr;
  k.mode = env_int(var.c_str(), mode, /*zero_turns_off=*/true);
  k.max_vec = std::min(std::max(cap, max_vec), env_int((var + "_MAX_VEC").c_str(), max_vec));
  k.max_mb = env_int((var + "_MAX_MB").c_str(), max_mb, /*zero_turns_off=*/true);
  return k;
}

// Whether the knobs take the dense path for rows of `nvec` vectors (`one_wave`: the grid the
// other paths would launch runs in one wave).
inline bool dense_wanted(const DenseKnobs& k, int nvec, bool one_wave) {
  if (k.mode <= 0 || (k.mode == 2 && one_wave) || nvec < 1 || nvec > k.max_vec) return false;
  return k.forced || device_attr<cudaDevAttrComputeCapabilityMajor>() >= 9;
}

// Whether `bytes` (a launcher's measure of the grid, x's bytes) is over the knobs' size limit
// (DenseKnobs::max_mb > 0: that many MiB; 0: no limit).
inline bool dense_over_mb(const DenseKnobs& k, int64_t bytes) {
  return k.max_mb > 0 && bytes > (int64_t{k.max_mb} << 20);
}

// Rows `r` of a tensor at r * stride (one level, D elements each) addressed in 32 bits: `rows`
// rows of `D`, every element below 2^31. `stride` gets the row stride. (Also the test of
// activation.cu's flat kernel for its x and out.)
inline bool dense_rows(const Rows& r, int64_t rows, int64_t D, uint32_t& stride) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  const int64_t s = r.outer_stride;
  if (r.inner != 1 || s < D || rows < 1 || rows >= kLimit) return false;
  if ((rows - 1) * s + D > kLimit) return false;
  stride = static_cast<uint32_t>(s);
  return true;
}

// A dense launch's block: `width` threads a row (a power of two up to 32, else whole warps),
// `vpt` vectors a thread, `rows_per_block` rows. The block's threads: `threads` when > 0 (an
// op's own choice), else LTX_DENSE_BLOCK_THREADS [512] (compile's at LTX's shape); rows of
// more vectors than that take one block each.
struct DenseBlock {
  int width;
  int vpt;
  int rows_per_block;
};

inline DenseBlock dense_block(int nvec, int vpt, int threads = 0) {
  static const int block_threads =
      std::clamp(env_int("LTX_DENSE_BLOCK_THREADS", kDenseMaxThreads), 32, kDenseMaxThreads);
  DenseBlock b;
  b.vpt = vpt;
  const int want = (nvec + vpt - 1) / vpt;
  b.width = want <= 32 ? next_pow2(want) : (want + 31) / 32 * 32;
  b.rows_per_block = std::max(1, (threads > 0 ? threads : block_threads) / b.width);
  return b;
}

}  // namespace ltx
