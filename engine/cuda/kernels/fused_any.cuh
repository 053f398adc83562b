#pragma once
// cuda-fused's kernels at every width but 82 (engine/cuda/fused_any/step.hpp holds what they
// compute, engine/cuda/fused_any_shape.hpp their launch shapes and the staging rule): the rows and
// grads kernels of a step and the predict kernel, the half width read from Args at run time. Each
// phase is a loop of the block's threads over its items, then __syncthreads(): no atomics, every
// sum in a fixed order, the same bits on every replay and as the emulator's.
//
// They run fused_any's ProgrammaticBlockExec always: its waits are no-ops in a plain launch, and in
// a programmatic one (sm_90+, RuntimeOptions::programmatic_launch) every kernel waits for the
// previous one's writes before it reads what that one writes, as kernels/fused.cuh's do.
#include "engine/cuda/fused_any/kernels.cuh"
#include "engine/cuda/fused_any_shape.hpp"
#include "engine/cuda/kernels/common.cuh"
#include "engine/cuda/kernels/fused.cuh"  // launch_fused: a plain or programmatic launch

namespace revgraph::cuda::kernels {

__global__ void fused_any_rows_kernel(fused_any::Args args) {
    extern __shared__ float fused_any_smem[];
    fused_any::step_rows<0>(fused_any::ProgrammaticBlockExec{}, args, static_cast<int>(blockIdx.x), fused_any_smem);
}

__global__ void fused_any_grads_kernel(fused_any::Args args) {
    fused_any::step_grads<0>(fused_any::ProgrammaticBlockExec{}, args, static_cast<int>(blockIdx.x));
}

__global__ void fused_any_predict_kernel(fused_any::Args args) {
    extern __shared__ float fused_any_smem[];
    fused_any::predict<0>(fused_any::ProgrammaticBlockExec{}, args, static_cast<int>(blockIdx.x), fused_any_smem);
}

std::size_t prepare_fused_any_kernels() {
    int device = 0, optin = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    for (const void* kernel :
         {reinterpret_cast<const void*>(fused_any_rows_kernel), reinterpret_cast<const void*>(fused_any_grads_kernel),
          reinterpret_cast<const void*>(fused_any_predict_kernel)})
        cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    return static_cast<std::size_t>(optin);
}

bool fused_any_kernels_wait_programmatically() {
    // As fused_kernels_wait_programmatically(): griddepcontrol exists only in sm_90+ code.
    for (const void* kernel :
         {reinterpret_cast<const void*>(fused_any_rows_kernel), reinterpret_cast<const void*>(fused_any_grads_kernel),
          reinterpret_cast<const void*>(fused_any_predict_kernel)}) {
        cudaFuncAttributes a{};
        cudaCheck(cudaFuncGetAttributes(&a, kernel));
        if (a.ptxVersion < 90 || a.binaryVersion < 90) return false;
    }
    return true;
}

// A block's shared memory beyond the 48 KB every block gets needs the opt-in above; a block whose
// scratch alone passes the device's limit cannot run, said in one line rather than as a launch error.
static std::size_t any_block_bytes(std::size_t scratch, const fused_any::Args& args, std::size_t limit) {
    return fused_any::block_bytes_within(scratch, static_cast<std::size_t>(args.params), args.staged != 0, args.half,
                                         limit);
}

void launch_fused_any_rows(const fused_any::Args& args, std::size_t smem_limit, bool programmatic,
                           cudaStream_t stream) {
    NVTX_RANGE("fused_any_rows");
    const std::size_t smem =
        any_block_bytes(fused_any::rows_scratch_floats(args.half, args.rows_per_block), args, smem_limit);
    launch_fused(fused_any_rows_kernel,
                 static_cast<unsigned int>(fused_any::blocks_for(args.rows, args.rows_per_block)),
                 fused_any::kRowsThreads, smem, programmatic, stream, args);
}

void launch_fused_any_grads(const fused_any::Args& args, bool programmatic, cudaStream_t stream) {
    NVTX_RANGE("fused_any_grads");
    launch_fused(fused_any_grads_kernel,
                 static_cast<unsigned int>(fused_any::blocks_for(args.params, fused_any::kGradsItems)),
                 fused_any::kGradsThreads, 0, programmatic, stream, args);
}

void launch_fused_any_predict(const fused_any::Args& args, std::size_t smem_limit, bool programmatic,
                              cudaStream_t stream) {
    NVTX_RANGE("fused_any_predict");
    const std::size_t smem =
        any_block_bytes(fused_any::predict_scratch_floats(args.half, args.rows_per_block), args, smem_limit);
    launch_fused(fused_any_predict_kernel,
                 static_cast<unsigned int>(fused_any::blocks_for(args.rows, args.rows_per_block)),
                 fused_any::kPredictThreads, smem, programmatic, stream, args);
}

}  // namespace revgraph::cuda::kernels
