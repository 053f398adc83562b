#pragma once
// The coupling update of one half: h = h + sign*(alpha*branch) with branch = relu(other half) Wᵀ
// from the preceding cuBLASLt product (the reference's rounding: the product is never scaled or
// accumulated inside the matmul), then relu(h) for the product that reads this half next.
// sign = +1 in the forward, -1 when the backward rebuilds the half. In the backward the
// mask-multiply of the other branch's input gradient, dhalf += dtmp ⊙ [h > 0], is fused in and
// reads h before it is rebuilt (one launch instead of two, h loaded once), and the finished dhalf
// is copied compactly into its branch's slot for the batched weight-gradient product.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    couple_kernel(int elems, float* __restrict__ half, const float* __restrict__ branch, float* __restrict__ act,
                  float sign, float alpha, float* __restrict__ dhalf, const float* __restrict__ dtmp,
                  float* __restrict__ grad_copy) {
    for (std::int64_t i = first_index(); i < elems; i += grid_stride())
        elem::couple(half, branch, act, sign, alpha, dhalf, dtmp, grad_copy, static_cast<int>(i));
}

// ---- launcher ----------------------------------------------------------------------------------

// dtmp null: no mask-multiply; grad_copy null: no copy; dhalf null: neither.
void launch_couple(int rows, float* half, const float* branch, float* act, float sign, float alpha, float* dhalf,
                   const float* dtmp, float* grad_copy, cudaStream_t stream) {
    NVTX_RANGE(dhalf != nullptr ? "couple_backward" : "couple");
    const int elems = rows * model::kHalf;
    couple_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(elems, half, branch, act, sign, alpha, dhalf, dtmp,
                                                              grad_copy);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
