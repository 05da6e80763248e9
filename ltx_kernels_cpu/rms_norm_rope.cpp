// RMSNorm then RoPE on the CPU, the twin of ltx_kernels_cuda/rms_norm_rope.cu: same checks, the
// same fp32 steps (x * inv * weight, then the rotation), one rounding.
#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "ltx_kernels_cpu/rope.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

template <typename T, typename W, typename C>
void rms_norm_rope_rows(T* out, const T* x, const W* weight, const C* cos, const C* sin,
                        const BcastRows& x_rows, const BcastRows& out_rows, const RopeTables& tab,
                        int64_t rows, int64_t D, float eps, bool interleaved) {
  const int64_t R = tab.R;
  at::parallel_for(0, rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    // x's row, cos and sin rows, the pair tables' converted halves, the weight as floats
    std::vector<float> scratch(static_cast<size_t>(2 * D + 3 * R));
    float* v = scratch.data();
    float* cs = v + D;
    float* ss = cs + R;
    float* half = ss + R;
    const float* w = weight != nullptr ? float_row(weight, half + R, D) : nullptr;
    for (int64_t r = begin; r < end; ++r) {
      const float* xf = float_row(x + x_rows.offset(r), v, D);
      float sum = 0.f;
      for (int64_t i = 0; i < D; ++i) sum += xf[i] * xf[i];
      const float inv = 1.f / std::sqrt(sum / static_cast<float>(D) + eps);
      T* o = out + out_rows.offset(r);
      float* of = out_row(o, v);  // the normalized row, rotated in place (out may be x)
      if (w != nullptr) {
        for (int64_t i = 0; i < D; ++i) of[i] = xf[i] * inv * w[i];
      } else {
        for (int64_t i = 0; i < D; ++i) of[i] = xf[i] * inv;
      }
      const C* cr = cos + tab.cos_rows.offset(r);
      const C* sr = sin + tab.sin_rows.offset(r);
      const float* c = tab.pairs ? pair_table_row(cr, cs, half, R, interleaved)
                                 : float_row(cr, cs, R);
      const float* s = tab.pairs ? pair_table_row(sr, ss, half, R, interleaved)
                                 : float_row(sr, ss, R);
      rope_rotate_row(of, of, c, s, D, R, interleaved);
      finish_row(of, o, D);
    }
  });
}

// One tensor's rows, with the weight and cos / sin dtypes dispatched.
inline void rms_norm_rope_run(const NormRopeViews& views, const std::optional<at::Tensor>& weight,
                              const at::Tensor& cos, const at::Tensor& sin, double eps,
                              bool interleaved, const char* out_name) {
  if (views.out.numel() == 0) return;
  BcastRows x_rows;
  const at::Tensor x = strided_rows_input(views.x, x_rows);
  const BcastRows out_rows = strided_rows_out(views.out, out_name);
  const RopeTables& tab = views.tab;
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  const bool c32 = cos.scalar_type() == at::kFloat;
  const int64_t D = x.size(-1);
  const float e = static_cast<float>(eps);
  at::Tensor out = views.out;

  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "rms_norm_rope", [&] {
    using T = scalar_t;
    auto run = [&](auto w, auto c) {
      using W = decltype(w);
      using C = decltype(c);
      rms_norm_rope_rows<T, W, C>(
          out.mutable_data_ptr<T>(), x.const_data_ptr<T>(),
          weight.has_value() ? weight->const_data_ptr<W>() : nullptr, cos.const_data_ptr<C>(),
          sin.const_data_ptr<C>(), x_rows, out_rows, tab, x.numel() / D, D, e, interleaved);
    };
    // Weight and cos / sin each in x's dtype or fp32.
    if (w32 && c32) {
      run(float{}, float{});
    } else if (w32) {
      run(float{}, T{});
    } else if (c32) {
      run(T{}, float{});
    } else {
      run(T{}, T{});
    }
  });
}

}  // namespace cpu
}  // namespace ltx

void rms_norm_rope(at::Tensor& out, const at::Tensor& input,
                   const std::optional<at::Tensor>& weight, const at::Tensor& cos,
                   const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                   bool pair_tables) {
  using namespace ltx;
  const NormRopeViews views =
      check_rms_norm_rope_args(out, input, weight, cos, sin, eps, num_heads, pair_tables);
  cpu::rms_norm_rope_run(views, weight, cos, sin, eps, interleaved, "out");
}

// The CUDA kernel handles matching q / k rows together to load cos / sin once; row by row on
// the CPU the tables stay in cache, so q and k simply run one after the other.
void rms_norm_rope_qk(at::Tensor& q_out, at::Tensor& k_out, const at::Tensor& q,
                      const at::Tensor& k, const std::optional<at::Tensor>& q_weight,
                      const std::optional<at::Tensor>& k_weight, const at::Tensor& cos,
                      const at::Tensor& sin, double eps, bool interleaved, int64_t num_heads,
                      bool pair_tables) {
  using namespace ltx;
  const NormRopeQkViews v = check_rms_norm_rope_qk_args(q_out, k_out, q, k, q_weight, k_weight,
                                                        cos, sin, eps, num_heads, pair_tables);
  cpu::rms_norm_rope_run(v.q, q_weight, cos, sin, eps, interleaved, "q_out");
  cpu::rms_norm_rope_run(v.k, k_weight, cos, sin, eps, interleaved, "k_out");
}
