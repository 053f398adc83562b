#pragma once
// SGD with momentum and weight decay (model::sgd_update) on every parameter: one thread each, the
// flat parameter, gradient and momentum buffers share model::Layout's offsets.
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads)
    sgd_kernel(std::int64_t count, float* __restrict__ params, float* __restrict__ velocity,
               const float* __restrict__ grads, float lr, float momentum, float weight_decay) {
    for (std::int64_t i = first_index(); i < count; i += grid_stride())
        elem::sgd(params, velocity, grads, lr, momentum, weight_decay, i);
}

// ---- launcher ----------------------------------------------------------------------------------

void launch_sgd(std::int64_t count, float* params, float* velocity, const float* grads, float lr, float momentum,
                float weight_decay, cudaStream_t stream) {
    NVTX_RANGE("sgd");
    sgd_kernel<<<blocks_for(count), kThreads, 0, stream>>>(count, params, velocity, grads, lr, momentum,
                                                           weight_decay);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
