// Host-side argument checks and row layouts shared by the CPU and CUDA entry points.
//
// Every op in this package treats its main tensor as `rows x D`: the last dim is the
// normalized / rotated one and must be contiguous, the leading dims are rows. Rows may be
// strided (views such as `x[:, 1:]` or one slice of a fused QKV projection): the leading dims
// are collapsed into at most two levels, each with its own stride, so a kernel finds row `r`
// at `(r / inner) * outer_stride + (r % inner) * inner_stride` without copying.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/string_view.h>

#include <optional>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/bcast_rows.h"

namespace ltx {

// Where each row of a `[..., D]` tensor starts, in elements.
struct RowLayout {
  int64_t rows = 0;          // number of rows (product of the leading dims)
  int64_t inner = 1;         // rows in the inner level
  int64_t outer_stride = 0;  // stride between inner blocks
  int64_t inner_stride = 0;  // stride between consecutive rows of a block

  int64_t offset(int64_t r) const {
    return (r / inner) * outer_stride + (r % inner) * inner_stride;
  }
  // True when every row start is a multiple of `vec` elements.
  bool strides_multiple_of(int64_t vec) const {
    return outer_stride % vec == 0 && inner_stride % vec == 0;
  }
};

// Collapses the leading dims of `t` (all but the last) into at most two strided levels.
// Returns false when three or more levels would be needed.
inline bool try_row_layout(const at::Tensor& t, RowLayout& out) {
  const int64_t nd = t.dim();
  const int64_t D = nd == 0 ? 1 : t.size(-1);
  std::vector<int64_t> sizes, strides;  // collapsed levels, innermost first
  for (int64_t d = nd - 2; d >= 0; --d) {
    const int64_t s = t.size(d), st = t.stride(d);
    if (s == 1) continue;
    if (!sizes.empty() && st == strides.back() * sizes.back()) {
      sizes.back() *= s;
    } else {
      sizes.push_back(s);
      strides.push_back(st);
    }
  }
  out = RowLayout{};
  out.rows = D == 0 ? 0 : t.numel() / D;
  if (sizes.empty()) {
    out.inner = 1;
    out.inner_stride = D;
    out.outer_stride = D;
    return true;
  }
  if (sizes.size() == 1) {  // one level: inner = 1 spares kernels a 64-bit division per row
    out.inner = 1;
    out.inner_stride = strides[0];
    out.outer_stride = strides[0];
    return true;
  }
  if (sizes.size() == 2) {
    out.inner = sizes[0];
    out.inner_stride = strides[0];
    out.outer_stride = strides[1];
    return true;
  }
  return false;
}

inline std::string dtype_name(at::ScalarType t) { return c10::toString(t); }

// Error messages are assembled here, each argument turned into a string by msg_part() (numbers
// with std::to_string, shapes as "[2, 3, 4]"), never through an ostream: on the H200 (torch
// 2.11), a failing check whose TORCH_CHECK message streamed an integer segfaulted after
// torch.compile had run in the process, while string-only messages did not. LTX_CHECK is
// TORCH_CHECK with such a message; like TORCH_CHECK it builds the message only on failure.
inline std::string shape_str(c10::IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

inline std::string msg_part(const char* s) { return s; }
inline std::string msg_part(const std::string& s) { return s; }
inline std::string msg_part(std::string_view s) { return std::string(s); }
inline std::string msg_part(c10::IntArrayRef v) { return shape_str(v); }
inline std::string msg_part(const std::vector<int64_t>& v) { return shape_str(v); }
inline std::string msg_part(at::ScalarType t) { return c10::toString(t); }
inline std::string msg_part(const c10::Device& d) { return d.str(); }
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
std::string msg_part(T v) {
  return std::to_string(v);
}

template <typename... Args>
std::string concat_msg(const Args&... args) {
  std::string s;
  ((s += msg_part(args)), ...);
  return s;
}

#define LTX_CHECK(cond, ...) TORCH_CHECK(cond, ::ltx::concat_msg(__VA_ARGS__))

inline bool is_float_type(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

// The main input: floating dtype, on `device`, last dim contiguous, at least 1-d.
inline void check_input(const at::Tensor& t, const char* name) {
  LTX_CHECK(t.dim() >= 1, name, ": expected at least 1 dimension, got a 0-d tensor");
  LTX_CHECK(is_float_type(t.scalar_type()), name,
              ": dtype must be float32, float16 or bfloat16, got ", dtype_name(t.scalar_type()));
  LTX_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1, name,
              ": the last dimension must be contiguous (stride 1), got stride ",
              std::to_string(t.stride(-1)));
}

inline void check_same_device(const at::Tensor& t, const at::Tensor& ref, const char* name,
                              const char* ref_name) {
  LTX_CHECK(t.device() == ref.device(), name, ": expected a tensor on ", ref.device(),
              " (the device of ", ref_name, "), got one on ", t.device());
}

// `out` must have x's shape, the given dtype, the same device, and a row layout.
inline void check_out(const at::Tensor& out, const at::Tensor& x, at::ScalarType dtype,
                      const char* name = "out") {
  check_same_device(out, x, name, "input");
  LTX_CHECK(out.sizes() == x.sizes(), name, ": expected shape ", shape_str(x.sizes()), ", got ",
              shape_str(out.sizes()));
  LTX_CHECK(out.scalar_type() == dtype, name, ": expected dtype ", dtype_name(dtype), ", got ",
              dtype_name(out.scalar_type()));
  LTX_CHECK(out.size(-1) <= 1 || out.stride(-1) == 1, name,
              ": the last dimension must be contiguous (stride 1), got stride ",
              std::to_string(out.stride(-1)));
}

// A per-feature vector (norm weight, bias): 1-d of size D, contiguous, x's dtype or float32.
inline void check_feature_vector(const at::Tensor& w, const at::Tensor& x, const char* name) {
  check_same_device(w, x, name, "input");
  LTX_CHECK(w.dim() == 1 && w.size(0) == x.size(-1), name, ": expected shape [",
              std::to_string(x.size(-1)), "] (the last dim of input), got ", shape_str(w.sizes()));
  LTX_CHECK(w.scalar_type() == x.scalar_type() || w.scalar_type() == at::kFloat, name,
              ": dtype must match input (", dtype_name(x.scalar_type()),
              ") or be float32, got ", dtype_name(w.scalar_type()));
  LTX_CHECK(w.numel() <= 1 || w.stride(0) == 1, name, ": must be contiguous");
}

inline void check_eps(double eps) {
  LTX_CHECK(eps >= 0.0, "eps: must be >= 0, got ", std::to_string(eps));
}

// Row layout of `t`, or an error naming it when its leading dims cannot be described by two
// strided levels (call .contiguous() on such a tensor first).
inline RowLayout row_layout(const at::Tensor& t, const char* name) {
  RowLayout l;
  LTX_CHECK(try_row_layout(t, l), name,
              ": the leading dims must collapse into at most two strided levels; got strides ",
              shape_str(t.strides()), " for shape ", shape_str(t.sizes()), " (call .contiguous() first)");
  return l;
}

// The input itself when its rows can be addressed with two strided levels, else a contiguous
// copy (rare: views with three or more non-mergeable leading dims).
inline at::Tensor contiguous_rows(const at::Tensor& t, const char* name) {
  check_input(t, name);
  RowLayout l;
  return try_row_layout(t, l) ? t : t.contiguous();
}

// How `t` broadcasts against the rows of `x` (all dims of x but the last): `t` has at most
// x.dim() dims, aligned to the right as in torch broadcasting; each leading dim of t is 1
// (broadcast, stride 0) or equal to x's; t's last dim must be `last` (x's last dim unless
// given). Example: x [B,S,D] with scale [D], [B,1,D] or [B,S,D]; q [B,H,S,D] with cos
// [B,1,S,D]. Errors name `name`.
inline BcastRows broadcast_rows(const at::Tensor& t, const at::Tensor& x, const char* name,
                                int64_t last = -1) {
  if (last < 0) last = x.size(-1);
  LTX_CHECK(t.dim() >= 1 && t.dim() <= x.dim(), name, ": expected 1 to ", std::to_string(x.dim()),
              " dims broadcastable to ", shape_str(x.sizes()), ", got ", shape_str(t.sizes()));
  LTX_CHECK(t.size(-1) == last, name, ": last dim must be ", std::to_string(last), ", got shape ", shape_str(t.sizes()));
  LTX_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1, name,
              ": the last dimension must be contiguous (stride 1), got stride ",
              std::to_string(t.stride(-1)));
  BcastRows b;
  const int64_t off = x.dim() - t.dim();
  for (int64_t d = x.dim() - 2; d >= 0; --d) {  // innermost leading dim first
    const int64_t xs = x.size(d);
    const int64_t td = d - off;
    const int64_t ts = td >= 0 ? t.size(td) : 1;
    LTX_CHECK(ts == 1 || ts == xs, name, ": shape ", shape_str(t.sizes()), " does not broadcast to ",
                shape_str(x.sizes()), " (dim ", std::to_string(d), ")");
    const int64_t st = (ts == 1) ? 0 : t.stride(td);
    if (xs == 1) continue;
    if (b.nd > 0 && st == b.stride[b.nd - 1] * b.size[b.nd - 1]) {
      b.size[b.nd - 1] *= xs;  // merges with the inner dim (also two broadcast dims: 0 == 0)
      continue;
    }
    LTX_CHECK(b.nd < BcastRows::kMaxDims, name, ": broadcasting against ", shape_str(x.sizes()),
                " needs more than ", std::to_string(BcastRows::kMaxDims), " strided levels; make it contiguous");
    b.size[b.nd] = xs;
    b.stride[b.nd] = st;
    ++b.nd;
  }
  return b;
}

// ---- per-op checks, shared by the CPU and CUDA entry points --------------------------------

// rms_norm: out is x's dtype, or float32 when the weight is float32 (diffusers' RMSNorm keeps
// the fp32 product when its weight is fp32).
inline void check_rms_norm_args(const at::Tensor& out, const at::Tensor& x,
                                const std::optional<at::Tensor>& weight, double eps) {
  check_input(x, "input");
  check_eps(eps);
  const bool w32 = weight.has_value() && weight->scalar_type() == at::kFloat;
  if (weight.has_value()) check_feature_vector(*weight, x, "weight");
  const at::ScalarType odt =
      (w32 && out.scalar_type() == at::kFloat) ? at::kFloat : x.scalar_type();
  check_out(out, x, odt);
}

// gelu_tanh, silu: out has input's shape and dtype.
inline void check_activation_args(const at::Tensor& out, const at::Tensor& x) {
  check_input(x, "input");
  check_out(out, x, x.scalar_type());
}

// geglu, silu_and_mul: input [..., 2H] (value half, then gate half) -> out [..., H], same dtype.
inline void check_gated_activation_args(const at::Tensor& out, const at::Tensor& x) {
  check_input(x, "input");
  LTX_CHECK(x.size(-1) % 2 == 0, "input: the last dim must be even (two halves of H), got ",
              std::to_string(x.size(-1)));
  check_same_device(out, x, "out", "input");
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() /= 2;
  LTX_CHECK(out.sizes() == at::IntArrayRef(shape), "out: expected shape ", shape_str(shape),
              " (input's with the last dim halved), got ", shape_str(out.sizes()));
  LTX_CHECK(out.scalar_type() == x.scalar_type(), "out: expected dtype ",
              dtype_name(x.scalar_type()), ", got ", dtype_name(out.scalar_type()));
  LTX_CHECK(out.size(-1) <= 1 || out.stride(-1) == 1,
              "out: the last dimension must be contiguous (stride 1), got stride ",
              std::to_string(out.stride(-1)));
}

// silu_mul: gate and up [..., H] (the two projections of a gated MLP, not concatenated), the
// same shape, dtype and device -> out [..., H], same dtype.
inline void check_silu_mul_args(const at::Tensor& out, const at::Tensor& gate,
                                const at::Tensor& up) {
  check_input(gate, "gate");
  check_input(up, "up");
  check_same_device(up, gate, "up", "gate");
  LTX_CHECK(up.sizes() == gate.sizes(), "up: expected gate's shape ", shape_str(gate.sizes()),
              ", got ", shape_str(up.sizes()));
  LTX_CHECK(up.scalar_type() == gate.scalar_type(), "up: expected gate's dtype ",
              dtype_name(gate.scalar_type()), ", got ", dtype_name(up.scalar_type()));
  check_out(out, gate, gate.scalar_type());
}

// geglu's `approximate`, as F.gelu's: "tanh" or "none" (erf). Returns true for "tanh".
inline bool geglu_is_tanh(std::string_view approximate) {
  LTX_CHECK(approximate == "tanh" || approximate == "none",
              "approximate: must be \"tanh\" or \"none\", got \"", std::string(approximate), "\"");
  return approximate == "tanh";
}

// A tensor the kernel writes: no two of its elements may share memory (an expanded view would
// have several rows write the same place).
inline void check_writable(const at::Tensor& t, const char* name) {
  LTX_CHECK(at::has_internal_overlap(t) != at::MemOverlap::Yes, name,
              ": is written, so its elements must not share memory (an expanded view?)");
}

// Two tensors that the kernel writes must not share memory.
inline void check_no_overlap(const at::Tensor& a, const at::Tensor& b, const char* name,
                             const char* other) {
  const at::MemOverlapStatus s = at::get_overlap_status(a, b);
  LTX_CHECK(s != at::MemOverlapStatus::Full && s != at::MemOverlapStatus::Partial, name,
              ": must not share memory with ", other);
}

// t must have x's shape and dtype (another input of the same rows, or one written in place).
inline void check_like_input(const at::Tensor& t, const at::Tensor& x, const char* name) {
  check_input(t, name);
  check_same_device(t, x, name, "input");
  LTX_CHECK(t.sizes() == x.sizes(), name, ": expected shape ", x.sizes(),
              " (the shape of input), got ", t.sizes());
  LTX_CHECK(t.scalar_type() == x.scalar_type(), name, ": expected dtype ",
              dtype_name(x.scalar_type()), " (the dtype of input), got ",
              dtype_name(t.scalar_type()));
}

// fused_add_rms_norm (vLLM / FlashInfer): both input and residual are written in place, so
// neither is copied; residual has input's shape and dtype; the weight is input's dtype or
// float32.
inline void check_fused_add_rms_norm_args(const at::Tensor& x, const at::Tensor& residual,
                                          const std::optional<at::Tensor>& weight, double eps) {
  check_input(x, "input");
  check_like_input(residual, x, "residual");
  check_eps(eps);
  if (weight.has_value()) check_feature_vector(*weight, x, "weight");
  check_writable(x, "input");
  check_writable(residual, "residual");
  check_no_overlap(residual, x, "residual", "input");
}

// ---- adaln / gated_residual_adaln ----

// The normalization that adaln applies before the modulation.
enum class NormKind { kRms, kLayer };

inline NormKind parse_norm(c10::string_view norm) {
  if (norm == c10::string_view("rms")) return NormKind::kRms;
  if (norm == c10::string_view("layer")) return NormKind::kLayer;
  LTX_CHECK(false, "norm: must be \"rms\" or \"layer\", got \"", std::string(norm), "\"");
  return NormKind::kRms;
}

// What the adaln kernels need beyond the pointers: how scale, shift and gate broadcast over
// x's rows, and which dtypes the operands have.
struct AdaLNArgs {
  NormKind norm = NormKind::kRms;
  BcastRows scale, shift, gate;
  bool mod32 = false;     // scale, shift (and gate) are float32, else input's dtype
  bool affine32 = false;  // weight / bias are float32, else input's dtype
};

// A modulation operand (scale, shift, gate): broadcasts against x's rows (see
// broadcast_rows), dtype input's or float32, and that of `like` (scale) when given.
inline BcastRows check_modulation(const at::Tensor& t, const at::Tensor& x, const char* name,
                                  const at::Tensor* like = nullptr) {
  check_same_device(t, x, name, "input");
  if (like == nullptr) {
    LTX_CHECK(t.scalar_type() == x.scalar_type() || t.scalar_type() == at::kFloat, name,
                ": dtype must match input (", dtype_name(x.scalar_type()),
                ") or be float32, got ", dtype_name(t.scalar_type()));
  } else {
    LTX_CHECK(t.scalar_type() == like->scalar_type(), name, ": dtype must match scale (",
                dtype_name(like->scalar_type()), "), got ", dtype_name(t.scalar_type()));
  }
  return broadcast_rows(t, x, name);
}

// adaln: out = norm(x) [* weight] [+ bias], then * (1 + scale) + shift. out has x's dtype.
// scale, shift: broadcast against x's rows, input's dtype or float32 (both the same). weight,
// bias: [D], input's dtype or float32 (both the same). bias is allowed with either norm
// (diffusers' RMSNorm has an optional bias too).
inline AdaLNArgs check_adaln_args(const at::Tensor& out, const at::Tensor& x,
                                  const at::Tensor& scale, const at::Tensor& shift,
                                  const std::optional<at::Tensor>& weight,
                                  const std::optional<at::Tensor>& bias,
                                  c10::string_view norm, double eps) {
  check_input(x, "input");
  AdaLNArgs a;
  a.norm = parse_norm(norm);
  check_eps(eps);
  a.scale = check_modulation(scale, x, "scale");
  a.shift = check_modulation(shift, x, "shift", &scale);
  a.mod32 = scale.scalar_type() == at::kFloat;
  if (weight.has_value()) check_feature_vector(*weight, x, "weight");
  if (bias.has_value()) check_feature_vector(*bias, x, "bias");
  if (weight.has_value() && bias.has_value()) {
    LTX_CHECK(bias->scalar_type() == weight->scalar_type(), "bias: dtype must match weight (",
                dtype_name(weight->scalar_type()), "), got ", dtype_name(bias->scalar_type()));
  }
  a.affine32 = (weight.has_value() && weight->scalar_type() == at::kFloat) ||
               (bias.has_value() && bias->scalar_type() == at::kFloat);
  check_out(out, x, x.scalar_type());
  check_writable(out, "out");
  return a;
}

// gated_residual_adaln: residual_out = x + y * gate (gate optional: x + y), rounded to x's
// dtype; out = adaln(residual_out, ...). y has x's shape and dtype; gate broadcasts like scale
// and has scale's dtype.
inline AdaLNArgs check_gated_residual_adaln_args(
    const at::Tensor& out, const at::Tensor& residual_out, const at::Tensor& x,
    const at::Tensor& y, const std::optional<at::Tensor>& gate, const at::Tensor& scale,
    const at::Tensor& shift, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, c10::string_view norm, double eps) {
  check_input(x, "input");
  check_like_input(y, x, "y");
  AdaLNArgs a = check_adaln_args(out, x, scale, shift, weight, bias, norm, eps);
  if (gate.has_value()) a.gate = check_modulation(*gate, x, "gate", &scale);
  check_out(residual_out, x, x.scalar_type(), "residual_out");
  check_writable(residual_out, "residual_out");
  check_no_overlap(residual_out, out, "residual_out", "out");
  return a;
}

// gated_residual: out = x + y * gate, rounded to x's dtype (gated_residual_adaln's
// residual_out alone). y has x's shape and dtype; gate broadcasts against x's rows, x's dtype
// or float32. out may be x itself (in place: each element is read before it is written, by
// the thread that writes it); any other sharing of memory with x, y or gate is an error.
// Returns how gate broadcasts.
inline BcastRows check_gated_residual_args(const at::Tensor& out, const at::Tensor& x,
                                           const at::Tensor& y, const at::Tensor& gate) {
  check_input(x, "input");
  check_like_input(y, x, "y");
  const BcastRows g = check_modulation(gate, x, "gate");
  check_out(out, x, x.scalar_type());
  check_writable(out, "out");
  const bool in_place = out.data_ptr() == x.data_ptr() && out.strides() == x.strides();
  if (!in_place) check_no_overlap(out, x, "out", "input");
  check_no_overlap(out, y, "out", "y");
  check_no_overlap(out, gate, "out", "gate");
  return g;
}

// ---- rope, rope_qk, rms_norm_rope ------------------------------------------------------------

// The addressing of t's own rows (its leading dims, merged where they can be) as a BcastRows,
// which takes up to BcastRows::kMaxDims strided levels: enough for views such as q of
// `q_proj(x).view(B, S, H, D).transpose(1, 2)` (three levels). False when more are needed.
inline bool try_strided_rows(const at::Tensor& t, BcastRows& b) {
  b = BcastRows{};
  for (int64_t d = t.dim() - 2; d >= 0; --d) {  // innermost leading dim first
    const int64_t s = t.size(d), st = t.stride(d);
    if (s == 1) continue;
    if (b.nd > 0 && st == b.stride[b.nd - 1] * b.size[b.nd - 1]) {
      b.size[b.nd - 1] *= s;
      continue;
    }
    if (b.nd == BcastRows::kMaxDims) return false;
    b.size[b.nd] = s;
    b.stride[b.nd] = st;
    ++b.nd;
  }
  return true;
}

// x's rows, or the rows of a contiguous copy when they need more levels than BcastRows has.
inline at::Tensor strided_rows_input(const at::Tensor& x, BcastRows& b) {
  if (try_strided_rows(x, b)) return x;
  const at::Tensor c = x.contiguous();
  try_strided_rows(c, b);
  return c;
}

// An output's rows: as try_strided_rows, or an error naming it.
inline BcastRows strided_rows_out(const at::Tensor& out, const char* name) {
  BcastRows b;
  LTX_CHECK(try_strided_rows(out, b), name, ": the leading dims need more than ",
              BcastRows::kMaxDims, " strided levels; got strides ", out.strides(), " for shape ",
              out.sizes());
  return b;
}

inline bool same_rows(const BcastRows& a, const BcastRows& b) {
  if (a.nd != b.nd) return false;
  for (int d = 0; d < a.nd; ++d)
    if (a.size[d] != b.size[d] || a.stride[d] != b.stride[d]) return false;
  return true;
}

// cos and sin: the same shape `[..., L]`, dtype float32 or x's, on x's device. R, the rotary
// dim (even, 2 <= R <= D: the first R elements of each row of x are rotated, the rest copied),
// is L, or 2L with `pairs` (pair tables: one cos / sin value per rotation pair, where the
// models' full tables repeat each value for both elements of a pair). Returns R.
inline int64_t check_rope_tables(const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& x,
                                 const char* x_name, bool pairs) {
  check_same_device(cos, x, "cos", x_name);
  check_same_device(sin, x, "sin", x_name);
  LTX_CHECK(cos.scalar_type() == x.scalar_type() || cos.scalar_type() == at::kFloat,
              "cos: dtype must match ", x_name, " (", dtype_name(x.scalar_type()),
              ") or be float32, got ", dtype_name(cos.scalar_type()));
  LTX_CHECK(sin.scalar_type() == cos.scalar_type(), "sin: dtype must match cos (",
              dtype_name(cos.scalar_type()), "), got ", dtype_name(sin.scalar_type()));
  LTX_CHECK(cos.dim() >= 1, "cos: expected at least 1 dimension, got a 0-d tensor");
  LTX_CHECK(sin.sizes() == cos.sizes(), "sin: expected the shape of cos ", cos.sizes(), ", got ",
              sin.sizes());
  const int64_t D = x.size(-1), L = cos.size(-1);
  if (pairs) {
    LTX_CHECK(L >= 1 && 2 * L <= D,
                "cos: with pair_tables the last dim (one value per pair: the rotary dim / 2) ",
                "must be in [1, ", D / 2, "] (half the last dim of ", x_name, "), got ", L);
    return 2 * L;
  }
  LTX_CHECK(L >= 2 && L % 2 == 0 && L <= D,
              "cos: the last dim (rotary dim) must be even and in [2, ", D, "] (the last dim of ",
              x_name, "), got ", L);
  return L;
}

// Where row r of x finds its cos and sin rows (rows of R, or of R / 2 values with `pairs`);
// `sin_like_cos` when both use the same offsets.
struct RopeTables {
  int64_t R = 0;
  bool pairs = false;
  BcastRows cos_rows, sin_rows;
  bool sin_like_cos = false;
};

inline RopeTables rope_tables(const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& x,
                              const char* x_name, bool pairs = false) {
  RopeTables t;
  t.R = check_rope_tables(cos, sin, x, x_name, pairs);
  t.pairs = pairs;
  t.cos_rows = broadcast_rows(cos, x, "cos", cos.size(-1));
  t.sin_rows = broadcast_rows(sin, x, "sin", cos.size(-1));
  t.sin_like_cos = same_rows(t.cos_rows, t.sin_rows);
  return t;
}

// rope: out (x's dtype and shape) = x with its first R elements rotated by cos / sin.
inline RopeTables check_rope_args(const at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                                  const at::Tensor& sin) {
  check_input(x, "input");
  const RopeTables t = rope_tables(cos, sin, x, "input");
  check_out(out, x, x.scalar_type());
  return t;
}

// q and k of the *_qk ops: each a float input, on one device, of one dtype and last dim.
inline void check_qk_pair(const at::Tensor& q, const at::Tensor& k) {
  check_input(q, "q");
  check_input(k, "k");
  check_same_device(k, q, "k", "q");
  LTX_CHECK(k.scalar_type() == q.scalar_type(), "k: dtype must match q (",
              dtype_name(q.scalar_type()), "), got ", dtype_name(k.scalar_type()));
  LTX_CHECK(k.size(-1) == q.size(-1), "k: last dim must match q's (", q.size(-1), "), got ",
              k.size(-1));
}

// rope_qk: q and k of one dtype and head dim (their head counts may differ), one cos / sin
// broadcast against each. Returns the tables for q's rows and for k's.
struct RopeQkTables {
  RopeTables q, k;
};

inline RopeQkTables check_rope_qk_args(const at::Tensor& q_out, const at::Tensor& k_out,
                                       const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& cos, const at::Tensor& sin) {
  check_qk_pair(q, k);
  RopeQkTables t{rope_tables(cos, sin, q, "q"), rope_tables(cos, sin, k, "k")};
  check_out(q_out, q, q.scalar_type(), "q_out");
  check_out(k_out, k, k.scalar_type(), "k_out");
  return t;
}

// rms_norm_rope: RMSNorm over the last dim (num_heads == 1) or over each of num_heads equal
// parts of it, then RoPE on each normalized row. Returns x and out viewed as [..., H, D / H]
// (unchanged when num_heads == 1) and the tables; weight is [D / H]; cos / sin broadcast
// against that view.
struct NormRopeViews {
  at::Tensor x, out;
  RopeTables tab;
};

inline NormRopeViews check_rms_norm_rope_args(const at::Tensor& out, const at::Tensor& input,
                                              const std::optional<at::Tensor>& weight,
                                              const at::Tensor& cos, const at::Tensor& sin,
                                              double eps, int64_t num_heads,
                                              bool pair_tables,
                                              const char* x_name = "input",
                                              const char* out_name = "out",
                                              const char* w_name = "weight") {
  check_input(input, x_name);
  check_eps(eps);
  LTX_CHECK(num_heads >= 1, "num_heads: must be >= 1, got ", num_heads);
  LTX_CHECK(input.size(-1) % num_heads == 0, "num_heads: ", num_heads,
              " does not divide the last dim of ", x_name, " (", input.size(-1), ")");
  check_out(out, input, input.scalar_type(), out_name);
  NormRopeViews v{input, out};
  if (num_heads > 1) {
    const int64_t hd = input.size(-1) / num_heads;
    v.x = input.unflatten(-1, {num_heads, hd});
    v.out = out.unflatten(-1, {num_heads, hd});
  }
  if (weight.has_value()) check_feature_vector(*weight, v.x, w_name);
  v.tab = rope_tables(cos, sin, v.x, x_name, pair_tables);
  return v;
}

// rms_norm_rope_qk: rms_norm_rope on q and k with one cos / sin: q and k of one dtype, device
// and last dim (their leading dims may differ: GQA); weights each optional, fp32 or the
// inputs' dtype, the same dtype when both are given.
struct NormRopeQkViews {
  NormRopeViews q, k;
};

inline NormRopeQkViews check_rms_norm_rope_qk_args(
    const at::Tensor& q_out, const at::Tensor& k_out, const at::Tensor& q, const at::Tensor& k,
    const std::optional<at::Tensor>& q_weight, const std::optional<at::Tensor>& k_weight,
    const at::Tensor& cos, const at::Tensor& sin, double eps, int64_t num_heads,
    bool pair_tables) {
  check_qk_pair(q, k);
  if (q_weight.has_value() && k_weight.has_value()) {
    LTX_CHECK(k_weight->scalar_type() == q_weight->scalar_type(),
                "k_weight: dtype must match q_weight (", dtype_name(q_weight->scalar_type()),
                "), got ", dtype_name(k_weight->scalar_type()));
  }
  return NormRopeQkViews{
      check_rms_norm_rope_args(q_out, q, q_weight, cos, sin, eps, num_heads, pair_tables, "q",
                               "q_out", "q_weight"),
      check_rms_norm_rope_args(k_out, k, k_weight, cos, sin, eps, num_heads, pair_tables, "k",
                               "k_out", "k_weight")};
}

// Rows that read one table row, walked next to each other. When cos and sin broadcast over a
// leading dim of x that has a dim inside it where they do not (LTX-Video's fp32 tables computed
// once and expanded over the batch: x [B, S, D], cos [B, S, D] with batch stride 0), the rows
// in x's order read each table row B times, S rows apart: from DRAM again each time once the
// rows in between no longer fit in L2 (LTX's tables are as large as q and k together). Moving
// the shared dims inside the others (rows in [S, B] order) puts the rows of one table row side
// by side, in one block, so all but the first find it in L1 / L2. x, out and the tables of each
// view are permuted alike, so each row's result is unchanged. Returns false, with the views
// untouched, when no shared dim lies outside another, or when x's or out's rows would then need
// more strided levels than BcastRows holds (x would be copied). Views of one call (q and k)
// must have one shape; they are permuted together or not at all.
inline bool shared_table_rows_inner(NormRopeViews* const* views, int n, const at::Tensor& cos,
                                    const at::Tensor& sin) {
  const at::Tensor& x0 = views[0]->x;
  const int64_t lead = x0.dim() - 1;
  auto shared = [&](const at::Tensor& t, int64_t d) {  // t broadcasts over x's dim d
    const int64_t td = d - (x0.dim() - t.dim());
    return td < 0 || t.size(td) == 1 || t.stride(td) == 0;
  };
  std::vector<int64_t> keep, inner;
  bool outside = false;  // a shared dim outside a kept dim of size > 1
  for (int64_t d = 0; d < lead; ++d) {
    if (x0.size(d) > 1 && shared(cos, d) && shared(sin, d)) {
      inner.push_back(d);
    } else {
      outside = outside || (x0.size(d) > 1 && !inner.empty());
      keep.push_back(d);
    }
  }
  if (!outside) return false;
  std::vector<int64_t> order = keep;
  order.insert(order.end(), inner.begin(), inner.end());
  order.push_back(lead);
  std::vector<at::Tensor> xs, outs;
  for (int i = 0; i < n; ++i) {
    xs.push_back(views[i]->x.permute(order));
    outs.push_back(views[i]->out.permute(order));
    BcastRows b;
    if (!try_strided_rows(xs.back(), b) || !try_strided_rows(outs.back(), b)) return false;
  }
  std::vector<int64_t> shape(x0.sizes().begin(), x0.sizes().end() - 1);
  shape.push_back(cos.size(-1));
  const at::Tensor c = cos.expand(shape).permute(order), s = sin.expand(shape).permute(order);
  for (int i = 0; i < n; ++i) {
    views[i]->x = xs[i];
    views[i]->out = outs[i];
    views[i]->tab = rope_tables(c, s, xs[i], "input", views[i]->tab.pairs);
  }
  return true;
}

}  // namespace ltx
