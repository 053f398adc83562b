#pragma once
// Normalise + lift (SPEC §2): raw train and query pixels to rows of 82 (81 values of float32
// x*4 - 0.5, then the appended 0), both sets in one launch: part of every timed run.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    lift_kernel(const float* __restrict__ train_raw, float* __restrict__ train_rows, std::int64_t train_elems,
                const float* __restrict__ query_raw, float* __restrict__ query_rows, std::int64_t query_elems) {
    const std::int64_t total = train_elems + query_elems;
    for (std::int64_t i = first_index(); i < total; i += grid_stride()) {
        if (i < train_elems) elem::lift(train_raw, train_rows, i);
        else elem::lift(query_raw, query_rows, i - train_elems);
    }
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_lift(const float* train_raw, float* train_rows, std::int64_t train_count, const float* query_raw,
                 float* query_rows, std::int64_t query_count, cudaStream_t stream) {
    NVTX_RANGE("lift");
    const std::int64_t train_elems = train_count * model::kFeatures, query_elems = query_count * model::kFeatures;
    lift_kernel<<<blocks_for(train_elems + query_elems), kThreads, 0, stream>>>(train_raw, train_rows, train_elems,
                                                                                query_raw, query_rows, query_elems);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
