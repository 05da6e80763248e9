// AdaLN, gated residual AdaLN and the gated residual alone on the CPU, the twins of
// ltx_kernels_cuda/adaln.cu: same checks, same fp32 math in the same order, same rounding
// points.
#include <type_traits>

#include "common/op_checks.h"
#include "ltx_kernels_cpu/common.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

// out[i] = x[i] + y[i] * gate[i] (gate nullptr: x[i] + y[i]), floats, to be rounded to T by
// the caller: the product rounded to fp32 on its own, then the sum, as the CUDA kernels'
// gated_sum. gated_residual_adaln's residual_out; gated_residual's out is the same formula in
// one pass (gated_sum_span_of, below), so that the two agree bit for bit. out overlaps none
// of the others (as modulate_row).
inline void gated_sum_row(const float* __restrict x, const float* __restrict y,
                          const float* __restrict gate, float* __restrict out, int64_t D) {
  if (gate != nullptr) {
    for (int64_t i = 0; i < D; ++i) {
      const float yg = y[i] * gate[i];
      out[i] = x[i] + yg;
    }
  } else {
    for (int64_t i = 0; i < D; ++i) out[i] = x[i] + y[i];
  }
}

// o[i] = ((v[i] - mean) * inv [* w[i]] [+ bias[i]]) * (1 + scale[i]) + shift[i], the affine
// (w, bias) present or not as HAS_W / HAS_B; the rows declared not to overlap so that the
// compiler vectorizes the loop without run-time alias checks (GCC 12 does not version a loop
// for six pointers: with plain pointers adaln took 1.4x its old time).
template <bool HAS_W, bool HAS_B>
inline void modulate_row(float* __restrict o, const float* __restrict v, float mean, float inv,
                         const float* __restrict w, const float* __restrict bias,
                         const float* __restrict scale, const float* __restrict shift,
                         int64_t D) {
  for (int64_t i = 0; i < D; ++i) {
    float n = (v[i] - mean) * inv;
    if constexpr (HAS_W) n *= w[i];
    if constexpr (HAS_B) n += bias[i];
    o[i] = n * (1.f + scale[i]) + shift[i];
  }
}

inline void modulate_row(float* o, const float* v, float mean, float inv, const float* w,
                         const float* bias, const float* scale, const float* shift, int64_t D) {
  if (w != nullptr && bias != nullptr) {
    modulate_row<true, true>(o, v, mean, inv, w, bias, scale, shift, D);
  } else if (w != nullptr) {
    modulate_row<true, false>(o, v, mean, inv, w, bias, scale, shift, D);
  } else if (bias != nullptr) {
    modulate_row<false, true>(o, v, mean, inv, w, bias, scale, shift, D);
  } else {
    modulate_row<false, false>(o, v, mean, inv, w, bias, scale, shift, D);
  }
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
    Scratch s(D, 8);
    float* x_buf = s.row(0);    // x's row, then the rounded x + y * gate
    float* y_buf = s.row(1);
    float* gate_buf = s.row(2);
    float* out_buf = s.row(3);  // a result row before its store
    const float* w = p.weight != nullptr ? float_row(p.weight, s.row(4), D) : nullptr;
    const float* bias = p.bias != nullptr ? float_row(p.bias, s.row(5), D) : nullptr;
    CachedRow<M> gate_rows, scale_rows, shift_rows;  // their rows 2, 6, 7
    for (int64_t r = begin; r < end; ++r) {
      const float* v = float_row(p.x + p.xl.offset(r), x_buf, D);
      if constexpr (GATED) {
        // x_new = x + y * gate, rounded to T and stored; the norm below sees the rounded value
        // (16 bits: the sum over x's floats, rounded into residual_out and read back).
        T* res = p.residual_out + p.rl.offset(r);
        const float* gate = p.gate != nullptr
                                ? gate_rows.get(p.gate + p.gate_b.offset(r), gate_buf, D)
                                : nullptr;
        const float* yf = float_row(p.y + p.yl.offset(r), y_buf, D);
        float* sum = distinct_out_row(res, out_buf, v, yf);
        gated_sum_row(v, yf, gate, sum, D);
        finish_row(sum, res, D);
        v = float_row(res, x_buf, D);
      }
      // RMSNorm: mean square. LayerNorm: mean first, then the mean squared deviation (two
      // passes over the cached row, no cancellation of E[x^2] - E[x]^2).
      const float mean = p.layer ? sum_of(v, D) / static_cast<float>(D) : 0.f;
      const float ss = sum_sq_dev(v, D, mean);
      const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + p.eps);
      const float* sc = scale_rows.get(p.scale + p.scale_b.offset(r), s.row(6), D);
      const float* sh = shift_rows.get(p.shift + p.shift_b.offset(r), s.row(7), D);
      T* out = p.out + p.ol.offset(r);
      float* o = distinct_out_row(out, out_buf, v, nullptr);
      modulate_row(o, v, mean, inv, w, bias, sc, sh, D);
      finish_row(o, out, D);
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

#if defined(LTX_CPU_SIMD_X86)
namespace simd {

// x + y * g as gated_sum_row computes it: the product rounded to fp32 on its own (the empty asm
// keeps the compiler from fusing it into an FMA with the sum), then the sum.
template <typename V>
__attribute__((always_inline)) inline V gated_sum_v(const V& x, const V& y, const V& g) {
  V yg = y * g;
  asm("" : "+v"(yg));
  return x + yg;
}

// The first n - n % W elements (W lanes: 16 / 8) of out = T(x + y * g), x and y of T (float,
// bf16 or fp16) converted in registers, g floats; returns how many.
template <typename T>
__attribute__((target("avx512f"))) int64_t gated_sum_span_avx512(T* out, const T* x,
                                                                 const T* y, const float* g,
                                                                 int64_t n) {
  const int64_t m = n - n % 16;
  for (int64_t i = 0; i < m; i += 16) {
    store_lanes_avx512(out + i, gated_sum_v(load_lanes_avx512(x + i), load_lanes_avx512(y + i),
                                            load<F16>(g + i)));
  }
  return m;
}

template <typename T>
__attribute__((target("avx2,fma,f16c"))) int64_t gated_sum_span_avx2(T* out, const T* x,
                                                                    const T* y, const float* g,
                                                                    int64_t n) {
  const int64_t m = n - n % 8;
  for (int64_t i = 0; i < m; i += 8) {
    store_lanes_avx2(out + i, gated_sum_v(load_lanes_avx2(x + i), load_lanes_avx2(y + i),
                                          load<F8>(g + i)));
  }
  return m;
}

}  // namespace simd
#endif  // LTX_CPU_SIMD_X86

// out[i] = T(x[i] + y[i] * g[i]) for n values, gated_sum_row's formula rounded once: x and y
// loaded, converted and summed in vector registers where simd_isa() has them, the scalar
// formula for the rest. out may be x or y (element by element, each read before it is
// written).
template <typename T>
inline void gated_sum_span_of(T* out, const T* x, const T* y, const float* g, int64_t n) {
  int64_t done = 0;
#if defined(LTX_CPU_SIMD_X86)
  if constexpr (std::is_same_v<T, float> || kIs16Bit<T>) {
    done = simd_span([&] { return simd::gated_sum_span_avx512(out, x, y, g, n); },
                     [&] { return simd::gated_sum_span_avx2(out, x, y, g, n); });
  }  // (double, which the checks refuse but the dispatch instantiates: the scalar loop)
#endif
  for (int64_t i = done; i < n; ++i) {
    const float yg = static_cast<float>(y[i]) * g[i];
    out[i] = static_cast<T>(static_cast<float>(x[i]) + yg);
  }
}

// gated_residual: out = x + y * gate, rows in parallel, each in one pass (gated_sum_span_of;
// the gate's rows converted to floats once per distinct row). out may be x (in place).
// Until run AA 16-bit rows went through three float scratch rows (x, y, the sum) and took 1.1x
// (bf16) / 1.5x (fp16) PyTorch's fused loop's time; in one pass 0.6-0.7x (PERFORMANCE.md, "The
// CPU backend").
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
    Scratch s(D, 1);  // the gate (cached)
    CachedRow<M> gate_rows;
    for (int64_t r = begin; r < end; ++r) {
      gated_sum_span_of(o + ol.offset(r), xp + xl.offset(r), yp + yl.offset(r),
                        gate_rows.get(gp + gate_b.offset(r), s.row(0), D), D);
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
