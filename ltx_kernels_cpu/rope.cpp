// RoPE on the CPU, the twin of ltx_kernels_cuda/rope.cu: same checks, same formula, one
// rounding. Rows in parallel; cos / sin rows found by strides (broadcast), never materialized.
#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "ltx_kernels_cpu/rope.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

template <typename T, typename C>
void rope_rows(T* out, const T* x, const C* cos, const C* sin, const BcastRows& x_rows,
               const BcastRows& out_rows, const RopeTables& tab, int64_t rows, int64_t D,
               bool interleaved) {
  const int64_t R = tab.R;
  at::parallel_for(0, rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(D + 2 * R));
    float* v = scratch.data();
    float* cs = v + D;
    float* ss = cs + R;
    for (int64_t r = begin; r < end; ++r) {
      const float* xf = float_row(x + x_rows.offset(r), v, D);
      const float* c = float_row(cos + tab.cos_rows.offset(r), cs, R);
      const float* s = float_row(sin + tab.sin_rows.offset(r), ss, R);
      T* o = out + out_rows.offset(r);
      float* of = out_row(o, v);  // out may be x: pair by pair
      rope_rotate_row(xf, of, c, s, D, R, interleaved);
      finish_row(of, o, D);
    }
  });
}

// One tensor (x, out) with its tables; x already has strided rows (strided_rows_input).
template <typename T, typename C>
void rope_tensor(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                 const RopeTables& tab, const char* out_name, bool interleaved) {
  if (x.numel() == 0) return;
  BcastRows x_rows;
  try_strided_rows(x, x_rows);
  const BcastRows out_rows = strided_rows_out(out, out_name);
  const int64_t D = x.size(-1);
  rope_rows<T, C>(out.mutable_data_ptr<T>(), x.const_data_ptr<T>(), cos.const_data_ptr<C>(),
                  sin.const_data_ptr<C>(), x_rows, out_rows, tab, x.numel() / D, D, interleaved);
}

template <typename F>
void dispatch_rope_types(const at::Tensor& x, const at::Tensor& cos, F&& f) {
  const bool c32 = cos.scalar_type() == at::kFloat;
  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "rope", [&] {
    using T = scalar_t;
    if (c32) {
      f(T{}, float{});
    } else {
      f(T{}, T{});
    }
  });
}

}  // namespace cpu
}  // namespace ltx

void rope(at::Tensor& out, const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin,
          bool interleaved) {
  using namespace ltx;
  const RopeTables tab = check_rope_args(out, input, cos, sin);
  if (out.numel() == 0) return;
  BcastRows unused;
  const at::Tensor x = strided_rows_input(input, unused);
  cpu::dispatch_rope_types(x, cos, [&](auto t, auto c) {
    using T = decltype(t);
    using C = decltype(c);
    cpu::rope_tensor<T, C>(out, x, cos, sin, tab, "out", interleaved);
  });
}

void rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
             const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  using namespace ltx;
  const RopeQkTables tab = check_rope_qk_args(q_out, k_out, q, k, cos, sin);
  BcastRows unused;
  const at::Tensor qx = strided_rows_input(q, unused), kx = strided_rows_input(k, unused);
  cpu::dispatch_rope_types(qx, cos, [&](auto t, auto c) {
    using T = decltype(t);
    using C = decltype(c);
    cpu::rope_tensor<T, C>(q_out, qx, cos, sin, tab.q, "q_out", interleaved);
    cpu::rope_tensor<T, C>(k_out, kx, cos, sin, tab.k, "k_out", interleaved);
  });
}
