#pragma once
// A whole task's epochs, or K tasks', in ONE cluster launch (engine/cuda/fused_cluster.hpp): the
// arguments, from a plan's own first step so that every constant and buffer is the two-kernel
// step's. The engine launches an epoch at a time (FusedEpochsOp, reading the order buffer, so that a
// task can stop after any epoch); this is the kernel lab's launch, and the emulator's to check it.
#include <string>
#include <variant>

#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/program.hpp"
#include "engine/error.hpp"

namespace revgraph::cuda {

// Epochs first .. first+count-1 of a cluster-capable plan in ONE launch, each epoch's order read
// from the resident permutations (epoch e's at permutations + e·n) rather than the order buffer:
// what the kernel lab launches for a whole task, and K tasks at once. Throws Error, in one line, for
// a plan the cluster does not run or epochs it does not have.
template <class Memory>
fused::EpochsArgs epochs_from_permutations(const TaskPlan& plan, const Memory& m, int first, int count) {
    if (const char* problem = plan.cluster_problem()) throw Error(problem);
    if (first < 0 || count < 0 || first + count > plan.config().epochs)
        throw Error("fused: epochs " + std::to_string(first) + " to " + std::to_string(first + count - 1) +
                    " asked of " + std::to_string(plan.config().epochs));
    FusedEpochsOp op{.step = std::get<FusedStepOp>(plan.step(0).front()),
                     .train_count = plan.train_count(),
                     .batch_size = plan.full_batch()};
    fused::EpochsArgs a = ops::resolve(op, m);
    a.permutations = m.i32(Ref{Buf::permutations});
    a.first_epoch = first;
    a.epochs = count;
    return a;
}

}  // namespace revgraph::cuda
