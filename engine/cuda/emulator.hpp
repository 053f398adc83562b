#pragma once
// A CPU interpreter of the CUDA backend's programs (engine/cuda/program.hpp): the same buffers, the
// same operations in the same order, the same per-element bodies (engine/cuda/ops/), and
// products computed as column-major BLAS exactly as cuBLASLt is asked for them. It exists so that
// the launch plan is tested without a GPU: run in float it reproduces the reference trainer bit for
// bit, which pins down every offset, leading dimension, transpose and the order of the backward.
#include <cstdint>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cuda/fused.hpp"
#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/fused_any_shape.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/model/sum_order.hpp"

namespace revgraph::cuda {

// The per-block shared memory the emulator assumes for the fused kernels: the opt-in limit of sm_90
// (H100/H200), 227 KiB. 0 emulates a device where the parameters never fit, so the blocks read them
// from global memory.
inline constexpr std::size_t kEmulatedSharedBytes = 232448;

class Emulator {
public:
    explicit Emulator(const TaskPlan& plan, std::size_t shared_bytes = kEmulatedSharedBytes);

    // What the backend's prepare() uploads: raw pixels, labels, permutations, initial parameters.
    void upload(const PreparedInputs& prepared);
    void execute(const Program& program);
    // Run the fused kernels' blocks and each phase's items last to first (a race check: see
    // fused::SequentialExec).
    void set_reverse_order(bool reverse) { reverse_ = reverse; }
    // Emulate the fused kernels at another launch shape (rows a rows block, query rows a predict
    // block) than their defaults: the bits must not change (bench/labs/kernel_lab.cpp). The
    // any-width kernels (widths other than 82) take the same two shapes.
    void set_launch_shape(int rows_per_block, int predict_tile) {
        if (const char* problem = fused::rows_per_block_problem(rows_per_block)) throw Error(problem);
        if (const char* problem = fused::tile_problem(predict_tile)) throw Error(problem);
        rows_per_block_ = rows_per_block;
        predict_tile_ = predict_tile;
    }

    // Emulate the fused kernels in another sum order than the engine's (fused::kSumLanes):
    // L lanes (engine/model/sum_order.hpp). Unlike the launch shape this changes the bits: they must
    // be cpu::Trainer<float>'s at the same L (bench/labs/kernel_lab.cpp, test/cuda/test_fused_lanes.cpp).
    // The any-width kernels (engine/cuda/fused_any/) take the order too. cuda's plan (its own
    // operations and cuBLASLt's products) runs the engine's order only, so it refuses any other
    // rather than run in an order it was not asked for.
    void set_sum_lanes(int lanes) {
        if (!model::valid_sum_lanes(lanes)) throw Error("emulator: sum lanes must be 1, 2, 4 or 8");
        if (lanes != fused::kSumLanes && plan_.path() != Path::fused)
            throw Error("emulator: other sum orders than the engine's run on the fused kernels only");
        sum_lanes_ = lanes;
    }

    // Epochs first .. first+count-1 in ONE launch of a thread-block cluster of `cluster_blocks`
    // blocks, each epoch's order read from the resident permutations (the kernel lab's whole-task
    // launch; engine/cuda/fused_cluster.hpp, width 82): the cluster's ranks one after the other, each
    // rank's units in turn, at this emulator's launch shape, order and sum lanes. The bits must be
    // those of the epochs' programs (plan.epoch(e)). A plan with cluster_blocks runs the same loop
    // an epoch at a time (FusedEpochsOp).
    void fused_epochs(int first, int count, int cluster_blocks);
    // The arguments fused_epochs launches (this emulator's shape applied): what a launch group's key
    // is made of (engine/cuda/cluster_tasks.hpp).
    fused::EpochsArgs fused_epochs_args(int first, int count);
    // Emulate the cluster kernel's blocks with another count of thread groups (units a block runs at
    // once) than fused::kClusterGroups: a launch shape, so the bits must not change.
    void set_cluster_groups(int groups) {
        if (const char* problem = fused::cluster_groups_problem(groups)) throw Error(problem);
        cluster_groups_ = groups;
    }

    // Poison what a cluster group keeps from its first unit of a set for its later ones (the staged
    // parameters: fused::cluster_epochs) as well: a later unit that reads its group's copy rather
    // than copy them again then reads NaN. A test-only check that a group copies the parameters once a
    // step, not a launch option.
    void set_poison_kept(bool poison) { poison_kept_ = poison; }

    std::vector<float>& f32(Buf b) { return f32_.at(static_cast<std::size_t>(b)); }
    std::vector<std::int32_t>& i32(Buf b) { return i32_.at(static_cast<std::size_t>(b)); }
    std::vector<std::int64_t>& i64(Buf b) { return i64_.at(static_cast<std::size_t>(b)); }

private:
    const TaskPlan& plan_;
    std::size_t shared_bytes_;
    bool reverse_ = false;
    int rows_per_block_ = fused::kRowsPerBlock;  // fused_any's at other widths (the constructor)
    int predict_tile_ = fused::kPredictTile;
    int sum_lanes_ = fused::kSumLanes;
    int cluster_groups_ = fused::kClusterGroups;
    bool poison_kept_ = false;
    std::vector<float> shared_;  // the fused kernels' shared memory, re-carved by each block
    std::vector<std::vector<float>> f32_;
    std::vector<std::vector<std::int32_t>> i32_;
    std::vector<std::vector<std::int64_t>> i64_;

    void fused_step(const FusedStepOp& op);
    void fused_predict(const FusedPredictOp& op);
    void fused_any_step(const FusedAnyStepOp& op);
    void fused_any_predict(const FusedAnyPredictOp& op);
    void cluster_epoch(const FusedEpochsOp& op);  // the plan's operation: one epoch from the order buffer
    fused::EpochsArgs fitted(fused::EpochsArgs a) const;
    void run_cluster(fused::EpochsArgs a, int cluster_blocks);
};

}  // namespace revgraph::cuda
