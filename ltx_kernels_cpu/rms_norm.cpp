// RMSNorm on the CPU, the twin of ltx_kernels_cuda/rms_norm.cu: same checks, same rounding.
#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

template <typename T, typename W, typename O>
void rms_norm_rows(O* out, const T* x, const W* weight, const RowLayout& xl, const RowLayout& ol,
                   int64_t D, float eps, bool round_before_weight) {
  at::parallel_for(0, xl.rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    Scratch s(D);
    float* v = s.a.data();
    for (int64_t r = begin; r < end; ++r) {
      load_row(x + xl.offset(r), v, D);
      float ss = 0.f;
      for (int64_t i = 0; i < D; ++i) ss += v[i] * v[i];
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + eps);
      O* o = out + ol.offset(r);
      for (int64_t i = 0; i < D; ++i) {
        float n = v[i] * inv;
        if (round_before_weight) n = round_to<T>(n);
        if (weight != nullptr) n *= static_cast<float>(weight[i]);
        o[i] = static_cast<O>(n);
      }
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
