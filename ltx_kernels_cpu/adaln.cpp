// AdaLN, gated residual AdaLN and the gated residual alone on the CPU, the twins of
// ltx_kernels_cuda/adaln.cu: same checks, same fp32 math in the same order, same rounding
// points.
#include <type_traits>

#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

// x + y[i] * gate[i] (gate nullptr: x + y[i]) rounded to T: the product rounded to fp32 on its
// own, then the sum, as the CUDA kernels' gated_sum. gated_residual_adaln's residual_out and
// gated_residual's out, so that the two agree bit for bit.
template <typename T, typename M>
inline T gated_sum(float x, const T* y, const M* gate, int64_t i) {
  float yv = static_cast<float>(y[i]);
  if (gate != nullptr) yv *= static_cast<float>(gate[i]);
  return static_cast<T>(x + yv);
}

template <typename T, typename M, typename W>
struct AdaLNRows {
  T* out;           // [rows, D] at ol: the modulated norm
  T* residual_out;  // [rows, D] at rl: x + y * gate (GATED only)
  const T* x;       // [rows, D] at xl
  const T* y;       // [rows, D] at yl (GATED only)
  const M* gate;    // rows of [D] at gate_b, or nullptr (x + y)
  const M* scale;   // rows of [D] at scale_b
  const M* shift;   // rows of [D] at shift_b
  const W* weight;  // [D], or nullptr
  const W* bias;    // [D], or nullptr
  RowLayout xl, yl, ol, rl;
  BcastRows gate_b, scale_b, shift_b;
  int64_t D;
  float eps;
  bool layer;
};

template <typename T, typename M, typename W, bool GATED>
void adaln_rows(const AdaLNRows<T, M, W>& p) {
  const int64_t D = p.D;
  at::parallel_for(0, p.xl.rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    Scratch s(D);
    float* v = s.a.data();
    for (int64_t r = begin; r < end; ++r) {
      load_row(p.x + p.xl.offset(r), v, D);
      if constexpr (GATED) {
        // x_new = x + y * gate, rounded to T; the norm below sees the rounded value.
        const T* y = p.y + p.yl.offset(r);
        const M* g = p.gate != nullptr ? p.gate + p.gate_b.offset(r) : nullptr;
        T* res = p.residual_out + p.rl.offset(r);
        for (int64_t i = 0; i < D; ++i) {
          const T sum = gated_sum(v[i], y, g, i);
          res[i] = sum;
          v[i] = static_cast<float>(sum);
        }
      }
      // RMSNorm: mean square. LayerNorm: mean first, then the mean squared deviation (two
      // passes over the cached row, no cancellation of E[x^2] - E[x]^2).
      const float mean = p.layer ? sum_of(v, D) / static_cast<float>(D) : 0.f;
      const float ss = sum_sq_dev(v, D, mean);
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + p.eps);
      const M* sc = p.scale + p.scale_b.offset(r);
      const M* sh = p.shift + p.shift_b.offset(r);
      T* o = p.out + p.ol.offset(r);
      for (int64_t i = 0; i < D; ++i) {
        float n = (v[i] - mean) * inv;
        if (p.weight != nullptr) n *= static_cast<float>(p.weight[i]);
        if (p.bias != nullptr) n += static_cast<float>(p.bias[i]);
        o[i] = static_cast<T>(n * (1.f + static_cast<float>(sc[i])) + static_cast<float>(sh[i]));
      }
    }
  });
}

// Fills the pointers of `p` and runs the rows with T, M (modulation) and W (affine) bound.
template <bool GATED, typename T, typename M, typename W>
void run_adaln(at::Tensor& out, at::Tensor* residual_out, const at::Tensor& x,
               const at::Tensor* y, const std::optional<at::Tensor>& gate,
               const at::Tensor& scale, const at::Tensor& shift,
               const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
               const AdaLNArgs& a, double eps) {
  AdaLNRows<T, M, W> p{};
  p.out = out.mutable_data_ptr<T>();
  p.x = x.const_data_ptr<T>();
  p.scale = scale.const_data_ptr<M>();
  p.shift = shift.const_data_ptr<M>();
  p.weight = weight.has_value() ? weight->const_data_ptr<W>() : nullptr;
  p.bias = bias.has_value() ? bias->const_data_ptr<W>() : nullptr;
  p.xl = row_layout(x, "input");
  p.ol = row_layout(out, "out");
  p.scale_b = a.scale;
  p.shift_b = a.shift;
  if constexpr (GATED) {
    p.residual_out = residual_out->mutable_data_ptr<T>();
    p.y = y->const_data_ptr<T>();
    p.gate = gate.has_value() ? gate->const_data_ptr<M>() : nullptr;
    p.yl = row_layout(*y, "y");
    p.rl = row_layout(*residual_out, "residual_out");
    p.gate_b = a.gate;
  }
  p.D = x.size(-1);
  p.eps = static_cast<float>(eps);
  p.layer = a.norm == NormKind::kLayer;
  adaln_rows<T, M, W, GATED>(p);
}

// Binds T from x's dtype, M and W to T or float.
template <bool GATED>
void dispatch_adaln(at::Tensor& out, at::Tensor* residual_out, const at::Tensor& x,
                    const at::Tensor* y, const std::optional<at::Tensor>& gate,
                    const at::Tensor& scale, const at::Tensor& shift,
                    const std::optional<at::Tensor>& weight,
                    const std::optional<at::Tensor>& bias, const AdaLNArgs& a, double eps) {
  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "adaln", [&] {
    using T = scalar_t;
    auto run = [&](auto* m_null, auto* w_null) {  // typed nullptrs carry M and W
      using M = std::remove_pointer_t<decltype(m_null)>;
      using W = std::remove_pointer_t<decltype(w_null)>;
      run_adaln<GATED, T, M, W>(out, residual_out, x, y, gate, scale, shift, weight, bias, a,
                                eps);
    };
    float* f32 = nullptr;
    T* same = nullptr;
    if (a.mod32) {
      a.affine32 ? run(f32, f32) : run(f32, same);
    } else {
      a.affine32 ? run(same, f32) : run(same, same);
    }
  });
}

// gated_residual: out = x + y * gate, rows in parallel. out may be x (in place): each element
// is read before it is written.
template <typename T, typename M>
void gated_residual_rows(at::Tensor& out, const at::Tensor& x, const at::Tensor& y,
                         const at::Tensor& gate, const BcastRows& gate_b) {
  T* o = out.mutable_data_ptr<T>();
  const T* xp = x.const_data_ptr<T>();
  const T* yp = y.const_data_ptr<T>();
  const M* gp = gate.const_data_ptr<M>();
  const RowLayout xl = row_layout(x, "input"), yl = row_layout(y, "y");
  const RowLayout ol = row_layout(out, "out");
  const int64_t D = x.size(-1);
  at::parallel_for(0, xl.rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = xp + xl.offset(r);
      const T* yr = yp + yl.offset(r);
      const M* g = gp + gate_b.offset(r);
      T* orow = o + ol.offset(r);
      for (int64_t i = 0; i < D; ++i) orow[i] = gated_sum(static_cast<float>(xr[i]), yr, g, i);
    }
  });
}

// Binds T from x's dtype and M from the gate's (T or float).
inline void dispatch_gated_residual(at::Tensor& out, const at::Tensor& x, const at::Tensor& y,
                                    const at::Tensor& gate, const BcastRows& gate_b) {
  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "gated_residual", [&] {
    using T = scalar_t;
    auto run = [&](auto* m_null) {  // a typed nullptr carries M
      gated_residual_rows<T, std::remove_pointer_t<decltype(m_null)>>(out, x, y, gate, gate_b);
    };
    gate.scalar_type() == at::kFloat ? run(static_cast<float*>(nullptr))
                                     : run(static_cast<T*>(nullptr));
  });
}

}  // namespace cpu
}  // namespace ltx

void adaln(at::Tensor& out, const at::Tensor& input, const at::Tensor& scale,
           const at::Tensor& shift, const std::optional<at::Tensor>& weight,
           const std::optional<at::Tensor>& bias, c10::string_view norm, double eps) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const AdaLNArgs a = check_adaln_args(out, x, scale, shift, weight, bias, norm, eps);
  if (out.numel() == 0) return;
  cpu::dispatch_adaln<false>(out, nullptr, x, nullptr, std::nullopt, scale, shift, weight, bias,
                             a, eps);
}

void gated_residual_adaln(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& input,
                          const at::Tensor& y, const std::optional<at::Tensor>& gate,
                          const at::Tensor& scale, const at::Tensor& shift,
                          const std::optional<at::Tensor>& weight,
                          const std::optional<at::Tensor>& bias, c10::string_view norm,
                          double eps) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const at::Tensor yr = contiguous_rows(y, "y");
  const AdaLNArgs a = check_gated_residual_adaln_args(out, residual_out, x, yr, gate, scale,
                                                      shift, weight, bias, norm, eps);
  if (out.numel() == 0) return;
  cpu::dispatch_adaln<true>(out, &residual_out, x, &yr, gate, scale, shift, weight, bias, a,
                            eps);
}

void gated_residual(at::Tensor& out, const at::Tensor& input, const at::Tensor& y,
                    const at::Tensor& gate) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const at::Tensor yr = contiguous_rows(y, "y");
  const BcastRows gate_b = check_gated_residual_args(out, x, yr, gate);
  if (out.numel() == 0) return;
  cpu::dispatch_gated_residual(out, x, yr, gate, gate_b);
}
