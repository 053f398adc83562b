// bench/labs/phase_stamps.hpp: the fused kernels with clocks at their phase barriers.
#include "bench/labs/phase_stamps.hpp"

#include <algorithm>
#include <cstdio>

#include "bench/labs/global_timer.cuh"
#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/kernels/common.cuh"
#include "engine/cuda_util/check.hpp"
#include "engine/stats.hpp"
#include "graphs/capture.hpp"

namespace revgraph::bench {

std::vector<std::string> rows_phase_names(int depth) {
    std::vector<std::string> n{"load rows, labels, weights"};
    for (int k = 0; k < depth; ++k) {
        n.push_back("forward F" + std::to_string(k));
        n.push_back("forward G" + std::to_string(k));
    }
    n.insert(n.end(), {"scores, final state", "softmax exponentials", "softmax gradient", "dstate = dscores H"});
    for (int k = depth - 1; k >= 0; --k) {
        n.push_back("rebuild right (G" + std::to_string(k) + ")");
        n.push_back("G" + std::to_string(k) + " rows (act, grad, dx)");
        if (k > 0) n.push_back("rebuild left (F" + std::to_string(k) + ")");
        n.push_back("F" + std::to_string(k) + (k > 0 ? " rows (act, grad, dx)" : " rows (act, grad)"));
    }
    return n;
}

std::vector<std::string> grads_phase_names(int rows, int chunk) {
    std::vector<std::string> n;
    for (int c0 = 0; c0 < rows; c0 += chunk) {
        n.push_back("stage rows " + std::to_string(c0) + "..");
        n.push_back(c0 + chunk >= rows ? "sums over them, SGD" : "sums over them");  // SGD ends the last sums
    }
    return n;
}

std::vector<std::string> predict_phase_names(int depth) {
    std::vector<std::string> n{"load queries, weights"};
    for (int k = 0; k < depth; ++k) {
        n.push_back("forward F" + std::to_string(k));
        n.push_back("forward G" + std::to_string(k));
    }
    n.insert(n.end(), {"scores", "argmax"});
    return n;
}

namespace {

namespace fused = cuda::fused;

// kernels::BlockExec, plus thread 0's clock after each barrier.
struct StampedExec {
    long long* clocks;  // this block's kMaxStamps
    int n = 0;
    template <class F>
    __device__ __forceinline__ void issue(int count, F&& item) {
        for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) item(i);
    }
    __device__ __forceinline__ void wait_for_prior_grid() {}  // launched plainly
    __device__ __forceinline__ void launch_dependents() {}
    template <class F>
    __device__ __forceinline__ void phase(int count, F&& item) {
        issue(count, item);
        fused::end_block_phase();
        ++n;
        if (threadIdx.x == 0 && n < kMaxStamps) clocks[n] = clock64();
    }
};

// Where one launch writes its stamps.
struct Out {
    long long* clock;
    unsigned long long *enter, *exit;
    int* phases;
};

__device__ __forceinline__ void finish(const Out& o, long long c0, unsigned long long t0, int n) {
    if (threadIdx.x != 0) return;
    o.clock[blockIdx.x * kMaxStamps] = c0;
    o.enter[blockIdx.x] = t0;
    o.exit[blockIdx.x] = global_ns();
    if (blockIdx.x == 0) *o.phases = n;
}

// Each in every sum order (L), as the engine's kernels are; stamp_steps and stamp_predict pick the
// instantiation by the arguments' sum_lanes.
template <int L>
__global__ void __launch_bounds__(fused::kRowsThreads, 1) stamped_rows(fused::StepArgs a, bool weights_shared, Out o) {
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    extern __shared__ __align__(16) float smem[];
    StampedExec ex{o.clock + blockIdx.x * kMaxStamps};
    fused::step_rows<L>(ex, a, static_cast<int>(blockIdx.x),
                        fused::carve_rows(smem, a.param_count, weights_shared, a.rows_per_block));
    finish(o, c0, t0, ex.n);
}

template <int L>
__global__ void __launch_bounds__(fused::kGradsThreads, 1) stamped_grads(fused::StepArgs a, Out o) {
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    extern __shared__ __align__(16) float smem[];
    StampedExec ex{o.clock + blockIdx.x * kMaxStamps};
    fused::step_grads<L>(ex, a, static_cast<int>(blockIdx.x), smem);
    finish(o, c0, t0, ex.n);
}

template <int L>
__global__ void __launch_bounds__(fused::kPredictThreads, 1)
    stamped_predict(fused::PredictArgs a, std::int64_t rows, bool weights_shared, Out o) {
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    extern __shared__ __align__(16) float smem[];
    StampedExec ex{o.clock + blockIdx.x * kMaxStamps};
    float* weights = weights_shared ? smem : nullptr;
    fused::predict_tile<L>(ex, a, rows, static_cast<int>(blockIdx.x), weights,
                           fused::predict_state_at(smem, a.param_count, weights_shared));
    finish(o, c0, t0, ex.n);
}

// fused::couple on 2 rows of zeros with zero weights in shared memory, in the staged layout
// (fused_layout.hpp: padded halves and weight rows, four terms a load), kCoupleRepeats times through
// one copy of its code (a loop the compiler keeps).
__global__ void __launch_bounds__(fused::kRowsThreads, 1) couple_repeats(Out o) {
    const unsigned long long t0 = global_ns();
    constexpr int kRows = 2;
    constexpr int kWeights = fused::PaddedParams::kBranch;
    __shared__ __align__(16) float weights[kWeights];
    __shared__ __align__(16) float state[kRows * fused::kStateLd];
    for (int i = static_cast<int>(threadIdx.x); i < kWeights; i += static_cast<int>(blockDim.x)) weights[i] = 0.0f;
    for (int i = static_cast<int>(threadIdx.x); i < kRows * fused::kStateLd; i += static_cast<int>(blockDim.x))
        state[i] = 0.0f;
    __syncthreads();
    // The first pass starts here, after the zero-fill and its barrier: it is the couple's code fetch
    // and nothing of the kernel's entry.
    const long long c0 = clock64();
    StampedExec ex{o.clock + blockIdx.x * kMaxStamps};
#pragma unroll 1
    for (int k = 0; k < kCoupleRepeats; ++k)
        fused::couple<fused::PaddedParams>(ex, weights, state, fused::kStateLd, kRows, fused::kPaddedHalf, 0, 1.0f,
                                           0.5f);
    finish(o, c0, t0, ex.n);
}

// Device buffers for `launches` launches of `blocks` blocks, and their copy back.
class StampBuffers {
public:
    StampBuffers(int launches, int blocks)
        : launches_(launches),
          blocks_(blocks),
          n_(static_cast<std::size_t>(launches) * blocks),
          clock_(n_ * kMaxStamps * sizeof(long long)),
          enter_(n_ * sizeof(unsigned long long)),
          exit_(n_ * sizeof(unsigned long long)),
          phases_(sizeof(int)) {
        const std::vector<long long> zeros(n_ * kMaxStamps, 0);  // a block that writes no stamp reads 0
        clock_.upload(zeros.data(), clock_.bytes());
    }

    Out launch(int l) const {
        const std::size_t b = static_cast<std::size_t>(l) * blocks_;
        return {clock_.as<long long>() + b * kMaxStamps, enter_.as<unsigned long long>() + b,
                exit_.as<unsigned long long>() + b, phases_.as<int>()};
    }
    KernelStamps read(const char* kernel) const {
        KernelStamps s;
        s.kernel = kernel;
        s.launches = launches_;
        s.blocks = blocks_;
        s.clock.resize(n_ * kMaxStamps);
        s.enter_ns.resize(n_);
        s.exit_ns.resize(n_);
        clock_.download(s.clock.data(), clock_.bytes());
        enter_.download(s.enter_ns.data(), enter_.bytes());
        exit_.download(s.exit_ns.data(), exit_.bytes());
        phases_.download(&s.phases, phases_.bytes());
        s.phases = std::min(s.phases, kMaxStamps - 1);
        return s;
    }

private:
    int launches_, blocks_;
    std::size_t n_;
    cuda::DeviceBuffer clock_, enter_, exit_, phases_;
};

template <class Kernel>
void allow_shared(Kernel kernel) {
    int device = 0, optin = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
}

// Captures body into a graph, replays it `replays` times (the stamps of the last remain).
template <class Body>
void replay(cudaStream_t stream, int replays, Body&& body) {
    const graphs::GraphExec graph = graphs::capture(stream, "phase_stamps", body);
    graph.upload(stream);
    for (int r = 0; r < replays; ++r) graph.launch(stream);
    cudaCheck(cudaStreamSynchronize(stream));
}

// engine/stats.hpp's median, of cycle counts or nanoseconds.
template <class T>
double median_of(const std::vector<T>& v) {
    return median(std::vector<double>(v.begin(), v.end()));
}

// ns per cycle over every block of every launch (the global timer's ticks are coarse; their sum is not).
double ns_per_cycle(const KernelStamps& s) {
    double cycles = 0, ns = 0;
    for (int l = 0; l < s.launches; ++l)
        for (int b = 0; b < s.blocks; ++b) {
            const std::size_t k = static_cast<std::size_t>(l) * s.blocks + b;
            cycles += static_cast<double>(s.at(l, b, s.phases) - s.at(l, b, 0));
            ns += static_cast<double>(s.exit_ns[k] - s.enter_ns[k]);
        }
    return cycles > 0 ? ns / cycles : 0;
}

void print_phases(const KernelStamps& s, const std::vector<std::string>& names) {
    const double ns = ns_per_cycle(s);
    std::printf("%s: %d launches x %d blocks, %d phases, clock %.3f GHz by the stamps\n", s.kernel.c_str(), s.launches,
                s.blocks, s.phases, ns > 0 ? 1.0 / ns : 0.0);
    std::printf("  %-3s %-30s %10s %10s %9s %9s\n", "#", "phase", "cyc med", "cyc max", "ns med", "ns max");
    double total_med = 0;
    for (int p = 1; p <= s.phases; ++p) {
        std::vector<long long> d;
        for (int l = 0; l < s.launches; ++l)
            for (int b = 0; b < s.blocks; ++b) d.push_back(s.at(l, b, p) - s.at(l, b, p - 1));
        const double med = median_of(d);
        const long long mx = *std::max_element(d.begin(), d.end());
        total_med += med;
        const std::string name =
            static_cast<int>(names.size()) == s.phases ? names[static_cast<std::size_t>(p - 1)] : std::to_string(p);
        std::printf("  %-3d %-30s %10.0f %10lld %9.0f %9.0f\n", p, name.c_str(), med, mx, med * ns,
                    static_cast<double>(mx) * ns);
    }
    std::printf("  sum of the medians: %.0f cycles, %.0f ns\n", total_med, total_med * ns);
}

// Per launch: the span from the first entry to the last exit, and the spread of the entries.
void print_spans(const KernelStamps& s) {
    std::vector<unsigned long long> span, spread;
    for (int l = 0; l < s.launches; ++l) {
        const auto e0 = s.enter_ns.begin() + static_cast<std::ptrdiff_t>(l) * s.blocks;
        const auto x0 = s.exit_ns.begin() + static_cast<std::ptrdiff_t>(l) * s.blocks;
        const auto first = *std::min_element(e0, e0 + s.blocks), last_in = *std::max_element(e0, e0 + s.blocks);
        span.push_back(*std::max_element(x0, x0 + s.blocks) - first);
        spread.push_back(last_in - first);
    }
    std::printf("  %s per launch (median): first entry to last exit %.0f ns, entries spread over %.0f ns\n",
                s.kernel.c_str(), median_of(span), median_of(spread));
}

// Median gap from the last exit of launch l of `before` to the first entry of launch l + shift of `after`.
double boundary_ns(const KernelStamps& before, const KernelStamps& after, int shift) {
    std::vector<long long> gaps;
    for (int l = 0; l + shift < after.launches && l < before.launches; ++l) {
        const auto x0 = before.exit_ns.begin() + static_cast<std::ptrdiff_t>(l) * before.blocks;
        const auto e0 = after.enter_ns.begin() + static_cast<std::ptrdiff_t>(l + shift) * after.blocks;
        gaps.push_back(static_cast<long long>(*std::min_element(e0, e0 + after.blocks)) -
                       static_cast<long long>(*std::max_element(x0, x0 + before.blocks)));
    }
    return std::max(0.0, median_of(gaps));
}

}  // namespace

StepStamps stamp_steps(const fused::StepArgs& args, bool weights_shared, int steps, int replays, cudaStream_t stream) {
    const int rows_blocks = fused::rows_blocks(args), grads_blocks = fused::grads_blocks(args.depth);
    const StampBuffers rows(steps, rows_blocks), grads(steps, grads_blocks);
    const std::size_t rows_smem =
        fused::shared_bytes(fused::rows_state_floats(args.rows_per_block), args.param_count, weights_shared);
    model::with_sum_lanes(args.sum_lanes, [&](auto lanes) {
        constexpr int L = decltype(lanes)::value;
        allow_shared(stamped_rows<L>);
        allow_shared(stamped_grads<L>);
        const std::size_t grads_smem = fused::grads_floats(L) * sizeof(float);
        replay(stream, replays, [&](cudaStream_t s) {
            for (int l = 0; l < steps; ++l) {
                stamped_rows<L>
                    <<<rows_blocks, fused::kRowsThreads, rows_smem, s>>>(args, weights_shared, rows.launch(l));
                cudaCheck(cudaGetLastError());
                stamped_grads<L><<<grads_blocks, fused::kGradsThreads, grads_smem, s>>>(args, grads.launch(l));
                cudaCheck(cudaGetLastError());
            }
        });
    });
    return {rows.read("rows kernel"), grads.read("grads kernel")};
}

KernelStamps stamp_predict(const fused::PredictArgs& args, std::int64_t rows, bool weights_shared, int replays,
                           cudaStream_t stream) {
    const int blocks = fused::predict_blocks(args, rows);
    const StampBuffers out(1, blocks);
    const std::size_t smem =
        fused::shared_bytes(fused::predict_state_floats(args.tile), args.param_count, weights_shared);
    model::with_sum_lanes(args.sum_lanes, [&](auto lanes) {
        constexpr int L = decltype(lanes)::value;
        allow_shared(stamped_predict<L>);
        replay(stream, replays, [&](cudaStream_t s) {
            stamped_predict<L><<<blocks, fused::kPredictThreads, smem, s>>>(args, rows, weights_shared, out.launch(0));
            cudaCheck(cudaGetLastError());
        });
    });
    return out.read("predict kernel");
}

void print_step_stamps(const StepStamps& s, int depth, int rows) {
    std::printf("phases: clock64 at each barrier of every block, %d steps in one graph (last replay)\n",
                s.rows.launches);
    print_phases(s.rows, rows_phase_names(depth));
    print_phases(s.grads, grads_phase_names(rows, fused::kGradsChunk));
    print_spans(s.rows);
    print_spans(s.grads);
    std::vector<unsigned long long> step;
    for (int l = 0; l + 1 < s.rows.launches; ++l) {
        const auto e0 = s.rows.enter_ns.begin() + static_cast<std::ptrdiff_t>(l) * s.rows.blocks;
        const auto e1 = e0 + s.rows.blocks;
        step.push_back(*std::min_element(e1, e1 + s.rows.blocks) - *std::min_element(e0, e0 + s.rows.blocks));
    }
    std::printf(
        "  boundary rows -> grads %.0f ns, grads -> next rows %.0f ns (last exit to first entry, median); "
        "a step, entry to entry: %.0f ns\n",
        boundary_ns(s.rows, s.grads, 0), boundary_ns(s.grads, s.rows, 1), median_of(step));
}

void print_couple_repeats(int replays, cudaStream_t stream) {
    const StampBuffers out(1, 1);
    replay(stream, replays, [&](cudaStream_t s) {
        couple_repeats<<<1, fused::kRowsThreads, 0, s>>>(out.launch(0));
        cudaCheck(cudaGetLastError());
    });
    const KernelStamps k = out.read("couple x8");
    std::printf("instruction fetch: the forward couple phase %d times through one copy of its code (1 block)\n",
                kCoupleRepeats);
    std::printf("  pass    cycles\n");
    for (int p = 1; p <= k.phases; ++p) std::printf("  %-7d %6lld\n", p, k.at(0, 0, p) - k.at(0, 0, p - 1));
}

void print_predict_stamps(const KernelStamps& s, int depth) {
    print_phases(s, predict_phase_names(depth));
    print_spans(s);
}

}  // namespace revgraph::bench
