// Programmatic dependent launch (sm_90+): the device side. Every kernel of this package starts
// with grid_dependency_sync(), before it reads or writes global memory. Launched with
// programmatic stream serialization (launch_kernel, common/launch.cuh), a kernel's blocks may
// start while the previous kernel in the stream finishes; `griddepcontrol.wait` holds them
// until that kernel has completed and its writes are visible, so the launch and the blocks'
// set-up overlap the previous kernel's tail instead of following it. A kernel launched without
// the attribute (before sm_90, LTX_PDL=0, a plain launch) returns from the wait at once.
// `griddepcontrol.launch_dependents` then lets the next kernel, if it is launched the same way,
// do the same with this one: its blocks wait in their own grid_dependency_sync() for this
// kernel's completion, so triggering at the start is safe whatever this kernel does after.
#pragma once

namespace ltx {

__device__ __forceinline__ void grid_dependency_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace ltx
