#pragma once
// The fused path's kernels (engine/cuda/fused.hpp holds what they compute): per SGD step the rows
// kernel (StepArgs::rows_per_block batch rows a block) and the grads kernel (a group of parameters
// a block), and the predict kernel (PredictArgs::tile query rows a block). Each phase of fused.hpp is a loop of the
// block's threads over its items, then __syncthreads(): the items of a phase are independent, so
// which thread takes which item changes nothing but speed, and every item's sums run in a fixed
// order — no atomics, the same bits on every replay.
#include <string>

#include "engine/cuda/fused.hpp"
#include "engine/cuda/fused_cluster.hpp"
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

// ---- whole epochs on a thread-block cluster (engine/cuda/fused_cluster.hpp) ---------------------

// The cluster's registers and barrier: sm_90+ only (the launcher refuses older devices, and the
// kernel traps if it ever runs there). The barrier's arrive releases and its wait acquires at
// cluster scope: what one block wrote before it (the parameters, the stacks) is seen by every
// block after it, global memory included.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ int cluster_rank() {
    unsigned int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return static_cast<int>(r);
}
__device__ __forceinline__ int cluster_size() {
    unsigned int n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return static_cast<int>(n);
}
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#endif

// A group of a cluster block's threads runs a unit's phases as a kernel's block runs them, over its
// own threads and ending each phase at its own named barrier (id 1 + group; 0 is __syncthreads');
// nothing waits for another grid, and nothing lets one go (the next launch starts after this one).
struct GroupExec {
    int first_thread, threads, barrier;
    template <class F>
    __device__ __forceinline__ void issue(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x) - first_thread; i < count; i += threads) item(i);
    }
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        issue(count, item);
#if defined(RG_ASYNC_COPY)
        asm volatile("cp.async.wait_all;" ::: "memory");
#endif
        asm volatile("bar.sync %0, %1;" ::"r"(barrier), "r"(threads) : "memory");
    }
    __device__ __forceinline__ void wait_for_prior_grid() const {}
    __device__ __forceinline__ void launch_dependents() const {}
};

// Units rank·groups + group, then every blocks·groups-th after it, each group on its own slice of
// shared memory, then the cluster barrier (every thread of the cluster, whichever group it is in).
struct ClusterLoop {
    int groups;
    std::size_t group_floats;
    float* smem;
    template <class F>
    __device__ __forceinline__ void units(int count, F&& unit) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        const int threads = static_cast<int>(blockDim.x) / groups;
        const int group = static_cast<int>(threadIdx.x) / threads;
        GroupExec ex{group * threads, threads, 1 + group};
        float* const mine = smem + static_cast<std::size_t>(group) * group_floats;
        const int stride = cluster_size() * groups;
        for (int u = cluster_rank() * groups + group; u < count; u += stride) unit(ex, u, mine);
        cluster_barrier();
#else
        (void)count, (void)unit;
#endif
    }
};

// Cluster c of the launch runs task c: `tasks[c]`, or `one` where tasks is null.
template <int L>
__global__ void __launch_bounds__(fused::kClusterThreads, 1)
    fused_cluster_kernel(fused::EpochsArgs one, const fused::EpochsArgs* tasks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float fused_smem[];  // 16-byte loads (fused_layout.hpp)
    const fused::EpochsArgs a = tasks != nullptr ? tasks[blockIdx.x / static_cast<unsigned int>(cluster_size())] : one;
    const ClusterLoop loop{a.groups, fused::group_shared_bytes(a, L) / sizeof(float), fused_smem};
    fused::cluster_epochs<L>(loop, a);
#else
    (void)one, (void)tasks;
    __trap();
#endif
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

namespace {
// The current device's largest per-block shared memory, which a kernel may opt in to.
int optin_shared_bytes() {
    int device = 0, optin = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return optin;
}
}  // namespace

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

namespace {
// A launch of `tasks` clusters of `cluster_blocks` blocks each (`attribute` holds the cluster's
// shape; it must outlive the config).
cudaLaunchConfig_t cluster_launch(int cluster_blocks, int tasks, std::size_t smem, cudaStream_t stream,
                                  cudaLaunchAttribute& attribute) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned int>(cluster_blocks * tasks));
    config.blockDim = dim3(fused::kClusterThreads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned int>(cluster_blocks);
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return config;
}
}  // namespace

// Why whole epochs cannot run as one cluster launch here, or "" when they can: clusters need sm_90
// (code built for it, and the device), and the cluster's blocks with `smem` bytes each must fit a GPC.
std::string fused_cluster_problem(int cluster_blocks, int sum_lanes, std::size_t smem) {
    if (const char* problem = fused::cluster_blocks_problem(cluster_blocks)) return problem;
    int device = 0, major = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 9)
        return "fused: thread-block clusters need compute capability 9.0 or later (this GPU: " + std::to_string(major) +
               ".x); cuda-fused's two-kernel step runs here";
    std::string problem;
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        const void* kernel = reinterpret_cast<const void*>(fused_cluster_kernel<decltype(l)::value>);
        cudaFuncAttributes a{};
        cudaCheck(cudaFuncGetAttributes(&a, kernel));
        if (a.binaryVersion < 90) {
            problem = "fused: this build has no sm_90 code for the cluster kernel (built for " +
                      std::to_string(a.binaryVersion) + ")";
            return;
        }
        cudaLaunchAttribute attribute{};
        const cudaLaunchConfig_t config = cluster_launch(cluster_blocks, 1, smem, nullptr, attribute);
        int clusters = 0;
        cudaCheck(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
        if (clusters < 1)
            problem = "fused: no cluster of " + std::to_string(cluster_blocks) + " blocks with " +
                      std::to_string(smem) + " bytes of shared memory each fits this GPU";
    });
    return problem;
}

std::size_t prepare_fused_cluster_kernel(int sum_lanes) {
    const int optin = optin_shared_bytes();
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        constexpr int L = decltype(l)::value;
        cudaCheck(cudaFuncSetAttribute(fused_cluster_kernel<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        cudaCheck(cudaFuncSetAttribute(fused_cluster_kernel<L>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    });
    return static_cast<std::size_t>(optin);
}

void launch_fused_cluster(const fused::EpochsArgs& args, int cluster_blocks, int tasks,
                          const fused::EpochsArgs* device_tasks, cudaStream_t stream) {
    NVTX_RANGE("fused_cluster");
    if (const char* problem = fused::cluster_blocks_problem(cluster_blocks)) throw Error(problem);
    if (const char* problem = fused::rows_per_block_problem(args.step.rows_per_block)) throw Error(problem);
    if (const char* problem = fused::cluster_groups_problem(args.groups)) throw Error(problem);
    if (tasks < 1 || (tasks > 1 && device_tasks == nullptr))
        throw Error("fused: a cluster launch of several tasks needs their arguments on the device");
    const std::size_t smem = fused::cluster_shared_bytes(args, args.step.sum_lanes);
    model::with_sum_lanes(args.step.sum_lanes, [&](auto l) {
        cudaLaunchAttribute attribute{};
        const cudaLaunchConfig_t config = cluster_launch(cluster_blocks, tasks, smem, stream, attribute);
        const cudaError_t launched =
            cudaLaunchKernelEx(&config, fused_cluster_kernel<decltype(l)::value>, args, device_tasks);
        if (launched != cudaSuccess) (void)cudaGetLastError();
        cudaCheck(launched);
    });
}

}  // namespace revgraph::cuda::kernels
