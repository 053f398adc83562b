#pragma once
// A whole task's epochs, or K tasks', in ONE cluster launch (engine/cuda/fused_cluster.hpp): the
// arguments, from a plan's own first step so that every constant and buffer is the two-kernel
// step's. A task alone launches an epoch at a time (FusedEpochsOp, reading the order buffer, so that
// it can stop after any epoch); K tasks trained together (PreparedTask::run_together: sweeps,
// `qualify --together`) are K clusters of one launch, each on its own task's buffers
// (Backend::launch_group, run_group: the GPU backend and its emulation); the kernel lab launches both.
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/task_plan.hpp"
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

// Whether two tasks can be clusters of one launch: the text both must give (Backend::launch_group),
// the cluster's size and what fused::same_launch_shape compares, which sizes the launch for all.
inline std::string launch_group_key(const fused::EpochsArgs& a, int cluster_blocks) {
    return "clusters of " + std::to_string(cluster_blocks) + " blocks, " + std::to_string(a.groups) + " groups, " +
           std::to_string(a.step.rows_per_block) + " rows a unit, " + std::to_string(a.step.param_count) +
           " parameters" + (a.weights_shared ? " staged" : " in global memory") + ", " +
           std::to_string(a.step.sum_lanes) + " sum lanes";
}

// A launch group's members as the backend B that runs it: every one a B with `lead`'s group, `lead`
// first; else one line, before anything is enqueued.
template <class B>
std::vector<B*> launch_group_members(const B& lead, const std::vector<Backend*>& members) {
    const std::string key = lead.launch_group();
    if (key.empty()) throw Error("backend: " + lead.name() + " trains no tasks together in one launch");
    if (members.empty() || members.front() != &lead) throw Error("backend: a launch group is run by its first member");
    std::vector<B*> group;
    for (Backend* m : members) {
        auto* b = dynamic_cast<B*>(m);
        if (b == nullptr || b->launch_group() != key)
            throw Error("backend: a launch group (" + key + ") given a task of another: " +
                        (m == nullptr ? std::string("none") : m->name() + " " + m->launch_group()));
        if (std::find(group.begin(), group.end(), b) != group.end())
            throw Error("backend: a launch group lists a task twice (it would race with itself)");
        group.push_back(b);
    }
    return group;
}

}  // namespace revgraph::cuda
