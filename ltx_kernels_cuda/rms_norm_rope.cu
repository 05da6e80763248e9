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
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/reduce.cuh"
#include "ltx_kernels_cuda/common/rope.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

constexpr int kMaxCachedFloats = 64;   // row values a thread keeps in registers
constexpr int kMaxStreamThreads = 512;  // threads per row on the streaming path

template <typename T, typename W, typename C>
struct RmsNormRopeParams {
  T* out;                        // [rows, D] at out_rows
  const T* x;                    // [rows, D] at x_rows
  const W* weight;               // [D], or nullptr
  const C* cos;                  // [..., R] at cos_rows
  const C* sin;                  // [..., R] at sin_rows
  BcastRows x_rows, out_rows;    // row r's offset in x / out
  BcastRows cos_rows, sin_rows;  // row r's offset in cos / sin (broadcast)
  int64_t rows;
  RopeRow row;
  int group;  // threads per row (G)
  float eps;
  bool sin_like_cos;  // sin has cos's strides: one offset for both
};

// Normalizes item k (raw values v) by inv and the weight, rotates it when it is in the rotary
// span, and stores it.
template <typename T, typename W, typename C, int VEC, bool IL>
__device__ __forceinline__ void norm_rope_write(const RmsNormRopeParams<T, W, C>& p, T* out,
                                                const C* cr, const C* sr, int k,
                                                float (&v)[RopeItem<VEC, IL>::F], float inv) {
  constexpr int F = RopeItem<VEC, IL>::F;
  int pa, pb;
  const bool rot = rope_item_pos<VEC, IL>(p.row, k, pa, pb);
  if (p.weight != nullptr) {
    float w[F];
    load_item<W, VEC, IL>(p.weight, pa, pb, p.row.D, w);
#pragma unroll
    for (int i = 0; i < F; ++i) v[i] = v[i] * inv * w[i];
  } else {
#pragma unroll
    for (int i = 0; i < F; ++i) v[i] *= inv;
  }
  if (rot) {
    float c[F], s[F];
    load_item<C, VEC, IL>(cr, pa, pb, p.row.R, c);
    load_item<C, VEC, IL>(sr, pa, pb, p.row.R, s);
    rope_rotate<RopeItem<VEC, IL>::U, IL>(v, c, s);
  }
  store_item<T, VEC, IL>(out, pa, pb, p.row.D, v);
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

// Cached blocks have at most 256 threads (so up to 255 registers a thread); streaming blocks
// up to 512 (one long row per block; 128 registers, which the split-halves 16-bit path with
// fp32 tables needs on sm_75 to run without spills).
template <typename T, typename W, typename C, int VEC, bool IL, int CHUNKS>
__global__ void __launch_bounds__(CHUNKS == 0 ? kMaxStreamThreads : 256)
    rms_norm_rope_kernel(const RmsNormRopeParams<T, W, C> p) {
  constexpr int F = RopeItem<VEC, IL>::F;
  __shared__ float smem[32];
  const int G = p.group;
  const int lane = threadIdx.x % G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
  const bool active = row < p.rows;  // inactive groups still take part in group_sum
  const T* x = p.x + (active ? row_offset(p.x_rows, row) : 0);
  T* out = p.out + (active ? row_offset(p.out_rows, row) : 0);
  const int64_t cos_off = active ? row_offset(p.cos_rows, row) : 0;
  const int64_t sin_off = p.sin_like_cos ? cos_off : active ? row_offset(p.sin_rows, row) : 0;
  const C* cr = p.cos + cos_off;
  const C* sr = p.sin + sin_off;
  const int items = p.row.items;

  if constexpr (CHUNKS > 0) {
    float v[CHUNKS][F];
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int k = c * G + lane;
      if (active && k < items) {
        ss += load_item_ss<T, VEC, IL>(x, p.row, k, v[c]);
      }
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss / static_cast<float>(p.row.D) + p.eps);
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
      const int k = c * G + lane;
      if (active && k < items) norm_rope_write<T, W, C, VEC, IL>(p, out, cr, sr, k, v[c], inv);
    }
  } else {
    float ss = 0.f;
    for (int k = lane; active && k < items; k += G) {
      float v[F];
      ss += load_item_ss<T, VEC, IL>(x, p.row, k, v);
    }
    ss = group_sum(ss, G, smem);
    const float inv = rsqrtf(ss / static_cast<float>(p.row.D) + p.eps);
    for (int k = lane; active && k < items; k += G) {
      float v[F];
      load_item_ss<T, VEC, IL>(x, p.row, k, v);
      norm_rope_write<T, W, C, VEC, IL>(p, out, cr, sr, k, v, inv);
    }
  }
}

// Threads per row and items per thread. As choose_row_config (launch.cuh): about four 16-byte
// loads of x in flight per thread (4 items interleaved, 2 split: a split item is two loads),
// sub-warp groups for short rows; here the cached path keeps blocks at 256 threads and at most
// 64 cached floats a thread, and rows beyond that stream (CHUNKS = 0) with up to 512 threads.
inline RowConfig choose_norm_rope_config(int items, int item_floats, int vec) {
  const int loads_per_item = item_floats / vec;  // 1 interleaved, 2 split or scalar
  const int per_thread = std::max(1, 4 / loads_per_item);
  const int want = (items + per_thread - 1) / per_thread;
  RowConfig c{};
  c.group = want <= 32 ? next_pow2(std::max(want, 1)) : std::min(256, (want + 31) / 32 * 32);
  c.chunks = round_chunks((items + c.group - 1) / c.group);
  if (c.chunks * item_floats > kMaxCachedFloats) c.chunks = 0;
  if (c.chunks == 0) {
    c.group = std::min(kMaxStreamThreads, (want + 31) / 32 * 32);
  } else if (c.group >= 32) {
    c.group = ((items + c.chunks - 1) / c.chunks + 31) / 32 * 32;  // trim to the chunks used
  }
  c.rows_per_block = c.group >= 256 ? 1 : 256 / c.group;
  return c;
}

template <typename T, typename W, typename C>
void launch_rms_norm_rope(RmsNormRopeParams<T, W, C> p, int D, int R, bool interleaved,
                          cudaStream_t stream) {
  // 16-byte accesses of x when V divides D and the rotated span's halves (items then hold
  // whole pairs and never straddle R) and every pointer and row start allows them (weight and
  // cos / sin with V elements of their own type); scalar otherwise.
  constexpr int V = kVec16<T>;
  const bool vec_ok =
      D % V == 0 && (interleaved ? R % V == 0 : (R / 2) % V == 0) &&
      is_aligned(p.x, sizeof(T) * V) && is_aligned(p.out, sizeof(T) * V) &&
      (p.weight == nullptr || is_aligned(p.weight, sizeof(W) * V)) &&
      is_aligned(p.cos, sizeof(C) * V) && is_aligned(p.sin, sizeof(C) * V) &&
      p.x_rows.strides_multiple_of(V) && p.out_rows.strides_multiple_of(V) &&
      p.cos_rows.strides_multiple_of(V) && p.sin_rows.strides_multiple_of(V);
  dispatch_vec<V>(vec_ok ? V : 1, [&](auto vec_c) {
    constexpr int VC = decltype(vec_c)::value;
    auto go = [&](auto il_c) {
      constexpr bool IL = decltype(il_c)::value;
      constexpr int F = RopeItem<VC, IL>::F;
      p.row = rope_row<VC, IL>(D, R);
      const RowConfig cfg = choose_norm_rope_config(p.row.items, F, VC);
      p.group = cfg.group;
      const int64_t blocks = (p.rows + cfg.rows_per_block - 1) / cfg.rows_per_block;
      LTX_CHECK(blocks <= 0x7fffffff, "input: too many rows (", p.rows, ")");
      const dim3 grid(static_cast<unsigned>(blocks)), block(cfg.group * cfg.rows_per_block);
      dispatch_chunks(cfg.chunks, [&](auto chunks_c) {
        constexpr int CC = decltype(chunks_c)::value;
        if constexpr (CC * F <= kMaxCachedFloats) {  // the others are never chosen
          rms_norm_rope_kernel<T, W, C, VC, IL, CC><<<grid, block, 0, stream>>>(p);
        }
      });
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (interleaved) {
      go(std::true_type{});
    } else {
      go(std::false_type{});
    }
  });
}

}  // namespace ltx

void rms_norm_rope(at::Tensor& out, const at::Tensor& input,
                   const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                   const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads) {
  using namespace ltx;
  const NormRopeViews views =
      check_rms_norm_rope_args(out, input, weight, cos, sin, eps, num_heads);
  if (out.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  BcastRows x_rows;
  const at::Tensor x = strided_rows_input(views.x, x_rows);
  const BcastRows out_rows = strided_rows_out(views.out, "out");
  const RopeTables& tab = views.tab;
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  const bool c32 = cos.scalar_type() == at::kFloat;
  const int D = static_cast<int>(x.size(-1));
  const int R = static_cast<int>(tab.R);

  LTX_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    auto run = [&](auto w_tag, auto c_tag) {
      using W = typename decltype(w_tag)::type;
      using C = typename decltype(c_tag)::type;
      RmsNormRopeParams<T, W, C> p{};
      p.out = reinterpret_cast<T*>(out.data_ptr());
      p.x = reinterpret_cast<const T*>(x.data_ptr());
      p.weight = weight.has_value() ? reinterpret_cast<const W*>(weight->data_ptr()) : nullptr;
      p.cos = reinterpret_cast<const C*>(cos.data_ptr());
      p.sin = reinterpret_cast<const C*>(sin.data_ptr());
      p.x_rows = x_rows;
      p.out_rows = out_rows;
      p.cos_rows = tab.cos_rows;
      p.sin_rows = tab.sin_rows;
      p.sin_like_cos = tab.sin_like_cos;
      p.rows = x.numel() / D;
      p.eps = static_cast<float>(eps);
      launch_rms_norm_rope(p, D, R, interleaved, stream);
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
