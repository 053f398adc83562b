#include "engine/cuda/emulator.hpp"

#include <algorithm>
#include <string>
#include <limits>
#include <type_traits>

#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/sequential_exec.hpp"
#include "engine/cuda/staged_inputs.hpp"
#include "engine/cuda/cluster_tasks.hpp"
#include "engine/error.hpp"

namespace revgraph::cuda {

Emulator::Emulator(const TaskPlan& plan, std::size_t shared_bytes)
    : plan_(plan), shared_bytes_(shared_bytes), f32_(kBufCount), i32_(kBufCount), i64_(kBufCount) {
    for (int k = 0; k < kBufCount; ++k) {
        const Buf b = static_cast<Buf>(k);
        const std::size_t n = plan.elements(b);
        switch (buf_elem(b)) {
            case Elem::f32: f32_[k].assign(n, 0.0f); break;
            case Elem::i32: i32_[k].assign(n, 0); break;
            case Elem::i64: i64_[k].assign(n, 0); break;
        }
    }
    // The device's own launch shapes: the any-width kernels have theirs (fused_any_shape.hpp), which
    // need not stay the 82-wide kernels' (the emulated blocks carve shared memory as the device's do).
    if (plan.any_width()) {
        rows_per_block_ = fused_any::kRowsPerBlock;
        predict_tile_ = fused_any::kPredictRows;
    }
}

void Emulator::upload(const PreparedInputs& p) {
    // The device's upload's staging (cuda_backend.cpp): the same checks, the same int32 bytes.
    StagedInputs in = stage_inputs(plan_, p);
    f32(Buf::initial).assign(in.initial.begin(), in.initial.end());
    f32(Buf::train_raw).assign(in.train_raw.begin(), in.train_raw.end());
    f32(Buf::query_raw).assign(in.query_raw.begin(), in.query_raw.end());
    i32(Buf::train_labels) = std::move(in.train_labels);
    i32(Buf::permutations) = std::move(in.permutations);
}

namespace {
// The emulator's buffers as the pointers an operation's resolve() asks for.
struct HostMemory {
    Emulator& e;
    float* f32(Ref r) const { return e.f32(r.buf).data() + r.offset; }
    std::int32_t* i32(Ref r) const { return e.i32(r.buf).data() + r.offset; }
    std::int64_t* i64(Ref r) const { return e.i64(r.buf).data() + r.offset; }
    void* address(Ref r) const {
        switch (buf_elem(r.buf)) {
            case Elem::i32: return i32(r);
            case Elem::i64: return i64(r);
            case Elem::f32: break;
        }
        return f32(r);
    }
};

// An operation the emulator runs as its file's run_host(resolve(...)): every one but the fused
// kernels, whose blocks need the emulator's shared memory.
template <class T>
concept HostRun = requires(const T& op, const HostMemory& m) {
    ops::run_host(ops::resolve(op, m));
};
}  // namespace

void Emulator::execute(const Program& program) {
    plan_.check(program);
    const HostMemory memory{*this};
    // No default case: an operation without a handler here fails to compile.
    const auto run = [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, FusedStepOp>) {
            fused_step(op);
        } else if constexpr (std::is_same_v<T, FusedPredictOp>) {
            fused_predict(op);
        } else if constexpr (std::is_same_v<T, FusedAnyStepOp>) {
            fused_any_step(op);
        } else if constexpr (std::is_same_v<T, FusedAnyPredictOp>) {
            fused_any_predict(op);
        } else if constexpr (std::is_same_v<T, FusedEpochsOp>) {
            cluster_epoch(op);
        } else {
            static_assert(HostRun<T>, "an operation of the plan has no run_host (see docs/adding-an-op.md)");
            ops::run_host(ops::resolve(op, memory));
        }
    };
    for (const Op& op : program) std::visit(run, op);
}

// The fused kernels' own code (engine/cuda/fused.hpp), block after block, each phase run as a loop,
// with the same shared-memory layout the kernels use. Shared memory starts as NaN for every block,
// so an item that reads what no earlier phase of its block wrote poisons the result.
// The block a loop counter stands for: in order, or (reverse) from the last, like the items.
static int nth_block(int k, int blocks, bool reverse) { return reverse ? blocks - 1 - k : k; }

void Emulator::fused_step(const FusedStepOp& op) {
    fused::StepArgs a = ops::resolve(op, HostMemory{*this});
    a.rows_per_block = rows_per_block_;
    a.sum_lanes = sum_lanes_;
    const fused::SequentialExec ex{reverse_};
    model::with_sum_lanes(a.sum_lanes, [&](auto lanes) {
        constexpr int L = decltype(lanes)::value;
        if (op.part == FusedStepOp::Part::rows) {
            const std::size_t state = fused::rows_state_floats(a.rows_per_block);
            const bool weights = fused::weights_fit(state, a.param_count, shared_bytes_);
            const int blocks = fused::rows_blocks(a);
            for (int k = 0; k < blocks; ++k) {
                const int b = nth_block(k, blocks, reverse_);
                shared_.assign(fused::shared_bytes(state, a.param_count, weights) / sizeof(float),
                               std::numeric_limits<float>::quiet_NaN());
                fused::step_rows<L>(ex, a, b,
                                    fused::carve_rows(shared_.data(), a.param_count, weights, a.rows_per_block));
            }
        } else {
            const int blocks = fused::grads_blocks(op.depth);
            for (int k = 0; k < blocks; ++k) {
                const int b = nth_block(k, blocks, reverse_);
                shared_.assign(fused::grads_floats(L), std::numeric_limits<float>::quiet_NaN());
                fused::step_grads<L>(ex, a, b, shared_.data());
            }
        }
    });
}

namespace {
// A cluster's blocks as the emulator runs them: rank after rank (last to first with `reverse`), in
// each rank group after group, each group's units (fused::unit_slots, the device's mapping) in turn
// (also reversed), each on its group's slice of the block's shared memory, poisoned with NaN before
// every unit (a unit that read what an earlier unit of its group left would differ from the device
// only where the two ran in another order; poisoned, it fails here) — but for the first `keep`
// floats after the group's first unit of the set, which a set's later units may read (the staged
// parameters: fused::cluster_epochs).
struct SequentialClusterLoop {
    int blocks = 1, groups = 1;
    bool reverse = false;
    std::vector<float>* shared = nullptr;  // the block's: groups slices of group_floats
    std::size_t group_floats = 0;
    bool poison_kept = false;  // Emulator::set_poison_kept
    template <class F>
    void units(int count, std::size_t keep, F&& unit) const {
        const fused::SequentialExec ex{reverse};
        shared->assign(static_cast<std::size_t>(groups) * group_floats, std::numeric_limits<float>::quiet_NaN());
        for (int r = 0; r < blocks; ++r)
            for (int g = 0; g < groups; ++g) {
                const int rank = nth_block(r, blocks, reverse), group = nth_block(g, groups, reverse);
                const fused::UnitSlots slots = fused::unit_slots(rank, group, blocks, groups);
                std::vector<int> mine;
                for (int u = slots.first; u < count; u += slots.stride) mine.push_back(u);
                if (reverse) std::reverse(mine.begin(), mine.end());
                float* const slice = shared->data() + static_cast<std::size_t>(group) * group_floats;
                for (std::size_t i = 0; i < mine.size(); ++i) {
                    const bool first = i == 0;
                    std::fill(slice + (first || poison_kept ? 0 : keep), slice + group_floats,
                              std::numeric_limits<float>::quiet_NaN());
                    unit(ex, mine[i], slice, first);
                }
            }
    }
};
}  // namespace

// `a` at this emulator's launch shape, groups, order and shared memory: what run_cluster launches
// (and what a launch group's key is made of, fused_epochs_args).
fused::EpochsArgs Emulator::fitted(fused::EpochsArgs a) const {
    a.groups = cluster_groups_;
    a.step.rows_per_block = rows_per_block_;
    a.step.sum_lanes = sum_lanes_;
    a.weights_shared = fused::cluster_weights_fit(a.step.rows_per_block, a.step.param_count, a.groups, shared_bytes_);
    return a;
}

// The cluster's loop (fused::cluster_epochs) on `a`, fitted, on the shared memory the device's
// blocks would have (refused past the emulated limit, as the device refuses it).
void Emulator::run_cluster(fused::EpochsArgs a, int cluster_blocks) {
    if (const char* problem = fused::cluster_blocks_problem(cluster_blocks)) throw Error(problem);
    a = fitted(a);
    const std::size_t block_bytes = fused::cluster_shared_bytes(a, a.step.sum_lanes);
    if (shared_bytes_ != 0 && block_bytes > shared_bytes_)
        throw Error("fused: a cluster block of " + std::to_string(a.groups) + " groups needs " +
                    std::to_string(block_bytes) + " bytes of shared memory, past the emulated " +
                    std::to_string(shared_bytes_));
    const SequentialClusterLoop loop{
        cluster_blocks, a.groups, reverse_, &shared_, fused::group_shared_bytes(a, a.step.sum_lanes) / sizeof(float),
        poison_kept_};
    model::with_sum_lanes(a.step.sum_lanes,
                          [&](auto lanes) { fused::cluster_epochs<decltype(lanes)::value>(loop, a); });
}

void Emulator::cluster_epoch(const FusedEpochsOp& op) {
    run_cluster(ops::resolve(op, HostMemory{*this}), op.cluster_blocks);
}

void Emulator::fused_epochs(int first, int count, int cluster_blocks) {
    run_cluster(epochs_from_permutations(plan_, HostMemory{*this}, first, count), cluster_blocks);
}

fused::EpochsArgs Emulator::fused_epochs_args(int first, int count) {
    return fitted(epochs_from_permutations(plan_, HostMemory{*this}, first, count));
}

void Emulator::fused_predict(const FusedPredictOp& op) {
    fused::PredictArgs a = ops::resolve(op, HostMemory{*this});
    a.tile = predict_tile_;
    a.sum_lanes = sum_lanes_;
    const std::size_t state = fused::predict_state_floats(a.tile);
    const bool weights = fused::weights_fit(state, a.param_count, shared_bytes_);
    const fused::SequentialExec ex{reverse_};
    const int blocks = fused::predict_blocks(a, op.rows);
    model::with_sum_lanes(a.sum_lanes, [&](auto lanes) {
        for (int k = 0; k < blocks; ++k) {
            const int b = nth_block(k, blocks, reverse_);
            shared_.assign(fused::shared_bytes(state, a.param_count, weights) / sizeof(float),
                           std::numeric_limits<float>::quiet_NaN());
            float* w = weights ? shared_.data() : nullptr;
            fused::predict_tile<decltype(lanes)::value>(
                ex, a, op.rows, b, w, fused::predict_state_at(shared_.data(), a.param_count, weights));
        }
    });
}

// The any-width kernels' own code (engine/cuda/fused_any/step.hpp, half read at run time as the
// device runs it), block after block, with the shared memory the device's blocks carve: parameters
// staged where engine/cuda/fused_any_shape.hpp's rule says they fit this emulated limit, NaN first.
void Emulator::fused_any_step(const FusedAnyStepOp& op) {
    fused_any::Args a = ops::resolve(op, HostMemory{*this});
    a.rows_per_block = rows_per_block_;
    const fused::SequentialExec ex{reverse_};
    if (op.part == FusedAnyStepOp::Part::rows) {
        const std::size_t scratch = fused_any::rows_scratch_floats(a.half, a.rows_per_block);
        const std::size_t params = static_cast<std::size_t>(a.params);
        const bool staged = fused_any::stages_parameters(scratch, params, shared_bytes_);
        a.staged = staged ? 1 : 0;
        // The block's bytes, refused past the limit as the device's launcher refuses them.
        const std::size_t bytes = fused_any::block_bytes_within(scratch, params, staged, a.half, shared_bytes_);
        const int blocks = fused_any::blocks_for(a.rows, a.rows_per_block);
        model::with_sum_lanes(sum_lanes_, [&](auto lanes) {
            for (int k = 0; k < blocks; ++k) {
                shared_.assign(bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
                fused_any::step_rows<0, decltype(lanes)::value>(ex, a, nth_block(k, blocks, reverse_), shared_.data());
            }
        });
    } else {
        const int blocks = fused_any::blocks_for(a.params, fused_any::kGradsItems);
        model::with_sum_lanes(sum_lanes_, [&](auto lanes) {
            for (int k = 0; k < blocks; ++k)
                fused_any::step_grads<0, decltype(lanes)::value>(ex, a, nth_block(k, blocks, reverse_));
        });
    }
}

void Emulator::fused_any_predict(const FusedAnyPredictOp& op) {
    fused_any::Args a = ops::resolve(op, HostMemory{*this});
    // The device's rows a block (predict_rows: fewer than kPredictRows where they would pass the
    // limit), or the tile set_launch_shape asked for where that is fewer still.
    a.rows_per_block = std::min(predict_tile_, fused_any::predict_rows(a.half, shared_bytes_));
    const std::size_t scratch = fused_any::predict_scratch_floats(a.half, a.rows_per_block);
    const std::size_t params = static_cast<std::size_t>(a.params);
    const bool staged = fused_any::stages_parameters(scratch, params, shared_bytes_);
    a.staged = staged ? 1 : 0;
    // The block's bytes, refused past the limit as the device's launcher refuses them.
    const std::size_t bytes = fused_any::block_bytes_within(scratch, params, staged, a.half, shared_bytes_);
    const fused::SequentialExec ex{reverse_};
    const int blocks = fused_any::blocks_for(a.rows, a.rows_per_block);
    model::with_sum_lanes(sum_lanes_, [&](auto lanes) {
        for (int k = 0; k < blocks; ++k) {
            shared_.assign(bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
            fused_any::predict<0, decltype(lanes)::value>(ex, a, nth_block(k, blocks, reverse_), shared_.data());
        }
    });
}

}  // namespace revgraph::cuda
