#pragma once
// Whole epochs of the fused step on a thread-block cluster (engine/cuda/fused_cluster.hpp holds
// what they compute and why): the kernel, the executor of a group of a block's threads, the loop
// over a set's units, and the launcher. sm_90+ only: built for older targets the kernel traps,
// and the host refuses to launch it first (fused_cluster_code_problem).
#include <string>

#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/kernels/common.cuh"
#include "engine/cuda/kernels/fused.cuh"

namespace revgraph::cuda::kernels {

// ---- kernel ------------------------------------------------------------------------------------

// The cluster's registers and barrier. The barrier's arrive releases and its wait acquires at
// cluster scope: what one block wrote before it (the parameters, the stacks) is seen by every
// block after it, global memory included (the rows units read the parameters through 4-byte
// cp.async.ca copies, which allocate in L1: the acquire is what keeps those from being stale).
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
// own threads, each phase ending at the group's own named barrier (id 1 + group; 0 is
// __syncthreads'); nothing waits for another grid, and nothing lets one go (the next launch starts
// after this one).
struct GroupExec {
    int first_thread, threads, barrier;
    template <class F>
    __device__ __forceinline__ void issue(int count, F&& item) const {
        for (int i = static_cast<int>(threadIdx.x) - first_thread; i < count; i += threads) item(i);
    }
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) const {
        issue(count, item);
        fused::wait_async_copies();
        asm volatile("bar.sync %0, %1;" ::"r"(barrier), "r"(threads) : "memory");
    }
    __device__ __forceinline__ void wait_for_prior_grid() const {}
    __device__ __forceinline__ void launch_dependents() const {}
};

// Each group runs its unit_slots of a set on its own slice of shared memory, then every thread of
// the cluster, whichever group it is in, meets at the cluster barrier. What a unit leaves in the
// slice stays there for the group's next unit (`keep` is the emulator's to honour: it poisons the
// rest).
struct ClusterLoop {
    int groups;
    std::size_t group_floats;
    float* smem;
    template <class F>
    __device__ __forceinline__ void units(int count, std::size_t /*keep*/, F&& unit) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        const int threads = static_cast<int>(blockDim.x) / groups;
        const int group = static_cast<int>(threadIdx.x) / threads;
        const GroupExec ex{group * threads, threads, 1 + group};
        float* const mine = smem + static_cast<std::size_t>(group) * group_floats;
        const fused::UnitSlots slots = fused::unit_slots(cluster_rank(), group, cluster_size(), groups);
        for (int u = slots.first; u < count; u += slots.stride) unit(ex, u, mine, u == slots.first);
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

// ---- launcher ----------------------------------------------------------------------------------

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

// Why this device, or this build's code for it, has no clusters, or "": before anything touches the
// kernel's attributes. Both versions, as fused_kernels_wait_programmatically: code JIT-compiled
// from compute_80 PTX on an sm_90 device reads binaryVersion 90, yet its body is the trap.
std::string fused_cluster_code_problem(int sum_lanes) {
    int device = 0, major = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 9)
        return "fused: thread-block clusters need compute capability 9.0 or later (this GPU: " + std::to_string(major) +
               ".x); cuda-fused's two-kernel step runs here";
    std::string problem;
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        cudaFuncAttributes a{};
        cudaCheck(cudaFuncGetAttributes(&a, fused_cluster_kernel<decltype(l)::value>));
        if (a.ptxVersion < 90 || a.binaryVersion < 90)
            problem = "fused: this build's cluster kernel was compiled for compute " + std::to_string(a.ptxVersion) +
                      ", not 90 (build with gpu_arch 90 for clusters)";
    });
    return problem;
}

std::size_t prepare_fused_cluster_kernel(int sum_lanes) {
    if (const std::string problem = fused_cluster_code_problem(sum_lanes); !problem.empty()) throw Error(problem);
    const int optin = optin_shared_bytes();
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        constexpr int L = decltype(l)::value;
        cudaCheck(cudaFuncSetAttribute(fused_cluster_kernel<L>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
        cudaCheck(cudaFuncSetAttribute(fused_cluster_kernel<L>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    });
    return static_cast<std::size_t>(optin);
}

std::string fused_cluster_problem(int cluster_blocks, int sum_lanes, std::size_t smem) {
    if (const char* problem = fused::cluster_blocks_problem(cluster_blocks)) return problem;
    if (std::string problem = fused_cluster_code_problem(sum_lanes); !problem.empty()) return problem;
    std::string problem;
    model::with_sum_lanes(sum_lanes, [&](auto l) {
        cudaLaunchAttribute attribute{};
        const cudaLaunchConfig_t config = cluster_launch(cluster_blocks, 1, smem, nullptr, attribute);
        int clusters = 0;
        const cudaError_t asked = cudaOccupancyMaxActiveClusters(
            &clusters, reinterpret_cast<const void*>(fused_cluster_kernel<decltype(l)::value>), &config);
        if (asked != cudaSuccess) (void)cudaGetLastError();  // a shape the device refuses outright: said below
        if (asked != cudaSuccess || clusters < 1)
            problem = "fused: no cluster of " + std::to_string(cluster_blocks) + " blocks with " +
                      std::to_string(smem) + " bytes of shared memory each fits this GPU";
    });
    return problem;
}

fused::EpochsArgs fit_fused_cluster(fused::EpochsArgs a, int cluster_blocks) {
    const std::size_t limit = prepare_fused_cluster_kernel(a.step.sum_lanes);  // throws sans clusters
    a.weights_shared = fused::cluster_weights_fit(a.step.rows_per_block, a.step.param_count, a.groups, limit);
    const std::string problem =
        fused_cluster_problem(cluster_blocks, a.step.sum_lanes, fused::cluster_shared_bytes(a, a.step.sum_lanes));
    if (!problem.empty()) throw Error(problem);
    return a;
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
