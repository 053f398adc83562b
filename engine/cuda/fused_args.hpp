#pragma once
// The fused kernels' arguments from the plan's operations (engine/cuda/program.hpp), with the
// buffers resolved by the caller: device pointers in the executor, host vectors in the emulator.
#include "engine/cuda/fused.hpp"
#include "engine/cuda/program.hpp"

namespace revgraph::cuda {

// f32(Ref) -> float*, i32(Ref) -> std::int32_t*.
template <class F32, class I32>
fused::StepArgs fused_step_args(const FusedStepOp& op, F32&& f32, I32&& i32) {
    fused::StepArgs a;
    a.depth = op.depth, a.alpha = op.alpha, a.lr = op.lr, a.momentum = op.momentum, a.weight_decay = op.weight_decay;
    a.rows = op.rows, a.first = op.first, a.slot = op.slot;
    a.order = i32(op.order), a.train_rows = f32(op.train_rows), a.train_labels = i32(op.train_labels);
    a.params = f32(op.params), a.velocity = f32(op.velocity), a.grads = f32(op.grads);
    a.param_count = static_cast<int>(model::Layout(op.depth).total());
    a.final_state = f32(op.final_state), a.dscores = f32(op.dscores);
    a.act_stack = f32(op.act_stack), a.grad_stack = f32(op.grad_stack);
    return a;
}

// f32(Ref) -> float*, i64(Ref) -> std::int64_t*.
template <class F32, class I64>
fused::PredictArgs fused_predict_args(const FusedPredictOp& op, F32&& f32, I64&& i64) {
    fused::PredictArgs a;
    a.depth = op.depth, a.alpha = op.alpha;
    a.params = f32(op.params), a.param_count = static_cast<int>(model::Layout(op.depth).total());
    a.query_rows = f32(op.query_rows), a.scores = f32(op.scores), a.predictions = i64(op.predictions);
    return a;
}

}  // namespace revgraph::cuda
