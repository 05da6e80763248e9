// Maps torch dtypes to native CUDA types, and run-time choices to compile-time constants.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "common/op_checks.h"

namespace ltx {

template <typename T>
struct CudaType;
template <>
struct CudaType<float> { using type = float; };
template <>
struct CudaType<at::Half> { using type = __half; };
template <>
struct CudaType<at::BFloat16> { using type = __nv_bfloat16; };

// f(std::true_type{}) or f(std::false_type{}) as `b` is true or false: a run-time flag picks a
// kernel instance (f's parameter's ::value is the flag as a compile-time constant). Returns
// what f returns.
template <typename F>
decltype(auto) dispatch_bool(bool b, F&& f) {
  return b ? f(std::true_type{}) : f(std::false_type{});
}

}  // namespace ltx

// Runs the body with `scalar_t` bound to the native CUDA type of `dtype` (float, __half,
// __nv_bfloat16); any other dtype is an error naming `name`.
#define LTX_DISPATCH_FLOAT_TYPES(dtype, name, ...)                                  \
  [&] {                                                                               \
    switch (dtype) {                                                                  \
      case at::kFloat: {                                                              \
        using scalar_t = float;                                                       \
        return __VA_ARGS__();                                                         \
      }                                                                               \
      case at::kHalf: {                                                               \
        using scalar_t = __half;                                                      \
        return __VA_ARGS__();                                                         \
      }                                                                               \
      case at::kBFloat16: {                                                           \
        using scalar_t = __nv_bfloat16;                                               \
        return __VA_ARGS__();                                                         \
      }                                                                               \
      default:                                                                        \
        LTX_CHECK(false, name, ": unsupported dtype ", dtype);                         \
    }                                                                                 \
  }()
