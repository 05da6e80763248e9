// The op schemas (one list for all backends) and each backend's implementations. The namespace
// is TORCH_EXTENSION_NAME, unique per build, so that several builds load side by side.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

#if defined(CPU_KERNEL)
#define LTX_IMPL(ops, name) ops.impl(#name, c10::kCPU, &name)
#elif defined(CUDA_KERNEL)
#define LTX_IMPL(ops, name) ops.impl(#name, c10::kCUDA, &name)
#else
#error "build with CPU_KERNEL or CUDA_KERNEL defined"
#endif

// Under torch.compile, inductor gives a custom op its inputs with the strides they had when the
// graph was traced unless the op says otherwise ("needs_exact_strides", torch 2.11's default),
// and copies an input whose producer it changed: with inductor freezing, q, k and v projections
// of one input become one matmul whose output is split, so the exact-strides rule copied LTX's
// q and k (22 MB each at the 2B model's size) before every rms_norm_rope_qk. Every op here
// takes rows at any strides with a contiguous last dim (the rope ops address up to four
// strided levels, the row ops two, copying inside when more are needed), so the stride order
// is all they ask for.
static const std::vector<at::Tag> kLayout = {at::Tag::needs_fixed_stride_order};

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def(
      "rms_norm(Tensor! out, Tensor input, Tensor? weight, float eps, "
      "bool round_before_weight) -> ()", kLayout);
  LTX_IMPL(ops, rms_norm);

  ops.def("gelu_tanh(Tensor! out, Tensor input) -> ()", kLayout);
  LTX_IMPL(ops, gelu_tanh);
  ops.def("silu(Tensor! out, Tensor input) -> ()", kLayout);
  LTX_IMPL(ops, silu);
  ops.def("geglu(Tensor! out, Tensor input, str approximate) -> ()", kLayout);
  LTX_IMPL(ops, geglu);
  ops.def("silu_and_mul(Tensor! out, Tensor input) -> ()", kLayout);
  LTX_IMPL(ops, silu_and_mul);
  ops.def("silu_mul(Tensor! out, Tensor gate, Tensor up) -> ()", kLayout);
  LTX_IMPL(ops, silu_mul);
  ops.def(
      "fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor? weight, float eps) -> ()",
      kLayout);
  LTX_IMPL(ops, fused_add_rms_norm);
  ops.def(
      "adaln(Tensor! out, Tensor input, Tensor scale, Tensor shift, Tensor? weight, "
      "Tensor? bias, str norm, float eps) -> ()", kLayout);
  LTX_IMPL(ops, adaln);
  ops.def(
      "gated_residual_adaln(Tensor! out, Tensor! residual_out, Tensor input, Tensor y, "
      "Tensor? gate, Tensor scale, Tensor shift, Tensor? weight, Tensor? bias, str norm, "
      "float eps) -> ()", kLayout);
  LTX_IMPL(ops, gated_residual_adaln);
  ops.def("gated_residual(Tensor! out, Tensor input, Tensor y, Tensor gate) -> ()", kLayout);
  LTX_IMPL(ops, gated_residual);
  ops.def("rope(Tensor! out, Tensor input, Tensor cos, Tensor sin, bool interleaved) -> ()",
          kLayout);
  LTX_IMPL(ops, rope);
  ops.def(
      "rope_qk(Tensor! q_out, Tensor! k_out, Tensor q, Tensor k, Tensor cos, Tensor sin, "
      "bool interleaved) -> ()", kLayout);
  LTX_IMPL(ops, rope_qk);
  ops.def(
      "rms_norm_rope(Tensor! out, Tensor input, Tensor? weight, Tensor cos, Tensor sin, "
      "float eps, bool interleaved, int num_heads, bool pair_tables) -> ()", kLayout);
  LTX_IMPL(ops, rms_norm_rope);
  ops.def(
      "rms_norm_rope_qk(Tensor! q_out, Tensor! k_out, Tensor q, Tensor k, Tensor? q_weight, "
      "Tensor? k_weight, Tensor cos, Tensor sin, float eps, bool interleaved, "
      "int num_heads, bool pair_tables) -> ()", kLayout);
  LTX_IMPL(ops, rms_norm_rope_qk);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
