#pragma once
// A whole epoch of cuda-fused's step (width 82) as one launch of a thread-block cluster (sm_90+):
// every batch's rows units and grads units shared out among the cluster's blocks, a cluster barrier
// where the two-kernel step has a kernel boundary (engine/cuda/fused_cluster.hpp says why and what
// it costs). It reads the epoch's order from the order buffer (the epoch's start copies it there,
// as for the two-kernel step), so one captured epoch graph serves every epoch. Its per-step
// constants and buffers are the two-kernel step's own (`step`: the plan's rows part of batch 0).
// Kernel and launcher: kernels/fused_cluster.cuh; the emulator runs the same loop
// (Emulator::cluster_epoch).
#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/ops/fused_step.hpp"

namespace revgraph::cuda {

struct FusedEpochsOp {
    FusedStepOp step;  // rows part of the epoch's first batch: depth, α, SGD terms, every buffer
    std::int64_t train_count = 0;
    int batch_size = 0;  // the full batch (the slot)
    int cluster_blocks = fused::kClusterBlocks;
};

namespace ops {

// Every batch's steps: the order's n entries, and what a full batch's rows and grads parts reach.
inline std::vector<Access> accesses(const FusedEpochsOp& e, std::size_t source_rows) {
    FusedStepOp rows = e.step, grads = e.step;
    rows.part = FusedStepOp::Part::rows;
    rows.first = 0;
    rows.rows = e.batch_size;
    grads.part = FusedStepOp::Part::grads;
    grads.rows = e.batch_size;
    std::vector<Access> a = accesses(rows, source_rows);
    for (const Access& g : accesses(grads, source_rows)) a.push_back(g);
    a.push_back({e.step.order, static_cast<std::size_t>(e.train_count), Elem::i32});
    return a;
}

inline Info info(const FusedEpochsOp&) { return {"fused_epochs", Kind::kernel}; }

// One epoch: the order buffer as the "permutations" of epoch 0 of 1.
template <class Memory>
fused::EpochsArgs resolve(const FusedEpochsOp& op, const Memory& m) {
    fused::EpochsArgs a;
    a.step = resolve(op.step, m);
    a.permutations = a.step.order;
    a.train_count = op.train_count;
    a.batch_size = op.batch_size;
    a.first_epoch = 0;
    a.epochs = 1;
    return a;
}

}  // namespace ops

}  // namespace revgraph::cuda
