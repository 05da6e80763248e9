// Activations: gelu_tanh and silu (elementwise, [..., D] -> [..., D]) and the gated geglu and
// silu_and_mul ([..., 2H] -> [..., H]), fp32 math (common/activation_math.h), rounded once.
//
// Memory-bound streaming. Dense rows of 16-byte vectors (contiguous tensors, rows at one
// stride, every offset below 2^31: the common case) take the flat kernel, one vector a thread
// (activation_flat_kernel below). The row kernel serves the rest: each thread moves UNROLL
// vectors of VEC elements (16 bytes when the row length, both pointers and every row stride
// allow it; VEC = 1 is the scalar path) and issues all of its loads before any math, so that
// UNROLL (x2 for the gated ops) independent loads are in flight per thread. A group of G
// threads covers one tile of a row (G * UNROLL vectors, consecutive lanes on consecutive
// vectors); a block holds several groups when rows are short; the 1-D grid enumerates (row
// block, tile) pairs with 64-bit indices and strides over them when there are more than one
// grid holds. Contiguous elementwise tensors are one long row, so that an odd D still takes
// the vector path.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "common/activation_math.h"
#include "common/op_checks.h"
#include "torch-ext/torch_binding.h"
#include "ltx_kernels_cuda/common/dense.cuh"
#include "ltx_kernels_cuda/common/dispatch.cuh"
#include "ltx_kernels_cuda/common/fast_rows.cuh"
#include "ltx_kernels_cuda/common/launch.cuh"
#include "ltx_kernels_cuda/common/rows.cuh"
#include "ltx_kernels_cuda/common/vec.cuh"

namespace ltx {

template <typename T>
struct ActivationParams {
  T* out;        // [rows, D] at out_rows
  const T* x;    // [rows, D] (elementwise) or [rows, 2D] (gated: value half, gate half) at x_rows
  // The gated ops' second operand, [rows, D] at x2_rows: x + D at x_rows for [value | gate]
  // rows (geglu, silu_and_mul), silu_mul's `up` tensor.
  const T* x2;
  Rows x_rows, out_rows, x2_rows;
  int64_t rows;
  int64_t D;            // outputs per row (H for the gated ops)
  int group;            // threads per row tile (G)
  int rows_per_block;   // groups per block
  int64_t tiles;        // tiles per row
  int64_t blocks;       // row blocks x tiles
};

// One vector's outputs `y` from its values `a` (and gates `g` for the gated ops; unused
// otherwise), in fp32. Shared by the row and the flat kernels.
template <typename T, Act A, bool GATED, int VEC>
__device__ __forceinline__ void activate_vec(const Vec<T, VEC>& a, const Vec<T, VEC>& g,
                                             float (&y)[VEC]) {
  // 16-bit outputs use __expf / __fdividef (a few fp32 ulps, far below their rounding);
  // fp32 outputs use the accurate expf and division, to stay within 1e-5 of fp64.
  constexpr bool kFast = !std::is_same_v<T, float>;
  // bf16 tanh GELU: one special-function instruction per element (activation_math.h).
  constexpr bool k1Mufu = std::is_same_v<T, __nv_bfloat16> && !GATED && A == Act::kGeluTanh;
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    const float va = to_float(a.v[i]);
    if constexpr (GATED) {
      y[i] = gated_act<A, kFast>(va, to_float(g.v[i]));
    } else if constexpr (k1Mufu) {
      y[i] = gelu_tanh_1mufu(va);
    } else {
      y[i] = act<A, kFast>(va);
    }
  }
}

// The row kernel's body, shared by activation_kernel and activation_kernel_bf16 below.
template <typename T, Act A, bool GATED, int VEC, int UNROLL>
__device__ __forceinline__ void activation_rows(const ActivationParams<T>& p) {
  using V = Vec<T, VEC>;
  const int G = p.group;
  const int lane = threadIdx.x % G;
  const int sub = threadIdx.x / G;  // row within the block
  const int64_t nvec = p.D / VEC;   // vectors per row (VEC divides D: see the launcher)
  const int64_t tile_vecs = static_cast<int64_t>(G) * UNROLL;

  for (int64_t b = blockIdx.x; b < p.blocks; b += gridDim.x) {
    const int64_t row_block = p.tiles == 1 ? b : b / p.tiles;
    const int64_t tile = b - row_block * p.tiles;
    const int64_t row = row_block * p.rows_per_block + sub;
    if (row >= p.rows) continue;  // no block-wide synchronization below
    const T* x = p.x + p.x_rows.offset(row);
    const T* x2 = GATED ? p.x2 + p.x2_rows.offset(row) : nullptr;
    T* out = p.out + p.out_rows.offset(row);
    const int64_t first = tile * tile_vecs + lane;

    V a[UNROLL];
    V g[UNROLL];  // gate halves; unused (and removed) when !GATED
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t idx = first + static_cast<int64_t>(u) * G;
      if (idx < nvec) {
        a[u] = *reinterpret_cast<const V*>(x + idx * VEC);
        if constexpr (GATED) g[u] = *reinterpret_cast<const V*>(x2 + idx * VEC);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t idx = first + static_cast<int64_t>(u) * G;
      if (idx < nvec) {
        float y[VEC];
        activate_vec<T, A, GATED, VEC>(a[u], g[u], y);
        store_floats<T, VEC>(out + idx * VEC, y);
      }
    }
  }
}

template <typename T, Act A, bool GATED, int VEC, int UNROLL>
__global__ void activation_kernel(const ActivationParams<T> p) {
  activation_rows<T, A, GATED, VEC, UNROLL>(p);
}

// bf16 on sm_90: at most 256 threads per block (choose_stream_config) and at least 4 blocks per
// SM, so at most 64 registers. Without the bound the bf16 instances take 66-78 there (fp16:
// 52-56), a block fits 3 times per SM instead of 4, and bf16 geglu ran 8% slower than fp16 for
// the same bytes (run D); with it, 1-7% faster (run E). fp16 and fp32 keep the compiler's
// choice (with the bound, fp16 gelu_tanh ran 5% slower), as do other targets (sm_80: bf16 and
// fp16 both 52-56).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LTX_ACTIVATION_BF16_BOUNDS __launch_bounds__(256, 4)
#else
#define LTX_ACTIVATION_BF16_BOUNDS
#endif

template <Act A, bool GATED, int VEC, int UNROLL>
__global__ void LTX_ACTIVATION_BF16_BOUNDS
activation_kernel_bf16(const ActivationParams<__nv_bfloat16> p) {
  activation_rows<__nv_bfloat16, A, GATED, VEC, UNROLL>(p);
}

// The flat kernel (run S, change 49): one 16-byte vector a thread, the threads enumerating
// every output vector of the tensor with 32-bit indices, the row from a FastDiv (`nvec`
// vectors a row), x's and out's rows at one stride each (`xs`, `os` elements). The row kernel
// above holds 60-64 registers in bf16 (4 vectors a thread, 64-bit indices: at most 4 blocks of
// 256 threads a SM) where this one needs few, as torch.compile's kernel (one vector a thread,
// blocks of 128); gated_residual's flat kernel (change 33) took 9-19% off its row kernel so.
template <typename T, Act A, bool GATED, int VEC>
__global__ void __launch_bounds__(kStreamThreads)
activation_flat_kernel(const ActivationParams<T> p, const FastDiv nvec_div, const uint32_t nvec,
                       const uint32_t xs, const uint32_t x2s, const uint32_t os,
                       const uint32_t total) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const uint32_t row = nvec_div.div(i);
  const uint32_t col = (i - row * nvec) * VEC;
  const Vec<T, VEC> a = load_vec_once<T, VEC>(p.x + row * xs + col);
  Vec<T, VEC> g;  // the second operand; unused (and removed) when !GATED
  if constexpr (GATED) g = load_vec_once<T, VEC>(p.x2 + row * x2s + col);
  float y[VEC];
  activate_vec<T, A, GATED, VEC>(a, g, y);
  store_floats<T, VEC>(p.out + row * os + col, y);
}

template <typename T, Act A, bool GATED>
void launch_activation(ActivationParams<T> p, cudaStream_t stream) {
  // 16-byte vectors when every access is a 16-byte aligned run of V elements: D a multiple of
  // V (for the gated ops D = H, so the gate half, H elements after the value half, is aligned
  // too), both base pointers 16-byte aligned, every row stride a multiple of V. Scalar
  // otherwise (odd H, views such as x[:, 1:]).
  constexpr int V = kVec16<T>;
  const bool vec_ok = p.D % V == 0 && is_aligned(p.x, 16) && is_aligned(p.out, 16) &&
                      p.x_rows.outer_stride % V == 0 && p.x_rows.inner_stride % V == 0 &&
                      p.out_rows.outer_stride % V == 0 && p.out_rows.inner_stride % V == 0 &&
                      (!GATED || (is_aligned(p.x2, 16) && p.x2_rows.outer_stride % V == 0 &&
                                  p.x2_rows.inner_stride % V == 0));
  // [value | gate] rows: x reads 2D elements a row; silu_mul's gate and up D each.
  const bool halves = GATED && p.x2 == p.x + p.D;
  // The flat kernel (LTX_ACT_FLAT: 0 never, 1 the gated ops, 2 every activation [2];
  // LTX_ACT_FLAT_THREADS [128] threads a block, 32..256) for 16-byte vectors over rows at one
  // stride each, every element offset below 2^31. Run S (H200, against the row kernel, two
  // runs a side): 0.92-1.00x its time at all 20 cases, bf16 and fp16 (gelu_tanh 2x2688x8192
  // bf16 48.4 -> 46.3 us, silu_and_mul 1x16384x28672 343.7 -> 326.1); 256 threads a block
  // 0-2% slower than 128.
  static const int flat_mode = env_int("LTX_ACT_FLAT", 2, /*zero_turns_off=*/true);
  static const int flat_threads =
      std::clamp(env_int("LTX_ACT_FLAT_THREADS", 128), 32, kStreamThreads);
  uint32_t xs = 0, x2s = 0, os = 0;
  const int64_t flat_nvec = p.D / V;
  if (vec_ok && flat_mode >= (GATED ? 1 : 2) && p.rows * flat_nvec < (int64_t{1} << 31) &&
      dense_rows(p.x_rows, p.rows, halves ? 2 * p.D : p.D, xs) &&
      (!GATED || halves || dense_rows(p.x2_rows, p.rows, p.D, x2s)) &&
      dense_rows(p.out_rows, p.rows, p.D, os)) {
    if (halves) x2s = xs;
    const int64_t total = p.rows * flat_nvec;
    if (total == 0) return;
    const int64_t blocks = (total + flat_threads - 1) / flat_threads;
    activation_flat_kernel<T, A, GATED, V>
        <<<static_cast<unsigned>(blocks), flat_threads, 0, stream>>>(
            p, FastDiv::make(static_cast<uint32_t>(flat_nvec)),
            static_cast<uint32_t>(flat_nvec), xs, x2s, os, static_cast<uint32_t>(total));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  dispatch_vec<V>(vec_ok ? V : 1, [&](auto vec_c) {
    constexpr int VC = decltype(vec_c)::value;
    // Four 16-byte loads in flight per thread (4 vectors, or 2 from each half for the gated
    // ops), enough to saturate HBM at high occupancy; twice as many loads on the scalar path.
    constexpr int U = (VC == 1 ? 8 : 4) / (GATED ? 2 : 1);
    const StreamConfig cfg = choose_stream_config(p.D / VC, p.rows, U);
    p.group = cfg.group;
    p.rows_per_block = cfg.rows_per_block;
    p.tiles = cfg.tiles;
    p.blocks = cfg.blocks;
    // gridDim.x is at most 2^31 - 1; the kernel strides over any blocks beyond it.
    const int64_t grid = std::min<int64_t>(cfg.blocks, 0x7fffffff);
    const dim3 block(cfg.group * cfg.rows_per_block);
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      activation_kernel_bf16<A, GATED, VC, U>
          <<<dim3(static_cast<unsigned>(grid)), block, 0, stream>>>(p);
    } else {
      activation_kernel<T, A, GATED, VC, U>
          <<<dim3(static_cast<unsigned>(grid)), block, 0, stream>>>(p);
    }
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// up: silu_mul's second operand (rows of D at their own strides); null for the other ops
// (the gated ones read the second half of x's rows).
template <Act A, bool GATED>
void run_activation(at::Tensor& out, const at::Tensor& x, const at::Tensor* up = nullptr) {
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  Rows xr{}, orows{}, x2r{};
  int64_t rows = 0, D = 0;
  if (!GATED && x.is_contiguous() && out.is_contiguous()) {
    // One row of numel elements: rows of an odd D still vectorize when numel allows it.
    rows = 1;
    D = x.numel();
    xr = Rows{1, D, D};
    orows = xr;
  } else {
    const RowLayout xl = row_layout(x, "input"), ol = row_layout(out, "out");
    xr = to_rows(xl);
    orows = to_rows(ol);
    x2r = up != nullptr ? to_rows(row_layout(*up, "up")) : xr;
    rows = xl.rows;
    D = out.size(-1);
  }
  LTX_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    ActivationParams<T> p{};
    p.out = reinterpret_cast<T*>(out.data_ptr());
    p.x = reinterpret_cast<const T*>(x.data_ptr());
    p.x2 = up != nullptr ? reinterpret_cast<const T*>(up->data_ptr()) : p.x + D;
    p.x_rows = xr;
    p.x2_rows = x2r;
    p.out_rows = orows;
    p.rows = rows;
    p.D = D;
    launch_activation<T, A, GATED>(p, stream);
  });
}

}  // namespace ltx

void gelu_tanh(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_activation_args(out, x);
  if (out.numel() == 0) return;
  run_activation<Act::kGeluTanh, false>(out, x);
}

void silu(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_activation_args(out, x);
  if (out.numel() == 0) return;
  run_activation<Act::kSilu, false>(out, x);
}

void geglu(at::Tensor& out, const at::Tensor& input, std::string_view approximate) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const bool is_tanh = geglu_is_tanh(approximate);
  check_gated_activation_args(out, x);
  if (out.numel() == 0) return;
  if (is_tanh) {
    run_activation<Act::kGeluTanh, true>(out, x);
  } else {
    run_activation<Act::kGeluErf, true>(out, x);
  }
}

void silu_and_mul(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_gated_activation_args(out, x);
  if (out.numel() == 0) return;
  run_activation<Act::kSilu, true>(out, x);
}

void silu_mul(at::Tensor& out, const at::Tensor& gate_in, const at::Tensor& up_in) {
  using namespace ltx;
  const at::Tensor gate = contiguous_rows(gate_in, "gate");
  const at::Tensor up = contiguous_rows(up_in, "up");
  check_silu_mul_args(out, gate, up);
  if (out.numel() == 0) return;
  run_activation<Act::kSilu, true>(out, gate, &up);
}
