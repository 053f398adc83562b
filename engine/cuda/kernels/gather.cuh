#pragma once
// Batch gather from the resident epoch order: rows of the lifted training set into the step's core
// state, their labels, and relu of the right half, which the first product of the forward reads.
// Fusing that relu here saves a launch per step. Without an order (prediction) row r is row r.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    gather_kernel(int elems, const std::int32_t* __restrict__ order, std::int64_t first,
                  const float* __restrict__ src_rows, const std::int32_t* __restrict__ src_labels,
                  float* __restrict__ state, float* __restrict__ act_right, std::int32_t* __restrict__ labels) {
    for (std::int64_t i = first_index(); i < elems; i += grid_stride())
        elem::gather(order, first, src_rows, src_labels, state, act_right, labels, static_cast<int>(i));
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_gather(int rows, const std::int32_t* order, std::int64_t first, const float* src_rows,
                   const std::int32_t* src_labels, float* state, float* act_right, std::int32_t* labels,
                   cudaStream_t stream) {
    NVTX_RANGE("gather");
    const int elems = rows * model::kFeatures;
    gather_kernel<<<blocks_for(elems), kThreads, 0, stream>>>(elems, order, first, src_rows, src_labels, state,
                                                              act_right, labels);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
