#pragma once
// Whole epochs of cuda-fused's step (width 82) in ONE launch: a thread-block cluster (sm_90+) runs
// every step of the epochs, its blocks taking the rows kernel's blocks in turn, then the grads
// kernel's, with a cluster barrier where the two-kernel step has a kernel boundary. K clusters of
// one launch run K independent tasks (kernels::launch_fused_cluster).
//
// Why: a step of the two-kernel path spends ~1.4 µs of its ~11.5 at its two kernel boundaries (the
// H200's phase table, bench/NOTES.md, "A cuda-fused step, phase by phase"); a cluster barrier costs
// ~0.2 µs (the floor lab). The price: a cluster has at most 16 blocks, so a rev88 step's 64 rows
// blocks and 66 grads blocks run several to a block (2 and 3 deep at two groups a block, below), on
// a quarter of the SMs the two kernels use. Which wins is the GPU's to say: the kernel lab times
// this beside the two-kernel step (bench/labs/kernel_lab.cpp), and the engine keeps the two-kernel
// step until a report says otherwise (bench/NOTES.md, item 6, predicts it slower for one task).
//
// What is computed is not new: each unit of work is fused::step_rows or fused::step_grads on the
// same arguments the two kernels get, so the bits are built to be the two-kernel path's, hence the
// float trainer's (the emulator runs this very loop, cluster_epochs, and the same unit_slots, with
// fused::SequentialExec; test/cuda/test_fused_cluster.cpp). Only the order of the blocks' work and
// the barriers differ, and a set's units are independent as a kernel's blocks are.
//
// Memory: the rows units of a step read the parameters the grads units of the step before wrote, on
// other SMs. The cluster barrier is a release (arrive) and an acquire (wait) at cluster scope, which
// orders global memory as well as shared for every thread of the cluster (PTX ISA, memory
// consistency model), where the kernel boundary ordered it before.
#include <cstddef>
#include <cstdint>

#include "engine/cuda/fused.hpp"

namespace revgraph::cuda::fused {

// Blocks a cluster: 16 is the most sm_90 allows (past the portable 8, opted in by the launcher); a
// step's units spread over as many SMs as a cluster may have. Threads: the grads kernel's 256.
// Groups: a block runs `groups` units at once, each on its own 256/groups threads with a barrier of
// its own (a named barrier on the GPU), so that a 16-block cluster runs a rev88 step's 64 rows units
// 2 rounds deep instead of 4 and its 66 grads units (at most 123 items each, one round of 128
// threads) 3 deep instead of 5: a phase is a chain of dependent adds, which two units on one SM
// interleave. A launch shape, like rows per block: units are independent, so the bits are the same
// at any count (the emulator runs each group's units in turn; the kernel lab times 1, 2 and 4).
inline constexpr int kClusterBlocks = 16;
inline constexpr int kMaxClusterBlocks = 16;
inline constexpr int kClusterThreads = kGradsThreads;
inline constexpr int kClusterGroups = 2;

inline const char* cluster_blocks_problem(int blocks) {
    static_assert(kMaxClusterBlocks == 16, "the message below names the range");
    return blocks < 1 || blocks > kMaxClusterBlocks ? "fused: a cluster has 1 to 16 blocks" : nullptr;
}
// Groups of whole warps (a named barrier counts warps), at most 4 (64 threads, a warp pair).
inline const char* cluster_groups_problem(int groups) {
    return groups == 1 || groups == 2 || groups == 4 ? nullptr : "fused: a cluster block has 1, 2 or 4 groups";
}

// What a launch of whole epochs needs beyond one step's arguments: the resident permutations (epoch
// e's order at permutations + e·train_count), the epochs, the batch size.
struct EpochsArgs {
    StepArgs step;  // rows, first, order and gather_before_wait are set per step here
    const std::int32_t* permutations = nullptr;
    std::int64_t train_count = 0;
    int batch_size = 0;
    int first_epoch = 0, epochs = 0;
    int groups = kClusterGroups;  // units a block runs at once (a launch shape)
    bool weights_shared = false;  // the rows units stage the parameters in shared memory
};

// Whether two launches' arguments size a launch alike (what K tasks of one launch must share).
inline bool same_launch_shape(const EpochsArgs& a, const EpochsArgs& b) {
    return a.groups == b.groups && a.step.rows_per_block == b.step.rows_per_block &&
           a.weights_shared == b.weights_shared && a.step.sum_lanes == b.step.sum_lanes &&
           a.step.param_count == b.step.param_count;
}

// The shared memory of one group: the larger of a rows block's and a grads block's, rounded to 16
// bytes so the next group's starts on 16 bytes too.
RG_HD std::size_t group_shared_bytes(const EpochsArgs& a, int lanes) {
    const std::size_t rows =
        shared_bytes(rows_state_floats(a.step.rows_per_block), a.step.param_count, a.weights_shared);
    const std::size_t grads = grads_floats(lanes) * sizeof(float);
    return ((rows > grads ? rows : grads) + 15) / 16 * 16;
}
// A block's: every group's.
inline std::size_t cluster_shared_bytes(const EpochsArgs& a, int lanes) {
    return static_cast<std::size_t>(a.groups) * group_shared_bytes(a, lanes);
}
// Whether the rows units stage the parameters: where a group's share of the block's limit holds them
// (deep models leave them in global memory, as the rows kernel does past its own limit).
inline bool cluster_weights_fit(int rows_per_block, int param_count, int groups, std::size_t block_limit_bytes) {
    return weights_fit(rows_state_floats(rows_per_block), param_count, block_limit_bytes / groups / 16 * 16);
}

// Which units of a set a group runs: slot = rank·groups + group, then every `stride`-th after it.
// The one mapping of units to the cluster's groups, the device's loop's and the emulator's.
struct UnitSlots {
    int first, stride;
};
RG_HD UnitSlots unit_slots(int rank, int group, int blocks, int groups) {
    return {rank * groups + group, blocks * groups};
}

// The epochs' steps, each as the rows units then the grads units, the cluster's blocks (and their
// groups) sharing out each set. Loop: the executor of the cluster's units — on a GPU, each group
// runs its unit_slots on its own executor and shared memory, then the cluster barrier; on the CPU
// (the emulator), every group of every rank in turn. A unit's phases end with its group's barrier,
// so its next unit may carve the memory anew — all of it but the first `keep` floats, which
// loop.units(count, keep, unit) leaves to a set's later units: unit(ex, u, smem, first), first for
// the group's first unit of the set.
//
// What is kept: the staged parameters. A step's rows units all read the same parameters (the step
// before's grads units wrote them, before the barrier), so a group copies them into its shared
// memory at its first rows unit of the step and its later ones read that copy: at 16 blocks of 2
// groups a rev88 step's 64 rows units run 2 deep, so half the copies of 30 KB a step go. The grads
// units that follow write over that memory, so the next step's first rows unit copies again.
template <int L, class Loop>
RG_HD void cluster_epochs(const Loop& loop, const EpochsArgs& a) {
    const int grads_units = grads_blocks(a.step.depth);
    for (int e = a.first_epoch; e < a.first_epoch + a.epochs; ++e) {
        for (std::int64_t first = 0; first < a.train_count; first += a.batch_size) {
            StepArgs s = a.step;
            s.order = a.permutations + static_cast<std::int64_t>(e) * a.train_count;
            s.first = first;
            s.rows = a.train_count - first < a.batch_size ? static_cast<int>(a.train_count - first) : a.batch_size;
            s.gather_before_wait = false;
            const int rows_units = ceil_div(s.rows, s.rows_per_block);
            loop.units(rows_units, staged_floats(s.param_count, a.weights_shared),
                       [&](auto& ex, int unit, float* smem, bool first) {
                           step_rows<L>(ex, s, unit,
                                        carve_rows(smem, s.param_count, a.weights_shared, s.rows_per_block), !first);
                       });
            loop.units(grads_units, 0,
                       [&](auto& ex, int unit, float* smem, bool) { step_grads<L>(ex, s, unit, smem); });
        }
    }
}

}  // namespace revgraph::cuda::fused
