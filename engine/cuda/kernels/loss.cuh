#pragma once
// The head's bias added to the batch's scores (the reference's acc + b, kept out of the matmul so no
// epilogue and no bias-pointer alignment rule is involved), the softmax/cross-entropy gradient
// (model::softmax_xent_grad_row) of every row, the head-bias gradient as column sums of it, and relu
// of the left half of the retained state for the first reconstructing block: one single-block
// launch. A single block makes the bias gradient a plain fixed-order reduction with no atomics:
// warp j owns class j, lane l sums rows l, l+32, ... in order, then a fixed shuffle tree (16, 8,
// 4, 2, 1) combines the lanes — the same order on every run. The relu is recomputed from the
// state rather than kept from the forward, so the state stays the only activation that crosses
// from forward to backward.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

inline constexpr int kLossThreads = 32 * model::kClasses;  // one warp per class

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kLossThreads)
    loss_kernel(int rows, float* __restrict__ scores, const float* __restrict__ bias,
                const std::int32_t* __restrict__ labels, float* dscores, float* __restrict__ dbias,
                const float* __restrict__ state, float* __restrict__ act_left) {
    for (int r = threadIdx.x; r < rows; r += blockDim.x) elem::loss_row(scores, bias, labels, rows, dscores, r);
    for (int i = threadIdx.x; i < rows * model::kHalf; i += blockDim.x) elem::relu_left(state, act_left, i);
    __syncthreads();  // every row's dscores written (global memory, same block) before the column sums
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    if (warp < model::kClasses) {  // whole warps only: the shuffles below need all 32 lanes
        float acc = 0.0f;
        for (int r = lane; r < rows; r += 32) acc += dscores[r * model::kClasses + warp];
        for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (lane == 0) dbias[warp] = acc;
    }
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_loss(int rows, float* scores, const float* bias, const std::int32_t* labels, float* dscores, float* dbias,
                 const float* state, float* act_left, cudaStream_t stream) {
    NVTX_RANGE("loss");
    loss_kernel<<<1, kLossThreads, 0, stream>>>(rows, scores, bias, labels, dscores, dbias, state, act_left);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
