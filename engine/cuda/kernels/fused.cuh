#pragma once
// The fused path's kernels (engine/cuda/fused.hpp holds what they compute): per SGD step the rows
// kernel (StepArgs::rows_per_block batch rows a block) and the grads kernel (a group of parameters
// a block), and the predict kernel (PredictArgs::tile query rows a block). Each phase of fused.hpp is a loop of the
// block's threads over its items, then __syncthreads(): the items of a phase are independent, so
// which thread takes which item changes nothing but speed, and every item's sums run in a fixed
// order — no atomics, the same bits on every replay.
#include "engine/cuda/fused.hpp"
#include "engine/cuda/kernels/common.cuh"

namespace revgraph::cuda::kernels {

// ---- kernels -----------------------------------------------------------------------------------

// Programmatic Dependent Launch (sm_90+): wait until the previous kernel in the stream has
// completed and its writes are visible — before this kernel reads anything that kernel writes, so
// the bytes are those of a plain launch — and let the next kernel be scheduled while this one runs.
// Both are no-ops for a kernel launched without the attribute (kernels::launch_fused_* choose).
// Where a kernel lets the next one go changes no bytes. The step's kernels let it go before their
// last phases (fused::step_rows_as, step_grads_as: their launch_dependents) rather than at their
// start, as first built: the task was faster so, and its energy the same (the next kernel's blocks
// waiting on SMs from the start cost no measurable power; bench/NOTES.md, "Levers tried, and what
// each gave", and "Energy").
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void programmatic_prologue() {
    wait_for_prior_grid();
    launch_dependents();
}

// Launch bounds with a minimum of 1 block an SM: ptxas may then give a thread the registers to hold
// a sum's operands at once (engine/cuda/ordered_sum.hpp). Without it, ptxas held the rows kernel to
// fewer registers than that and spilled in the grads kernel, sinking loads back into the chains of
// adds (nvcc -Xptxas -v: bench/NOTES.md, "Reading the fused kernels' PTX"). One task's step needs no
// more (rev88: 64 rows and 66 grads blocks, fewer than an H100's or H200's SMs); the price is fewer
// resident blocks an SM when many tasks run at once.
struct BlockExec {
    template <class F>
    __device__ __forceinline__ void issue(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) item(i);
    }
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        issue(count, item);
        fused::end_block_phase();
    }
    // Every thread, before it reads what the previous kernel wrote or writes what it reads.
    __device__ __forceinline__ void wait_for_prior_grid() const { kernels::wait_for_prior_grid(); }
    __device__ __forceinline__ void launch_dependents() const { kernels::launch_dependents(); }
};

// Each kernel is built for every sum order L the rule admits (fused::kSumLanes is the engine's; the
// kernel lab runs the others); the launchers pick the instantiation by the arguments' sum_lanes.
//
// The rows kernel waits for the previous kernel inside its first phase (fused::step_rows_as): where
// a step follows a step, after it has issued the copies of its rows; else before them.
template <int L>
__global__ void __launch_bounds__(fused::kRowsThreads, 1) fused_rows_kernel(fused::StepArgs args, bool weights_shared) {
    extern __shared__ __align__(16) float fused_smem[];  // 16-byte loads (fused_layout.hpp)
    BlockExec ex;
    fused::step_rows<L>(ex, args, static_cast<int>(blockIdx.x),
                        fused::carve_rows(fused_smem, args.param_count, weights_shared, args.rows_per_block));
}

template <int L>
__global__ void __launch_bounds__(fused::kGradsThreads, 1) fused_grads_kernel(fused::StepArgs args) {
    wait_for_prior_grid();
    extern __shared__ __align__(16) float fused_smem[];  // 16-byte loads (fused_layout.hpp)
    BlockExec ex;
    fused::step_grads<L>(ex, args, static_cast<int>(blockIdx.x), fused_smem);
}

template <int L>
__global__ void __launch_bounds__(fused::kPredictThreads, 1)
    fused_predict_kernel(fused::PredictArgs args, std::int64_t rows, bool weights_shared) {
    programmatic_prologue();
    extern __shared__ __align__(16) float fused_smem[];  // 16-byte loads (fused_layout.hpp)
    BlockExec ex;
    float* weights = weights_shared ? fused_smem : nullptr;
    fused::predict_tile<L>(ex, args, rows, static_cast<int>(blockIdx.x), weights,
                           fused::predict_state_at(fused_smem, args.param_count, weights_shared));
}

// ---- launchers ---------------------------------------------------------------------------------

// A plain launch, or with `programmatic` one the runtime may start while the stream's previous
// kernel still runs (captured into a graph as a programmatic edge).
template <class... Params, class... Args>
void launch_fused(void (*kernel)(Params...), unsigned int blocks, unsigned int threads, std::size_t smem,
                  bool programmatic, cudaStream_t stream, Args... args) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute[1]{};
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = programmatic ? 1 : 0;
    const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, args...);
    if (launched != cudaSuccess) (void)cudaGetLastError();  // else a later launcher's check reports it
    cudaCheck(launched);
}

bool fused_kernels_wait_programmatically() {
    // The griddepcontrol instructions exist only in code compiled for sm_90+: a kernel JIT-compiled
    // from older PTX (a -Dgpu_arch=80 build on an H200) would be launched early and never wait.
    // (Every instantiation is built from the same PTX target: the engine's order's stand for all.)
    constexpr int L = fused::kSumLanes;
    for (const void* kernel :
         {reinterpret_cast<const void*>(fused_rows_kernel<L>), reinterpret_cast<const void*>(fused_grads_kernel<L>),
          reinterpret_cast<const void*>(fused_predict_kernel<L>)}) {
        cudaFuncAttributes a{};
        cudaCheck(cudaFuncGetAttributes(&a, kernel));
        if (a.ptxVersion < 90 || a.binaryVersion < 90) return false;
    }
    return true;
}

// The current device's largest per-block shared memory, which a kernel may opt in to.
inline int optin_shared_bytes() {
    int device = 0, optin = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return optin;
}

std::size_t prepare_fused_kernels(int sum_lanes) {
    const int optin = optin_shared_bytes();
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        constexpr int L = decltype(l)::value;
        cudaCheck(cudaFuncSetAttribute(fused_rows_kernel<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        cudaCheck(cudaFuncSetAttribute(fused_grads_kernel<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        cudaCheck(cudaFuncSetAttribute(fused_predict_kernel<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    });
    return static_cast<std::size_t>(optin);
}

void launch_fused_rows(const fused::StepArgs& args, bool weights_shared, bool programmatic, cudaStream_t stream,
                       unsigned int threads) {
    NVTX_RANGE("fused_rows");
    if (const char* problem = fused::rows_per_block_problem(args.rows_per_block)) throw Error(problem);
    const std::size_t smem =
        fused::shared_bytes(fused::rows_state_floats(args.rows_per_block), args.param_count, weights_shared);
    model::with_sum_lanes(args.sum_lanes, [&](auto l) {
        launch_fused(fused_rows_kernel<decltype(l)::value>, static_cast<unsigned int>(fused::rows_blocks(args)),
                     threads != 0 ? threads : fused::kRowsThreads, smem, programmatic, stream, args, weights_shared);
    });
}

void launch_fused_grads(const fused::StepArgs& args, bool programmatic, cudaStream_t stream, unsigned int threads) {
    NVTX_RANGE("fused_grads");
    model::with_sum_lanes(args.sum_lanes, [&](auto l) {
        constexpr int L = decltype(l)::value;
        launch_fused(fused_grads_kernel<L>, static_cast<unsigned int>(fused::grads_blocks(args.depth)),
                     threads != 0 ? threads : fused::kGradsThreads, fused::grads_floats(L) * sizeof(float),
                     programmatic, stream, args);
    });
}

void launch_fused_predict(const fused::PredictArgs& args, std::int64_t rows, bool weights_shared, bool programmatic,
                          cudaStream_t stream, unsigned int threads) {
    NVTX_RANGE("fused_predict");
    if (const char* problem = fused::tile_problem(args.tile)) throw Error(problem);
    const auto tiles = static_cast<unsigned int>(fused::predict_blocks(args, rows));
    const std::size_t smem =
        fused::shared_bytes(fused::predict_state_floats(args.tile), args.param_count, weights_shared);
    model::with_sum_lanes(args.sum_lanes, [&](auto l) {
        launch_fused(fused_predict_kernel<decltype(l)::value>, tiles, threads != 0 ? threads : fused::kPredictThreads,
                     smem, programmatic, stream, args, rows, weights_shared);
    });
}

}  // namespace revgraph::cuda::kernels
