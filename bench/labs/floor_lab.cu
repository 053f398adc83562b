// bench/labs/floor_lab.cu: a GPU's floor for a chain of tiny dependent steps, measured piece by piece,
// so that the next GPU design (issue "One launch per task": a whole task in one thread-block
// cluster) is sized from numbers instead of guesses. It runs nothing of revgraph's; each section
// times one mechanism the fused step pays for:
//   1. graph nodes: a CUDA graph of 316 dependent kernel nodes (a rev88 task's count), empty
//      kernels, plain and with Programmatic Dependent Launch: the cost of a kernel boundary;
//   2. barriers: __syncthreads() and cluster.sync() in a loop, cluster sizes 2..16: the cost of the
//      barriers that would replace those boundaries;
//   3. distributed shared memory: a dependent pointer chase through a neighbour block's shared
//      memory against one through the block's own (latency), and 30 KB read from the neighbour
//      with 16-byte loads (what re-broadcasting updated parameters costs);
//   4. room: how many clusters of 8 and 16 blocks fit at once with 100 and 200 KB of shared memory.
// Prints one table per section; every CUDA call is checked. Needs sm_90 (clusters, griddepcontrol);
// elsewhere it says so and exits 0. Not timed in any test: bench/NOTES.md records what it printed.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

namespace {

void check(cudaError_t e, const char* what, int line) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "revgraph_floor_lab: error: %s failed (line %d): %s\n", what, line, cudaGetErrorString(e));
        std::exit(1);
    }
}
#define CK(x) check((x), #x, __LINE__)

// ---- 1. kernel boundaries in a graph -------------------------------------------------------------

__global__ void empty_kernel(int* sink, int programmatic) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (programmatic) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
#endif
    if (threadIdx.x == 0 && blockIdx.x == 0 && sink[0] == 0x7fffffff) sink[1] = 1;  // never true: keeps the kernel
}

float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Microseconds per node of a graph of `nodes` dependent launches of `blocks` x `threads`.
float graph_node_us(int nodes, int blocks, int threads, bool programmatic, int* sink) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.stream = s;
    config.attrs = &attr;
    config.numAttrs = programmatic ? 1 : 0;
    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < nodes; ++i) CK(cudaLaunchKernelEx(&config, empty_kernel, sink, programmatic ? 1 : 0));
    CK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int w = 0; w < 5; ++w) CK(cudaGraphLaunch(exec, s));
    std::vector<float> ms;
    for (int r = 0; r < 21; ++r) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(exec, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float t = 0;
        CK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(s));
    return median(ms) * 1000.0f / static_cast<float>(nodes);
}

// ---- 2. barriers ---------------------------------------------------------------------------------

// Each block times `iters` barriers with clock64 (thread 0's view); out[block] = cycles.
__global__ void block_barrier_kernel(int iters, long long* out) {
    __syncthreads();
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
}

__global__ void cluster_barrier_kernel(int iters, long long* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters: sm_90 code only (an sm_80 pass compiles none)
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    const long long t0 = clock64();
    for (int i = 0; i < iters; ++i) cluster.sync();
    const long long t1 = clock64();
    if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
#endif
}

cudaLaunchConfig_t cluster_config(int cluster, int clusters, int threads, std::size_t smem, cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(cluster * clusters);
    c.blockDim = dim3(threads);
    c.dynamicSmemBytes = smem;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    c.attrs = attr;
    c.numAttrs = 1;
    return c;
}

double mean_cycles(long long* d, int n, int iters) {
    std::vector<long long> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof(long long), cudaMemcpyDeviceToHost));
    double s = 0;
    for (long long x : h) s += static_cast<double>(x);
    return s / n / iters;
}

// ---- 3. distributed shared memory ----------------------------------------------------------------

constexpr int kChase = 4096;  // ints in each block's chase ring (16 KB)

// Every block fills its ring (a stride-97 cycle); block 0's thread 0 then follows `steps` links in
// block `target`'s ring (its own: target 0) and records cycles per link.
__global__ void dsmem_chase_kernel(int target, int steps, long long* out, int* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters: sm_90 code only (an sm_80 pass compiles none)
    __shared__ int ring[kChase];
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = static_cast<int>(threadIdx.x); i < kChase; i += static_cast<int>(blockDim.x))
        ring[i] = (i + 97) % kChase;
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) {
        const int* remote = cluster.map_shared_rank(ring, target);
        int j = 0;
        const long long t0 = clock64();
        for (int s = 0; s < steps; ++s) j = remote[j];
        const long long t1 = clock64();
        out[0] = t1 - t0;
        sink[0] = j;
    }
    cluster.sync();  // the ring stays alive until the reader is done
#endif
}

constexpr int kBroadcastFloats = 7680;  // 30 KB: rev88's parameters

// Every block reads its right neighbour's 30 KB `reps` times with 16-byte loads (all threads), and
// records cycles; the sum goes to sink so the loads stay.
__global__ void dsmem_read_kernel(int reps, long long* out, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters: sm_90 code only (an sm_80 pass compiles none)
    __shared__ __align__(16) float buf[kBroadcastFloats];
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = static_cast<int>(threadIdx.x); i < kBroadcastFloats; i += static_cast<int>(blockDim.x))
        buf[i] = static_cast<float>(i & 7);
    cluster.sync();
    const unsigned int next = (cluster.block_rank() + 1) % cluster.num_blocks();
    const float4* remote = reinterpret_cast<const float4*>(cluster.map_shared_rank(buf, static_cast<int>(next)));
    float acc = 0.0f;
    __syncthreads();
    const long long t0 = clock64();
    for (int r = 0; r < reps; ++r) {
        for (int i = static_cast<int>(threadIdx.x); i < kBroadcastFloats / 4; i += static_cast<int>(blockDim.x)) {
            const float4 v = remote[i];
            acc += v.x + v.y + v.z + v.w;
        }
        asm volatile("" ::: "memory");  // each pass loads again: nothing hoisted out of the reps loop
    }
    __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    cluster.sync();
#endif
}

}  // namespace

int main(int argc, char** argv) {
    // A line at a time into a log file too: a run stopped at its time limit keeps every table line
    // printed before the stop (fully buffered, up to the last 4 KB would be lost).
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::printf("usage: revgraph_floor_lab (no options; it needs an sm_90 GPU)\n");
        return 0;
    }
    if (argc > 1) {
        std::fprintf(stderr, "revgraph_floor_lab: error: no options are taken (got '%s'); it needs an sm_90 GPU\n",
                     argv[1]);
        return 2;
    }
    // Without a driver the runtime's own word is "CUDA driver version is insufficient": said plainly.
    int count = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
        std::fprintf(stderr, "revgraph_floor_lab: error: no usable CUDA device here (the CUDA runtime says: %s)\n",
                     e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 1;
    }
    int device = 0;
    CK(cudaGetDevice(&device));
    cudaDeviceProp p{};
    CK(cudaGetDeviceProperties(&p, device));
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    std::printf("floor_lab: %s (sm_%d%d), %d SMs, max SM clock %.0f MHz (cycles below -> ns at that clock)\n", p.name,
                p.major, p.minor, p.multiProcessorCount, clock_khz / 1000.0);
    if (p.major < 9) {
        std::printf("floor_lab: clusters and griddepcontrol need sm_90; nothing to measure here\n");
        return 0;
    }
    const double ns_per_cycle = 1e6 / clock_khz;
    int* sink = nullptr;
    long long* cycles = nullptr;
    float* fsink = nullptr;
    CK(cudaMalloc(&sink, 2 * sizeof(int)));
    CK(cudaMemset(sink, 0, 2 * sizeof(int)));
    CK(cudaMalloc(&cycles, 1024 * sizeof(long long)));
    CK(cudaMalloc(&fsink, 1024 * 1024 * sizeof(float)));

    std::printf("\n1. a graph of 316 dependent empty kernels (median of 21 replays), us per node\n");
    std::printf("blocks x threads   plain   programmatic\n");
    for (const auto& shape : {std::pair{1, 32}, std::pair{64, 192}, std::pair{132, 256}}) {
        const float plain = graph_node_us(316, shape.first, shape.second, false, sink);
        const float pdl = graph_node_us(316, shape.first, shape.second, true, sink);
        std::printf("%4d x %-4d       %6.2f  %6.2f\n", shape.first, shape.second, plain, pdl);
    }

    std::printf("\n2. barriers, 256 threads a block (mean over blocks of 4096 in a row), cycles (ns) each\n");
    {
        const int iters = 4096;
        block_barrier_kernel<<<16, 256>>>(iters, cycles);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        const double c = mean_cycles(cycles, 16, iters);
        std::printf("__syncthreads          %7.1f (%6.1f)\n", c, c * ns_per_cycle);
        CK(cudaFuncSetAttribute(cluster_barrier_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        for (int cluster : {2, 4, 8, 16}) {
            cudaLaunchAttribute attr{};
            cudaLaunchConfig_t config = cluster_config(cluster, 1, 256, 0, &attr);
            const cudaError_t e = cudaLaunchKernelEx(&config, cluster_barrier_kernel, iters, cycles);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                std::printf("cluster.sync, %2d blocks: not launched (%s)\n", cluster, cudaGetErrorString(e));
                continue;
            }
            CK(cudaDeviceSynchronize());
            const double cc = mean_cycles(cycles, cluster, iters);
            std::printf("cluster.sync, %2d blocks %7.1f (%6.1f)\n", cluster, cc, cc * ns_per_cycle);
        }
    }

    std::printf("\n3. distributed shared memory, cluster of 2\n");
    {
        const int steps = 4096;
        for (int target : {0, 1}) {
            cudaLaunchAttribute attr{};
            cudaLaunchConfig_t config = cluster_config(2, 1, 256, 0, &attr);
            CK(cudaLaunchKernelEx(&config, dsmem_chase_kernel, target, steps, cycles, sink));
            CK(cudaDeviceSynchronize());
            long long c = 0;
            CK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
            std::printf("dependent load, %s shared memory: %6.1f cycles (%5.1f ns)\n",
                        target == 0 ? "own      " : "neighbour", static_cast<double>(c) / steps,
                        static_cast<double>(c) / steps * ns_per_cycle);
        }
        CK(cudaFuncSetAttribute(dsmem_read_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        for (int cluster : {2, 8, 16}) {
            const int reps = 64;
            cudaLaunchAttribute attr{};
            cudaLaunchConfig_t config = cluster_config(cluster, 1, 256, 0, &attr);
            const cudaError_t e = cudaLaunchKernelEx(&config, dsmem_read_kernel, reps, cycles, fsink);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                std::printf("30 KB from the neighbour, cluster of %2d: not launched (%s)\n", cluster,
                            cudaGetErrorString(e));
                continue;
            }
            CK(cudaDeviceSynchronize());
            const double c = mean_cycles(cycles, cluster, reps);
            std::printf(
                "30 KB from the neighbour, cluster of %2d (all blocks at once): %7.0f cycles (%5.2f us), "
                "%.1f bytes/cycle a block\n",
                cluster, c, c * ns_per_cycle / 1000.0, kBroadcastFloats * 4.0 / c);
        }
    }

    std::printf("\n4. clusters that fit at once (cudaOccupancyMaxActiveClusters), 256 threads a block\n");
    for (std::size_t smem_kb : {100, 200}) {
        const std::size_t smem = smem_kb * 1024;
        CK(cudaFuncSetAttribute(cluster_barrier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(smem)));
        for (int cluster : {8, 16}) {
            cudaLaunchAttribute attr{};
            cudaLaunchConfig_t config = cluster_config(cluster, 1, 256, smem, &attr);
            int n = 0;
            const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, cluster_barrier_kernel, &config);
            if (e != cudaSuccess) {
                (void)cudaGetLastError();
                std::printf("%3zu KB, cluster of %2d: %s\n", smem_kb, cluster, cudaGetErrorString(e));
            } else {
                std::printf("%3zu KB, cluster of %2d: %d clusters\n", smem_kb, cluster, n);
            }
        }
    }
    CK(cudaFree(sink));
    CK(cudaFree(cycles));
    CK(cudaFree(fsink));
    return 0;
}
