#pragma once
// The fused path's SGD step (engine/cuda/fused.hpp) on batch rows first .. first+rows-1 of the order,
// as two kernels. Part `rows`: every per-row operation of the step, leaving the final state, the
// score gradients and the backward's per-branch operands in the stacks (slot = full batch rows);
// part `grads`: every parameter's gradient from those, and SGD. Their phases, per-item bodies and
// shared-memory layout live in fused.hpp (shared with the emulator); the kernels and launchers in
// kernels/fused.cuh (kernels.hpp declares them). The executor and the emulator each treat this
// operation on its own: its blocks carve shared memory.
#include "engine/cuda/fused.hpp"
#include "engine/cuda/ops/op.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda {

struct FusedStepOp {
    enum class Part { rows, grads };
    Part part = Part::rows;
    int rows = 0;
    std::int64_t first = 0;
    int slot = 0;
    int depth = 0;
    float alpha = 0, lr = 0, momentum = 0, weight_decay = 0;
    bool gather_before_wait = false;  // fused::StepArgs: set where a step follows a step
    Ref order, train_rows, train_labels, params, velocity, grads;
    Ref final_state, dscores, act_stack, grad_stack;
};

namespace ops {

// source_rows: the training set's rows (gathered through the order). The final state, dscores and
// the stacks are column-major with `slot` rows a column (fused::column_major): each reaches to its
// last column's row rows-1.
inline std::vector<Access> accesses(const FusedStepOp& s, std::size_t source_rows) {
    const std::size_t params = model::Layout(s.depth).total(), rows = static_cast<std::size_t>(s.rows);
    const auto columns = [&](int count) { return fused::column_major(s.slot, count - 1, s.rows); };
    const std::size_t stack = columns(2 * s.depth * model::kHalf);
    std::vector<Access> a{{s.params, params, Elem::f32},
                          {s.final_state, columns(model::kFeatures), Elem::f32},
                          {s.dscores, columns(model::kClasses), Elem::f32},
                          {s.act_stack, stack, Elem::f32},
                          {s.grad_stack, stack, Elem::f32}};
    if (s.part == FusedStepOp::Part::rows) {
        a.push_back({s.order, static_cast<std::size_t>(s.first) + rows, Elem::i32});
        a.push_back({s.train_rows, state_elements(static_cast<std::int64_t>(source_rows)), Elem::f32});
        a.push_back({s.train_labels, source_rows, Elem::i32});
    } else {
        a.push_back({s.velocity, params, Elem::f32});
        a.push_back({s.grads, params, Elem::f32});
    }
    return a;
}

inline Info info(const FusedStepOp& f) {
    return {f.part == FusedStepOp::Part::rows ? "fused_rows" : "fused_grads", Kind::kernel};
}

template <class Memory>
fused::StepArgs resolve(const FusedStepOp& op, const Memory& m) {
    fused::StepArgs a;
    a.depth = op.depth, a.alpha = op.alpha, a.lr = op.lr, a.momentum = op.momentum, a.weight_decay = op.weight_decay;
    a.rows = op.rows, a.first = op.first, a.slot = op.slot, a.gather_before_wait = op.gather_before_wait;
    a.order = m.i32(op.order), a.train_rows = m.f32(op.train_rows), a.train_labels = m.i32(op.train_labels);
    a.params = m.f32(op.params), a.velocity = m.f32(op.velocity), a.grads = m.f32(op.grads);
    a.param_count = static_cast<int>(model::Layout(op.depth).total());
    a.final_state = m.f32(op.final_state), a.dscores = m.f32(op.dscores);
    a.act_stack = m.f32(op.act_stack), a.grad_stack = m.f32(op.grad_stack);
    return a;
}

}  // namespace ops
}  // namespace revgraph::cuda
