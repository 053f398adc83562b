#pragma once
// Whole epochs of cuda-fused's step (width 82) in ONE launch: a thread-block cluster (sm_90+) runs
// every step of the epochs, its blocks taking the rows kernel's blocks in turn, then the grads
// kernel's, with a cluster barrier where the two-kernel step has a kernel boundary. K clusters of
// one launch run K independent tasks (kernels::launch_fused_cluster).
//
// Why: a step of the two-kernel path spends ~1.4 µs of its ~11.5 at its two kernel boundaries (the
// H200's phase table, bench/NOTES.md, "A cuda-fused step, phase by phase"); a cluster barrier costs
// ~0.2 µs (the floor lab). The price: a cluster has at most 16 blocks, so a rev88 step's 64 rows
// blocks and 66 grads blocks run 4 and 5 to a block, one after the other. Which wins is the GPU's
// to say: the kernel lab times this beside the two-kernel step (bench/labs/kernel_lab.cpp), and the
// engine keeps the two-kernel step until a report says otherwise.
//
// What is computed is not new: each unit of work is fused::step_rows or fused::step_grads on the
// same arguments the two kernels get, so the bits are the two-kernel path's, hence the float
// trainer's (the emulator runs this very loop: cluster_epochs with fused::SequentialExec and
// ClusterLoop; test/cuda/test_fused_cluster.cpp). Only the order of the blocks' work and the
// barriers differ, and a phase's units are independent as a kernel's blocks are.
//
// Memory: the rows units of a step read the parameters the grads units of the step before wrote, on
// other SMs. The cluster barrier is a release (arrive) and an acquire (wait) at cluster scope, which
// orders global memory as well as shared for every thread of the cluster (PTX ISA, memory
// consistency model), where the kernel boundary ordered it before.
#include <cstdint>

#include "engine/cuda/fused.hpp"

namespace revgraph::cuda::fused {

// Blocks a cluster: 16 is the most sm_90 allows (past the portable 8, opted in by the launcher); a
// step's units spread over as many SMs as a cluster may have. Threads: the grads kernel's 256 (the
// rows phases' items spread over any count).
inline constexpr int kClusterBlocks = 16;
inline constexpr int kMaxClusterBlocks = 16;
inline constexpr int kClusterThreads = kGradsThreads;

inline const char* cluster_blocks_problem(int blocks) {
    return blocks < 1 || blocks > kMaxClusterBlocks ? "fused: a cluster has 1 to 16 blocks" : nullptr;
}

// What a launch of whole epochs needs beyond one step's arguments: the resident permutations (epoch
// e's order at permutations + e·train_count), the epochs, the batch size.
struct EpochsArgs {
    StepArgs step;  // rows, first, order and gather_before_wait are set per step here
    const std::int32_t* permutations = nullptr;
    std::int64_t train_count = 0;
    int batch_size = 0;
    int first_epoch = 0, epochs = 0;
    bool weights_shared = false;  // the rows units stage the parameters in shared memory
};

// The shared memory a block needs: the larger of a rows block's and a grads block's.
inline std::size_t cluster_shared_bytes(const EpochsArgs& a, int lanes) {
    const std::size_t rows =
        shared_bytes(rows_state_floats(a.step.rows_per_block), a.step.param_count, a.weights_shared);
    const std::size_t grads = grads_floats(lanes) * sizeof(float);
    return rows > grads ? rows : grads;
}

// The epochs' steps, each as the rows units then the grads units, the cluster's blocks sharing out
// each set. Loop: the executor of the cluster's units — on a GPU, each block runs its rank's units
// (rank, rank + blocks, ...) and waits at the cluster barrier; on the CPU (the emulator), every rank
// in turn. `smem` is the block's; a unit's phases end with a block barrier, so the next unit may
// carve it anew.
template <int L, class Exec, class Loop>
RG_HD void cluster_epochs(Exec& ex, const Loop& loop, const EpochsArgs& a, float* smem) {
    const int grads_units = 2 * a.step.depth * ceil_div(kHalf, kBranchOutGroup) + ceil_div(kClasses, kHeadOutGroup);
    for (int e = a.first_epoch; e < a.first_epoch + a.epochs; ++e) {
        for (std::int64_t first = 0; first < a.train_count; first += a.batch_size) {
            StepArgs s = a.step;
            s.order = a.permutations + static_cast<std::int64_t>(e) * a.train_count;
            s.first = first;
            s.rows = a.train_count - first < a.batch_size ? static_cast<int>(a.train_count - first) : a.batch_size;
            s.gather_before_wait = false;
            const int rows_units = ceil_div(s.rows, s.rows_per_block);
            loop.units(
                rows_units,
                [&](int unit, float* block_smem) {
                    step_rows<L>(ex, s, unit,
                                 carve_rows(block_smem, s.param_count, a.weights_shared, s.rows_per_block));
                },
                smem);
            loop.units(
                grads_units, [&](int unit, float* block_smem) { step_grads<L>(ex, s, unit, block_smem); }, smem);
        }
    }
}

}  // namespace revgraph::cuda::fused
