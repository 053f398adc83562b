#pragma once
// The fused path's two kernels (engine/cuda/fused.hpp holds what they compute): a whole SGD step on
// one block of 1024 threads, and prediction with one block per tile of 64 query rows. Each phase of
// fused.hpp is a loop of the block's threads over its items, then __syncthreads(): the items of a
// phase are independent, so which thread takes which item changes nothing but speed, and every
// item's sums run in a fixed order — no atomics, the same bits on every replay.
#include "engine/cuda/fused.hpp"
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

struct BlockExec {
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) item(i);
        __syncthreads();
    }
};

__global__ void __launch_bounds__(fused::kStepThreads, 1)
    fused_step_kernel(fused::StepArgs args, fused::Placement placement) {
    extern __shared__ float fused_smem[];
    fused::carve(args, placement, fused_smem);
    BlockExec ex;
    fused::train_step(ex, args);
}

__global__ void __launch_bounds__(fused::kPredictThreads)
    fused_predict_kernel(fused::PredictArgs args, std::int64_t total_rows, fused::Placement placement) {
    extern __shared__ float fused_smem[];
    args.first = static_cast<std::int64_t>(blockIdx.x) * fused::kPredictTile;
    const std::int64_t left = total_rows - args.first;
    args.rows = static_cast<int>(left < fused::kPredictTile ? left : fused::kPredictTile);
    args.state += args.first * model::kFeatures;  // the tile's rows of the global query state (unless carved)
    fused::carve(args, placement, fused_smem);
    BlockExec ex;
    fused::predict_tile(ex, args);
}

// ---- launchers ---------------------------------------------------------------------------------

std::size_t prepare_fused_kernels() {
    int device = 0, optin = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cudaCheck(cudaFuncSetAttribute(fused_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    cudaCheck(cudaFuncSetAttribute(fused_predict_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    return static_cast<std::size_t>(optin);
}

void launch_fused_step(const fused::StepArgs& args, const fused::Placement& placement, cudaStream_t stream) {
    NVTX_RANGE("fused_step");
    fused_step_kernel<<<1, fused::kStepThreads, placement.bytes, stream>>>(args, placement);
    cudaCheck(cudaGetLastError());
}

void launch_fused_predict(const fused::PredictArgs& args, std::int64_t rows, const fused::Placement& placement,
                          cudaStream_t stream) {
    NVTX_RANGE("fused_predict");
    const auto tiles = static_cast<unsigned int>((rows + fused::kPredictTile - 1) / fused::kPredictTile);
    fused_predict_kernel<<<tiles, fused::kPredictThreads, placement.bytes, stream>>>(args, rows, placement);
    cudaCheck(cudaGetLastError());
}

}  // namespace revgraph::cuda::kernels
