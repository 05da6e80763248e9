// Rows staged in shared memory by asynchronous copies (the row kernels' "staged" path).
//
// The register-cached path (CHUNKS > 0 in rms_norm.cu / adaln.cu) holds a thread's share of a
// row as floats, 55-64 registers a thread: at most 4 blocks of 256 threads per SM, about 64 KB
// of a row in flight per SM, and the per-column operands (weight, scale / shift) are loaded
// after the reduction, each chunk's load behind the previous chunk's store. The staged path
// copies the row and those operands straight from global to shared memory with cp.async
// (sm_80+; no registers hold the data in flight), all issued at the start, and works from
// shared memory: the row is kept in its own 16-bit dtype (half the bytes of floats), so shared
// memory, not registers, bounds the rows in flight (up to ~200 KB per SM), and the write phase
// waits on no global load. One warp (or a power-of-two part of one) per row by default: the
// reductions are shuffles, no block barrier but one after the broadcast operands' copies
// (several warps a row combine their sums through shared memory: stage_config).
#pragma once

#include <cstdint>
#include <vector>

#include "vec.cuh"

namespace ltx {

// Copies 16 bytes global -> shared without holding them in registers (cp.async, sm_80+; L2
// only). ONCE (data this kernel reads once, LTX_LOAD_ONCE in vec.cuh set): with the L2
// evict-first policy. Below sm_80 a plain load and store (the host does not pick the staged
// path there; the code stays correct).
template <bool ONCE = false>
__device__ __forceinline__ void copy16_async(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  if constexpr (ONCE && LTX_LOAD_ONCE != 0) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(s),
                 "l"(gmem_src), "l"(l2_evict_first_policy())
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem_src)
                 : "memory");
  }
#else
  *reinterpret_cast<uint4*>(smem_dst) = *reinterpret_cast<const uint4*>(gmem_src);
#endif
}

// Copies one vector of N values of T (16 or 32 bytes, aligned to 16).
template <typename T, int N, bool ONCE = false>
__device__ __forceinline__ void copy_vec_async(T* smem_dst, const T* gmem_src) {
  static_assert((sizeof(T) * N) % 16 == 0, "staged vectors are whole 16-byte pieces");
#pragma unroll
  for (int b = 0; b < static_cast<int>(sizeof(T) * N); b += 16) {
    copy16_async<ONCE>(reinterpret_cast<char*>(smem_dst) + b,
                       reinterpret_cast<const char*>(gmem_src) + b);
  }
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are pending; groups complete in
// order, so N = 1 waits for all but the newest. Completed copies are visible to this thread;
// other threads see them after a barrier.
template <int N>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Where a block's staged operands lie in its dynamic shared memory, in bytes. Block-wide
// operands (the same [D] row for every row of the block: weights, and modulation rows that
// the host found uniform over the block) come first, then one slot per row of the block.
// Every offset and stride is a multiple of 16.
struct StageSlot {
  int off = -1;        // byte offset of the operand's first (or only) row; -1: not staged
  int row_stride = 0;  // bytes between the slots of consecutive rows of the block; 0: block-wide

  // __host__ too: the launchers ask which slots are staged (a __device__-only function called
  // from host code compiles to a call of exit(1) there).
  __host__ __device__ __forceinline__ bool staged() const { return off >= 0; }
  template <typename T>
  __device__ __forceinline__ T* at(unsigned char* smem, int sub) const {
    return reinterpret_cast<T*>(smem + off + sub * row_stride);
  }
};

// Copies vectors first, first + step, ... (below nvec) of a [D] row to its slot, for row
// `sub` of the block (any row of a block-wide slot). ONCE: a row this kernel reads once (see
// copy16_async).
template <typename E, int VEC, bool ONCE = false>
__device__ __forceinline__ void stage_row_async(const StageSlot& s, unsigned char* smem, int sub,
                                                const E* src, int first, int step, int nvec) {
  E* dst = s.template at<E>(smem, sub);
#pragma unroll 4
  for (int i = first; i < nvec; i += step) {
    copy_vec_async<E, VEC, ONCE>(dst + i * VEC, src + i * VEC);
  }
}

// Lays the staged operands out on the host: block() and per_row() name each operand's slot
// and size, finish() assigns the offsets (block-wide operands first, then one slot of all the
// per-row operands for each row) and returns the dynamic shared memory a block needs.
class StagePlan {
 public:
  void block(StageSlot& s, int bytes) { block_.push_back({&s, round16(bytes)}); }
  void per_row(StageSlot& s, int bytes) { row_.push_back({&s, round16(bytes)}); }
  int finish(int rows_per_block) {
    int off = 0;
    for (auto& e : block_) {
      *e.slot = StageSlot{off, 0};
      off += e.bytes;
    }
    int row_bytes = 0;
    for (auto& e : row_) row_bytes += e.bytes;
    int in_row = 0;
    for (auto& e : row_) {
      *e.slot = StageSlot{off + in_row, row_bytes};
      in_row += e.bytes;
    }
    return off + row_bytes * rows_per_block;
  }
  // True when some slot is block-wide (read by other threads than the ones that copy it: the
  // kernel needs a barrier before reading it).
  bool has_block_slots() const { return !block_.empty(); }

 private:
  struct Entry {
    StageSlot* slot;
    int bytes;
  };
  static int round16(int b) { return (b + 15) / 16 * 16; }
  std::vector<Entry> block_, row_;
};

}  // namespace ltx
