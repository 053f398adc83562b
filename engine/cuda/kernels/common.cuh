#pragma once
// What every kernel shares: error checks, NVTX, and the launch shape of
// an elementwise kernel (256 threads, one element per thread, a grid-stride loop past 8192 blocks).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "engine/cuda_util/check.hpp"
#include "engine/model/math.hpp"
#include "engine/cuda_util/nvtx.hpp"

namespace revgraph::cuda::kernels {

inline constexpr int kThreads = 256;

inline unsigned int blocks_for(std::int64_t count) {
    const std::int64_t blocks = (count + kThreads - 1) / kThreads;
    return static_cast<unsigned int>(std::clamp<std::int64_t>(blocks, 1, 8192));
}

__device__ __forceinline__ std::int64_t first_index() {
    return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

}  // namespace revgraph::cuda::kernels
