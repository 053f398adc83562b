#pragma once
// cuda-fused's SGD step at every width but 82 (engine/cuda/fused_any/step.hpp): the batch rows
// first .. first+rows-1 of the order as two kernels, like FusedStepOp at 82. Part `rows`: gather
// (lifting the raw pixels on the way, so this path has no normalise pass and no lifted-row buffers),
// forward, loss, the reconstructing backward, leaving the final state, the score gradients and each
// branch's relu input and α·g_out in the stacks (slot = full batch rows); part `grads`: every
// parameter's gradient from those, in row order, and SGD. The launch shapes and the staging rule are
// engine/cuda/fused_any_shape.hpp's; the kernels and launchers kernels/fused_any.cuh's. The executor
// and the emulator each treat this operation on their own: its blocks carve shared memory.
#include "engine/cuda/fused_any/step.hpp"
#include "engine/cuda/ops/op.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda {

struct FusedAnyStepOp {
    enum class Part { rows, grads };
    Part part = Part::rows;
    int rows = 0;
    std::int64_t first = 0;
    int slot = 0;
    int depth = 0, half = 0;
    float alpha = 0, lr = 0, momentum = 0, weight_decay = 0;
    Ref order, train_raw, train_labels, params, velocity, grads;
    Ref final_state, dscores, act_stack, grad_stack;
};

namespace ops {

inline model::Layout any_layout(int depth, int half) { return model::Layout(depth, 2 * half); }

// source_rows: the training set's rows (gathered through the order).
inline std::vector<Access> accesses(const FusedAnyStepOp& s, std::size_t source_rows) {
    const model::Layout layout = any_layout(s.depth, s.half);
    const std::size_t params = layout.total(), rows = static_cast<std::size_t>(s.rows);
    const std::size_t stack = static_cast<std::size_t>(layout.branch_count()) * s.slot * s.half;
    std::vector<Access> a{{s.params, params, Elem::f32},
                          {s.final_state, rows * layout.width(), Elem::f32},
                          {s.dscores, rows * model::kClasses, Elem::f32},
                          {s.act_stack, stack, Elem::f32},
                          {s.grad_stack, stack, Elem::f32}};
    if (s.part == FusedAnyStepOp::Part::rows) {
        a.push_back({s.order, static_cast<std::size_t>(s.first) + rows, Elem::i32});
        a.push_back({s.train_raw, source_rows * model::kPixels, Elem::f32});
        a.push_back({s.train_labels, source_rows, Elem::i32});
    } else {
        a.push_back({s.velocity, params, Elem::f32});
        a.push_back({s.grads, params, Elem::f32});
    }
    return a;
}

inline Info info(const FusedAnyStepOp& f) {
    return {f.part == FusedAnyStepOp::Part::rows ? "fused_any_rows" : "fused_any_grads", Kind::kernel};
}

// Everything but the launch's own choices (rows_per_block, staged), which the executor and the
// emulator set from engine/cuda/fused_any_shape.hpp.
template <class Memory>
fused_any::Args resolve(const FusedAnyStepOp& op, const Memory& m) {
    fused_any::Args a{};
    a.depth = op.depth, a.half = op.half, a.rows = op.rows, a.slot = op.slot;
    a.first = static_cast<int>(op.first);
    a.params = static_cast<int>(any_layout(op.depth, op.half).total());
    a.alpha = op.alpha, a.lr = op.lr, a.momentum = op.momentum, a.weight_decay = op.weight_decay;
    a.order = m.i32(op.order), a.pixels = m.f32(op.train_raw), a.labels = m.i32(op.train_labels);
    a.param = m.f32(op.params), a.velocity = m.f32(op.velocity), a.grads = m.f32(op.grads);
    a.final_state = m.f32(op.final_state), a.dscores = m.f32(op.dscores);
    a.act = m.f32(op.act_stack), a.grad = m.f32(op.grad_stack);
    return a;
}

}  // namespace ops
}  // namespace revgraph::cuda
