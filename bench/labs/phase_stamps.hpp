#pragma once
// Where a fused step's time goes, phase by phase (the kernel lab's last table; CUDA builds only).
//
// The fused kernels are instantiated here a second time with an executor that, after every phase
// barrier, has thread 0 of each block write the SM clock (clock64) to a buffer, and every block's
// entry and exit on the global timer. Same phases, same items, same bits as engine/cuda/kernels/
// fused.cuh; the only extra work is one clock read and one store per phase per block, so a phase's
// figure is its cost to within a few cycles. The engine's kernels are not touched: what is measured
// here is what fused.hpp computes, launched as the engine launches it (one graph of back-to-back
// steps), with the clocks on the side.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/fused.hpp"

#if defined(REVGRAPH_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace revgraph::bench {

// Stamps a block keeps: its entry, then one per phase (rev88's rows kernel has 16 phases).
inline constexpr int kMaxStamps = 64;

// One kernel's launches: per launch and block, the SM clock at entry and after each phase, and
// the global timer (ns) at entry and exit.
struct KernelStamps {
    std::string kernel;
    int launches = 0, blocks = 0, phases = 0;
    std::vector<long long> clock;              // [launch][block][stamp], stamp 0 = entry
    std::vector<unsigned long long> enter_ns;  // [launch][block]
    std::vector<unsigned long long> exit_ns;   // [launch][block]
    long long at(int launch, int block, int stamp) const {
        return clock[(static_cast<std::size_t>(launch) * blocks + block) * kMaxStamps + stamp];
    }
};

// The phase names of the rows kernel at `depth` in fused.hpp's order (step_rows_as), for the table;
// the table falls back to numbers where the kernel recorded another count.
std::vector<std::string> rows_phase_names(int depth);
std::vector<std::string> grads_phase_names(int rows, int chunk);
std::vector<std::string> predict_phase_names(int depth);

#if defined(REVGRAPH_HAVE_CUDA)
// `steps` rows + grads launches back to back in one graph, replayed `replays` times; the stamps of
// the last replay. weights_shared as the engine decides it.
struct StepStamps {
    KernelStamps rows, grads;
};
StepStamps stamp_steps(const cuda::fused::StepArgs& args, bool weights_shared, int steps, int replays,
                       cudaStream_t stream);
KernelStamps stamp_predict(const cuda::fused::PredictArgs& args, std::int64_t rows, bool weights_shared, int replays,
                           cudaStream_t stream);

// Prints the tables: per phase the median and the largest over blocks and launches, in cycles and
// in ns at the clock the stamps show; per kernel its span, the spread of its blocks' entries, and
// the gap from the previous kernel's last exit to its first entry (the kernel boundary).
void print_step_stamps(const StepStamps& s, int depth, int rows);
void print_predict_stamps(const KernelStamps& s, int depth);

// The instruction fetch: one block runs the forward couple phase of the rows kernel (2 rows, weights
// in shared memory) kCoupleRepeats times in a loop, so every pass after the first runs code the SM
// has just fetched; a first pass much slower than the rest is the cost of fetching a phase's code,
// which every phase of the step pays once a launch.
inline constexpr int kCoupleRepeats = 8;
void print_couple_repeats(int replays, cudaStream_t stream);
#endif

}  // namespace revgraph::bench
