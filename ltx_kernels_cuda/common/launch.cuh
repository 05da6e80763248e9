// Host-side launch helpers shared by the CUDA launchers: how many threads work on one row, and
// the switches that turn run-time choices (vector width, registers per thread) into template
// arguments, so that one kernel template with VEC = 1 is also the scalar path.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "common/op_checks.h"
#include "ltx_kernels_cuda/common/rows.cuh"

namespace ltx {

template <typename T>
struct TypeTag {
  using type = T;
};

inline Rows to_rows(const RowLayout& l) { return Rows{l.inner, l.outer_stride, l.inner_stride}; }

// How a row of `nvec` vectors is spread over threads: `group` threads per row, `chunks`
// vectors per thread kept in registers (0: too long to keep, stream it twice), and
// `rows_per_block` rows per block.
struct RowConfig {
  int group;
  int chunks;
  int rows_per_block;
};

inline int next_pow2(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

inline int round_chunks(int c) { return c <= 1 ? 1 : c <= 2 ? 2 : c <= 4 ? 4 : c <= 8 ? 8 : 0; }

// Tuning knobs, read once from the environment (defaults in brackets): LTX_VEC_PER_THREAD
// [4] vectors each thread keeps in registers, LTX_BLOCK_THREADS [256] threads per block when
// several rows share a block. For experiments (tools/gpu_run.sh tune); the defaults are what the
// measurements in PERFORMANCE.md chose.
// A value that is not positive gives the fallback, unless `zero_turns_off`: then an unset
// variable gives the fallback and a set one its value (0 turns a path off).
inline int env_int(const char* name, int fallback, bool zero_turns_off = false) {
  const char* v = std::getenv(name);
  if (zero_turns_off) return v ? std::atoi(v) : fallback;
  const int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : fallback;
}

// Aim for a few vectors in flight per thread: enough independent 16-byte loads to cover memory
// latency, few enough registers for full occupancy. Short rows use sub-warp groups (several
// rows per warp) so that no lane idles; long rows use up to 1024 threads.
// `vec_per_thread` / `threads` > 0 override the knobs (small grids and AdaLN, below).
inline RowConfig choose_row_config(int nvec, int vec_per_thread = 0, int threads = 0) {
  static const int default_per_thread = env_int("LTX_VEC_PER_THREAD", 4);
  static const int default_block_threads = env_int("LTX_BLOCK_THREADS", 256);
  const int per_thread = vec_per_thread > 0 ? vec_per_thread : default_per_thread;
  const int block_threads = threads > 0 ? threads : default_block_threads;
  RowConfig c{};
  const int want = (nvec + per_thread - 1) / per_thread;
  if (want <= 32) {
    c.group = next_pow2(want < 1 ? 1 : want);
  } else {
    c.group = (want + 31) / 32 * 32;
  }
  if (c.group > 1024) c.group = 1024;
  c.chunks = round_chunks((nvec + c.group - 1) / c.group);
  if (c.group >= 32 && c.chunks > 0) {
    // Trim the group to the chunk count actually used (e.g. 3072 bf16: 96 threads x 4).
    c.group = ((nvec + c.chunks - 1) / c.chunks + 31) / 32 * 32;
  }
  c.rows_per_block = c.group >= block_threads ? 1 : block_threads / c.group;
  return c;
}

// An attribute of the current device, queried once per device (launchers call it on every
// launch).
template <cudaDeviceAttr Attr>
inline int device_attr() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};
  int dev = 0, v = 0;
  C10_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < kMaxDevices && (v = cache[dev].load(std::memory_order_relaxed)) > 0) return v;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&v, Attr, dev));
  if (dev < kMaxDevices) cache[dev].store(v, std::memory_order_relaxed);
  return v;
}

// Streaming multiprocessors of the current device.
inline int device_sms() { return device_attr<cudaDevAttrMultiProcessorCount>(); }

// How the row kernels (RMSNorm, AdaLN) launch `rows` rows of `nvec` vectors, and whether the
// per-row operands (weight, scale / shift) are loaded with the row (preload). Grids of at most
// LTX_SMALL_GRID_PER_SM [2] blocks per SM under choose_row_config ("small grids": one wave)
// preload, so that a row's chain is one memory round trip (two blocks of 256 threads per SM
// fit the preloading instances' registers). With `one_vec_small`, small grids also take
// LTX_SMALL_GRID_VEC [1] vectors per thread instead (0: keep choose_row_config's): few rows
// leave most SMs idle, and each busy SM issues every instruction of its rows' 4-vector threads
// (ncu, run G: at 128 rows of 4096 bf16, 2 rows a block on 64 SMs took 2.1x the active cycles
// of Triton's one row a block of 512 threads on 128). One vector per thread spreads the rows
// over up to 4x the threads and SMs. Run H: RMSNorm 3-11% faster at 1-128 tokens, AdaLN 11%
// slower at 1x1024x2048 (so AdaLN keeps its configuration); larger thresholds lost more than
// they won (PERFORMANCE.md, change 22). `big_threads` > 0: the block size of grids that are
// not small (AdaLN: 128, change 24).
struct RowLaunch {
  RowConfig cfg;
  bool preload;
};

inline RowLaunch choose_row_launch(int nvec, int64_t rows, bool one_vec_small,
                                   int big_threads = 0) {
  static const int small_vec = env_int("LTX_SMALL_GRID_VEC", 1, /*zero_turns_off=*/true);
  static const int small_per_sm = env_int("LTX_SMALL_GRID_PER_SM", 2);
  RowConfig c = choose_row_config(nvec);
  const int64_t blocks = (rows + c.rows_per_block - 1) / c.rows_per_block;
  if (blocks > static_cast<int64_t>(device_sms()) * small_per_sm) {
    return {big_threads > 0 ? choose_row_config(nvec, 0, big_threads) : c, false};
  }
  if (one_vec_small && small_vec > 0) c = choose_row_config(nvec, small_vec);
  return {c, true};
}

// The staged path of the row kernels (common/stage.cuh): `group` threads per row, a power of
// two (up to 32 the reductions are shuffles; several warps a row combine their sums through
// shared memory, with block barriers), `rows_per_block` rows per block, `bytes` of dynamic
// shared memory per block. Knobs: LTX_STAGE_VEC [4] vectors per thread the group is sized
// for, LTX_STAGE_BLOCK_THREADS [128] threads per block at most (one row a block when a row's
// group is larger); per op (StageKnobs) whether it is taken at all and the largest group. It
// needs cp.async (sm_80+) and 16-byte vectors.
struct StageConfig {
  int group = 0;
  int group_log2 = 0;
  int rows_per_block = 0;
  int bytes = 0;
  bool ok = false;
};

// The staged kernels' static shared memory: group_sum's one float per warp.
constexpr int kStageReduceFloats = 32;
// A block's shared memory without opting in to more (48 KB, static and dynamic together):
// what the staged path's dynamic shared memory stays within.
constexpr int kMaxStageBytes = 48 * 1024 - kStageReduceFloats * static_cast<int>(sizeof(float));

// When an op takes the staged path and how: `mode` 0 never, 1 every grid, 2 grids beyond one
// wave (one-wave grids keep choose_row_launch's preloading path) of at least
// `min_rows_per_sm` rows per SM, for rows of at most `max_vec` 16-byte vectors, in groups of
// at most `max_group` threads a row. Read from the environment as VAR, VAR_MAX_VEC,
// VAR_MAX_GROUP and VAR_MIN_ROWS_PER_SM (VAR: LTX_STAGE for RMSNorm, LTX_ADALN_STAGE,
// LTX_GATED_STAGE), defaults from the launcher: what PERFORMANCE.md's runs J and K chose. Run
// J (H200, bf16, RMSNorm, one warp a row): 2-5% faster than the register path at D = 2048
// beyond one wave and level at 3072, but 2-17% slower at 4096 and 18-39% slower at 8192, and
// 28-55% slower in one-wave grids.
struct StageKnobs {
  int mode;
  int max_vec;
  int max_group;
  int min_rows_per_sm;
};

inline StageKnobs stage_knobs(const std::string& var, int mode, int max_vec, int max_group,
                              int min_rows_per_sm = 0) {
  const int g = env_int((var + "_MAX_GROUP").c_str(), max_group);
  return {env_int(var.c_str(), mode, /*zero_turns_off=*/true),
          env_int((var + "_MAX_VEC").c_str(), max_vec), next_pow2(std::min(1024, std::max(1, g))),
          env_int((var + "_MIN_ROWS_PER_SM").c_str(), min_rows_per_sm, /*zero_turns_off=*/true)};
}

inline bool stage_wanted(const StageKnobs& k, bool one_wave, int nvec, int64_t rows) {
  if (k.mode <= 0 || nvec > k.max_vec) return false;
  if (k.mode == 2 &&
      (one_wave || rows < static_cast<int64_t>(k.min_rows_per_sm) * device_sms())) {
    return false;
  }
  return device_attr<cudaDevAttrComputeCapabilityMajor>() >= 8;
}

// `bytes_for(rows_per_block)` lays a block of that many rows out (StagePlan: it may choose
// block-wide slots that depend on it) and returns its size; it is called for halving row
// counts until one fits, and the last call's layout is the one launched.
template <typename BytesFor>
StageConfig stage_config(int nvec, const StageKnobs& k, BytesFor bytes_for) {
  static const int per_thread = env_int("LTX_STAGE_VEC", 4);
  static const int block_threads = env_int("LTX_STAGE_BLOCK_THREADS", 128);
  StageConfig c;
  const int want = (nvec + per_thread - 1) / per_thread;
  c.group = std::min(k.max_group, next_pow2(want < 1 ? 1 : want));
  while ((1 << c.group_log2) < c.group) ++c.group_log2;
  c.rows_per_block = block_threads > c.group ? block_threads / c.group : 1;
  for (; c.rows_per_block >= 1; c.rows_per_block /= 2) {
    c.bytes = bytes_for(c.rows_per_block);
    if (c.bytes <= kMaxStageBytes) {
      c.ok = true;
      break;
    }
  }
  return c;
}

// Launches a staged row kernel over `rows` rows as stage_config chose.
template <typename Kernel, typename Params>
void launch_staged(Kernel kernel, const StageConfig& c, int64_t rows, const Params& p,
                   cudaStream_t stream) {
  const int64_t blocks = (rows + c.rows_per_block - 1) / c.rows_per_block;
  kernel<<<static_cast<unsigned>(blocks), c.group * c.rows_per_block, c.bytes, stream>>>(p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// How the streaming kernels (activations, gated_residual) spread rows of `nvec` vectors over
// threads, `unroll` vectors per thread.
struct StreamConfig {
  int group;           // threads per row tile
  int rows_per_block;  // row tiles per block
  int64_t tiles;       // tiles per row
  int64_t blocks;      // (row blocks) x tiles
};

// choose_stream_config's default (and largest) block, for the kernels' __launch_bounds__.
constexpr int kStreamThreads = 256;

// Short rows: a power-of-two group of up to 32 threads per row, several rows per block, so no
// lane idles on rows of a few vectors. Long rows: split into the fewest tiles of at most
// `block_threads` threads, balanced, each a multiple of a warp (e.g. 5125 scalars: 6 tiles of
// 224 threads x 4, not 5 full tiles and one of 5 elements).
inline StreamConfig choose_stream_config(int64_t nvec, int64_t rows, int unroll,
                                         int block_threads = kStreamThreads) {
  StreamConfig c{};
  const int64_t want = std::max<int64_t>(1, (nvec + unroll - 1) / unroll);  // threads per row
  if (want <= 32) {
    c.group = next_pow2(static_cast<int>(want));
    c.tiles = 1;
  } else {
    c.tiles = (want + block_threads - 1) / block_threads;
    const int64_t per_tile = (want + c.tiles - 1) / c.tiles;
    c.group = static_cast<int>((per_tile + 31) / 32 * 32);
  }
  c.rows_per_block = std::max(1, block_threads / c.group);
  c.blocks = (rows + c.rows_per_block - 1) / c.rows_per_block * c.tiles;
  return c;
}

template <int N>
using IntC = std::integral_constant<int, N>;

// Calls f(IntC<V>) or f(IntC<1>).
template <int V, typename F>
void dispatch_vec(int vec, F&& f) {
  if (vec == V) {
    f(IntC<V>{});
  } else {
    f(IntC<1>{});
  }
}

template <typename F>
void dispatch_chunks(int chunks, F&& f) {
  switch (chunks) {
    case 1: f(IntC<1>{}); break;
    case 2: f(IntC<2>{}); break;
    case 4: f(IntC<4>{}); break;
    case 8: f(IntC<8>{}); break;
    default: f(IntC<0>{}); break;
  }
}

// Whether `kernel` can be launched with `threads` threads per block. Its register use can lower
// the limit below 1024: a block holds at most 64K registers, so a row-cached kernel using 96
// registers per thread runs at most 640 threads per block. Up to 256 threads always fit.
template <typename Kernel>
bool block_fits(Kernel kernel, int threads) {
  if (threads <= 256) return true;
  cudaFuncAttributes attr;
  C10_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  return threads <= attr.maxThreadsPerBlock;
}

// Launches a row kernel (one group of cfg.group threads per row, cfg.rows_per_block rows per
// block) over `rows` rows, as choose_row_launch chose. kernel_for(IntC<VEC>, IntC<CHUNKS>,
// std::bool_constant<PRELOAD>) names the instance for the chosen vector width, registers per
// thread and operand preload (only with the row cached: CHUNKS > 0); when that instance's
// register use does not fit the block, the streaming instance (CHUNKS = 0) runs instead.
template <int V, typename Params, typename KernelFor>
void launch_rows(int vec, const RowLaunch& launch, int64_t rows, const Params& p,
                 cudaStream_t stream, KernelFor kernel_for) {
  const RowConfig& cfg = launch.cfg;
  const int64_t blocks = (rows + cfg.rows_per_block - 1) / cfg.rows_per_block;
  const int threads = cfg.group * cfg.rows_per_block;
  dispatch_vec<V>(vec, [&](auto vec_c) {
    dispatch_chunks(cfg.chunks, [&](auto chunks_c) {
      auto kernel = kernel_for(vec_c, chunks_c, std::false_type{});
      if constexpr (decltype(chunks_c)::value > 0) {
        if (launch.preload) kernel = kernel_for(vec_c, chunks_c, std::true_type{});
        if (!block_fits(kernel, threads)) kernel = kernel_for(vec_c, IntC<0>{}, std::false_type{});
      }
      kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p);
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace ltx
