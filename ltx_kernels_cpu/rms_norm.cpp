// RMSNorm on the CPU, the twin of ltx_kernels_cuda/rms_norm.cu: same checks, same rounding.
#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

// With ADD (fused_add_rms_norm), the row normalized is residual + x, rounded to T and stored
// back to residual first; out is then x itself.
template <typename T, typename W, typename O, bool ADD = false>
void rms_norm_rows(O* out, const T* x, const W* weight, const RowLayout& xl, const RowLayout& ol,
                   int64_t D, float eps, bool round_before_weight, T* residual = nullptr,
                   const RowLayout* rl = nullptr) {
  at::parallel_for(0, xl.rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    Scratch s(D, 3);
    const float* w = weight != nullptr ? float_row(weight, s.row(2), D) : nullptr;
    std::vector<T> t(round_before_weight ? D : 0);
    for (int64_t r = begin; r < end; ++r) {
      const float* v = float_row(x + xl.offset(r), s.row(0), D);
      if constexpr (ADD) {
        // residual + x rounded to T and stored; the norm sees the rounded value. 16 bits: the
        // sum over x's floats (index by index), rounded into residual and read back.
        T* res = residual + rl->offset(r);
        const float* rf = float_row(res, s.row(1), D);
        float* sum = out_row(res, s.row(0));
        for (int64_t i = 0; i < D; ++i) sum[i] = v[i] + rf[i];
        finish_row(sum, res, D);
        v = float_row(res, s.row(0), D);
      }
      const float ss = sum_sq_dev(v, D, 0.f);
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + eps);
      O* o = out + ol.offset(r);
      float* y = out_row(o, s.row(1));  // out may be x: index by index
      for (int64_t i = 0; i < D; ++i) y[i] = v[i] * inv;
      if (round_before_weight) round_row(y, t.data(), D);
      if (w != nullptr) {
        for (int64_t i = 0; i < D; ++i) y[i] *= w[i];
      }
      finish_row(y, o, D);
    }
  });
}

}  // namespace cpu
}  // namespace ltx

void rms_norm(at::Tensor& out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
              double eps, bool round_before_weight) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_rms_norm_args(out, x, weight, eps);
  if (out.numel() == 0) return;
  const RowLayout xl = row_layout(x, "input"), ol = row_layout(out, "out");
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  const bool o32 = out.scalar_type() == at::kFloat;
  const int64_t D = x.size(-1);
  const float e = static_cast<float>(eps);

  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "rms_norm", [&] {
    using T = scalar_t;
    const T* xp = x.const_data_ptr<T>();
    if (!w32) {
      const T* wp = weight.has_value() ? weight->const_data_ptr<T>() : nullptr;
      cpu::rms_norm_rows<T, T, T>(out.mutable_data_ptr<T>(), xp, wp, xl, ol, D, e,
                                  round_before_weight);
    } else if (!o32) {
      cpu::rms_norm_rows<T, float, T>(out.mutable_data_ptr<T>(), xp,
                                      weight->const_data_ptr<float>(), xl, ol, D, e,
                                      round_before_weight);
    } else {
      cpu::rms_norm_rows<T, float, float>(out.mutable_data_ptr<float>(), xp,
                                          weight->const_data_ptr<float>(), xl, ol, D, e,
                                          round_before_weight);
    }
  });
}

void fused_add_rms_norm(at::Tensor& input, at::Tensor& residual,
                        const std::optional<at::Tensor>& weight, double eps) {
  using namespace ltx;
  check_fused_add_rms_norm_args(input, residual, weight, eps);
  if (input.numel() == 0) return;
  const RowLayout xl = row_layout(input, "input"), rl = row_layout(residual, "residual");
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  const int64_t D = input.size(-1);
  const float e = static_cast<float>(eps);

  LTX_CPU_DISPATCH_FLOAT_TYPES(input.scalar_type(), "fused_add_rms_norm", [&] {
    using T = scalar_t;
    // x is read before its row is written, row by row: input is both x and out.
    T* xp = input.mutable_data_ptr<T>();
    T* rp = residual.mutable_data_ptr<T>();
    if (!w32) {
      const T* wp = weight.has_value() ? weight->const_data_ptr<T>() : nullptr;
      cpu::rms_norm_rows<T, T, T, true>(xp, xp, wp, xl, xl, D, e, false, rp, &rl);
    } else {
      cpu::rms_norm_rows<T, float, T, true>(xp, xp, weight->const_data_ptr<float>(), xl, xl, D,
                                            e, false, rp, &rl);
    }
  });
}
