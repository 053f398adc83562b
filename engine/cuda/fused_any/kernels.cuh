#pragma once
// The device side of engine/cuda/fused_any/step.hpp: a block's way of running a phase (BlockExec),
// with which a kernel runs one block of a step function. Compiled alone at run time with
// -DRG_ENTRY_HALF=<half> (the race entry, by NVRTC, engine/export/), this file also defines the
// three kernels as extern "C" kernels for that one width.
#include "engine/cuda/fused_any/step.hpp"

namespace revgraph::cuda::fused_any {

// A phase's items spread over the block's threads, then a barrier: the items of a phase are
// independent, so which thread takes which changes nothing but speed. Launched plainly, a kernel
// has no predecessor to wait for and no successor to release. (kernels/fused.cuh has the same
// executor for the 82-wide step; this file includes nothing of it, so NVRTC compiles it alone.)
struct BlockExec {
    template <class F>
    __device__ __forceinline__ void issue(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) item(i);
    }
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        issue(count, item);
        __syncthreads();
    }
    __device__ __forceinline__ void wait_for_prior_grid() const {}
    __device__ __forceinline__ void launch_dependents() const {}
};

// Launched with Programmatic Dependent Launch (sm_90+): wait for the previous kernel's writes before
// reading them, and let the next kernel be scheduled (fused::step_rows' rows are copied before the
// wait; where this lets the next one go is a matter of power, not of bytes: bench/NOTES.md).
struct ProgrammaticBlockExec : BlockExec {
    __device__ __forceinline__ void wait_for_prior_grid() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    }
    __device__ __forceinline__ void launch_dependents() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    }
};

}  // namespace revgraph::cuda::fused_any

#if defined(RG_ENTRY_HALF)
// The race entry's kernels: one width, launched plainly (the A100 has no programmatic launch), named
// without C++ mangling so the entry finds them by name.
using namespace revgraph::cuda::fused_any;
extern "C" __global__ void rg_rows(Args a) {
    extern __shared__ float smem[];
    step_rows<RG_ENTRY_HALF>(BlockExec{}, a, static_cast<int>(blockIdx.x), smem);
}
extern "C" __global__ void rg_grads(Args a) { step_grads<RG_ENTRY_HALF>(BlockExec{}, a, static_cast<int>(blockIdx.x)); }
extern "C" __global__ void rg_predict(Args a) {
    extern __shared__ float smem[];
    predict<RG_ENTRY_HALF>(BlockExec{}, a, static_cast<int>(blockIdx.x), smem);
}
#endif
