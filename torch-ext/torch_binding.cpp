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

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def(
      "rms_norm(Tensor! out, Tensor input, Tensor? weight, float eps, "
      "bool round_before_weight) -> ()");
  LTX_IMPL(ops, rms_norm);

  ops.def("rope(Tensor! out, Tensor input, Tensor cos, Tensor sin, bool interleaved) -> ()");
  LTX_IMPL(ops, rope);
  ops.def(
      "rope_qk(Tensor! q_out, Tensor! k_out, Tensor q, Tensor k, Tensor cos, Tensor sin, "
      "bool interleaved) -> ()");
  LTX_IMPL(ops, rope_qk);
  ops.def(
      "rms_norm_rope(Tensor! out, Tensor input, Tensor? weight, Tensor cos, Tensor sin, "
      "float eps, bool interleaved, int num_heads) -> ()");
  LTX_IMPL(ops, rms_norm_rope);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
