// Activations on the CPU, the twin of ltx_kernels_cuda/activation.cu: same checks, the same
// fp32 formulas (common/activation_math.h; on x86-64 in vector registers where the CPU has
// them, activation_simd.h), one rounding at the store.
#include <algorithm>
#include <string_view>
#include <type_traits>

#include "common/activation_math.h"
#include "common/op_checks.h"
#include "ltx_kernels_cpu/activation_simd.h"
#include "ltx_kernels_cpu/common.h"
#include "torch-ext/torch_binding.h"

namespace ltx {
namespace cpu {

// out[i] = act(x[i]) (elementwise), or gated_act(x[i], x2[i]) (x2: the second half of x's row,
// x + n, or silu_mul's up row). fp32, bf16 and fp16 load, compute and store in registers
// (activation_simd.h, rounded once at the store); fp64 is narrowed a chunk at a time into
// floats on the stack, computed there and widened back.
template <typename T, Act A, bool GATED>
inline void activation_span(T* out, const T* x, int64_t n, const T* x2 = nullptr) {
  if constexpr (std::is_same_v<T, float> || kIs16Bit<T>) {
    act_span_of<A, GATED>(out, x, GATED ? x2 : nullptr, n);
  } else {
    constexpr int64_t kChunk = 512;
    float a[kChunk], b[GATED ? kChunk : 1], y[kChunk];
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t len = std::min(kChunk, n - c);
      load_row(x + c, a, len);
      if constexpr (GATED) load_row(x2 + c, b, len);
      act_span_of<A, GATED>(y, a, GATED ? b : nullptr, len);
      store_row(y, out + c, len);
    }
  }
}

// Rows of D outputs each (D = H for the gated ops, which read 2H per row, or with `up` silu_mul's
// gate and up rows of H).
template <typename T, Act A, bool GATED>
void activation_rows(T* out, const T* x, const RowLayout& xl, const RowLayout& ol, int64_t D,
                     const T* up = nullptr, const RowLayout* ul = nullptr) {
  at::parallel_for(0, xl.rows, grain_rows(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + xl.offset(r);
      activation_span<T, A, GATED>(out + ol.offset(r), xr, D,
                                   up != nullptr ? up + ul->offset(r) : xr + D);
    }
  });
}

template <typename T, Act A>
void activation_flat(T* out, const T* x, int64_t n) {
  // Contiguous input and output of an elementwise op: one flat range, split evenly.
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    activation_span<T, A, false>(out + begin, x + begin, end - begin);
  });
}

template <Act A, bool GATED>
void run_activation(at::Tensor& out, const at::Tensor& x) {
  const int64_t D = out.size(-1);
  LTX_CPU_DISPATCH_FLOAT_TYPES(x.scalar_type(), "input", [&] {
    using T = scalar_t;
    const T* xp = x.const_data_ptr<T>();
    T* op = out.mutable_data_ptr<T>();
    if (!GATED && x.is_contiguous() && out.is_contiguous()) {
      activation_flat<T, A>(op, xp, x.numel());
    } else {
      const RowLayout xl = row_layout(x, "input"), ol = row_layout(out, "out");
      activation_rows<T, A, GATED>(op, xp, xl, ol, D);
    }
  });
}

}  // namespace cpu
}  // namespace ltx

void gelu_tanh(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_activation_args(out, x);
  if (out.numel() == 0) return;
  cpu::run_activation<Act::kGeluTanh, false>(out, x);
}

void silu(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_activation_args(out, x);
  if (out.numel() == 0) return;
  cpu::run_activation<Act::kSilu, false>(out, x);
}

void geglu(at::Tensor& out, const at::Tensor& input, std::string_view approximate) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  const bool is_tanh = geglu_is_tanh(approximate);
  check_gated_activation_args(out, x);
  if (out.numel() == 0) return;
  if (is_tanh) {
    cpu::run_activation<Act::kGeluTanh, true>(out, x);
  } else {
    cpu::run_activation<Act::kGeluErf, true>(out, x);
  }
}

void silu_and_mul(at::Tensor& out, const at::Tensor& input) {
  using namespace ltx;
  const at::Tensor x = contiguous_rows(input, "input");
  check_gated_activation_args(out, x);
  if (out.numel() == 0) return;
  cpu::run_activation<Act::kSilu, true>(out, x);
}

void silu_mul(at::Tensor& out, const at::Tensor& gate_in, const at::Tensor& up_in) {
  using namespace ltx;
  const at::Tensor gate = contiguous_rows(gate_in, "gate");
  const at::Tensor up = contiguous_rows(up_in, "up");
  check_silu_mul_args(out, gate, up);
  if (out.numel() == 0) return;
  LTX_CPU_DISPATCH_FLOAT_TYPES(gate.scalar_type(), "gate", [&] {
    using T = scalar_t;
    const RowLayout gl = row_layout(gate, "gate"), ul = row_layout(up, "up");
    const RowLayout ol = row_layout(out, "out");
    cpu::activation_rows<T, Act::kSilu, true>(out.mutable_data_ptr<T>(), gate.const_data_ptr<T>(),
                                              gl, ol, out.size(-1), up.const_data_ptr<T>(), &ul);
  });
}
