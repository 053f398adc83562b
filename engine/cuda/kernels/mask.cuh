#pragma once
// The mask-multiply of the backward on its own: dhalf += dtmp ⊙ [half > 0], the result also copied
// into its branch's gradient slot. Used only where no rebuild follows to fuse it into (the left half
// of block 0, whose rebuild training never needs).
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    mask_kernel(int elems, float* __restrict__ dhalf, const float* __restrict__ dtmp, const float* __restrict__ half,
                float* __restrict__ grad_copy) {
    for (std::int64_t i = first_index(); i < elems; i += grid_stride())
        elem::mask(dhalf, dtmp, half, grad_copy, static_cast<int>(i));
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_mask(int rows, float* dhalf, const float* dtmp, const float* half, float* grad_copy, cudaStream_t stream) {
    NVTX_RANGE("mask");
    const int elems = rows * model::kHalf;
    mask_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(elems, dhalf, dtmp, half, grad_copy);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
