#pragma once
// Prediction: the head's bias added to each query row's scores (the reference's acc + b), then the
// argmax of its 10 scores (model::argmax_row, lowest index on ties), int64.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    argmax_kernel(std::int64_t rows, float* __restrict__ scores, const float* __restrict__ bias,
                  std::int64_t* __restrict__ predictions) {
    for (std::int64_t r = first_index(); r < rows; r += grid_stride()) elem::argmax(scores, bias, predictions, r);
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_argmax(std::int64_t rows, float* scores, const float* bias, std::int64_t* predictions,
                   cudaStream_t stream) {
    NVTX_RANGE("argmax");
    argmax_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(rows, scores, bias, predictions);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
