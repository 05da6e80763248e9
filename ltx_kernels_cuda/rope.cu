// RoPE: rotates pairs of the first R elements of each row of x by cos / sin (interleaved pairs
// or split halves), copies the rest; fp32 math, one rounding to x's dtype. rope_qk does q and k
// in one launch (the first blocks work on q, the others on k).
//
// Element-wise over pairs: a group of G threads per row walks the row's items (see
// common/rope.cuh), each item a whole number of pairs, so no data moves between threads. cos /
// sin rows are found by strides (broadcast over heads, batch or both), never materialized.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

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
    if (interleaved) {
      go(std::true_type{});
    } else {
      go(std::false_type{});
    }
  });
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
  const RopeTables tab = check_rope_args(out, input, cos, sin);
  if (out.numel() == 0) return;
  BcastRows xr;
  const at::Tensor x = strided_rows_input(input, xr);
  at::Tensor outs[1] = {out};
  const char* names[1] = {"out"};
  run_rope(outs, &x, &tab, names, 1, cos, sin, interleaved);
}

void rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
             const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  using namespace ltx;
  const RopeQkTables tab = check_rope_qk_args(q_out, k_out, q, k, cos, sin);
  BcastRows xr;
  const at::Tensor xs[2] = {strided_rows_input(q, xr), strided_rows_input(k, xr)};
  at::Tensor outs[2] = {q_out, k_out};
  const RopeTables tabs[2] = {tab.q, tab.k};
  const char* names[2] = {"q_out", "k_out"};
  if (q.numel() == 0 && k.numel() == 0) return;
  run_rope(outs, xs, tabs, names, 2, cos, sin, interleaved);
}
