#pragma once
// cuda-fused's prediction at every width but 82 (engine/cuda/fused_any/step.hpp's predict): every
// query row lifted from its raw pixels, forward, scores and argmax, fused_any::predict_rows rows a
// block. Kernel and launcher: kernels/fused_any.cuh.
#include "engine/cuda/fused_any/step.hpp"
#include "engine/cuda/ops/fused_any_step.hpp"
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct FusedAnyPredictOp {
    int rows = 0;
    int depth = 0, half = 0;
    float alpha = 0;
    Ref params, query_raw, scores, predictions;
};

namespace ops {

inline std::vector<Access> accesses(const FusedAnyPredictOp& p, std::size_t) {
    const std::size_t rows = static_cast<std::size_t>(p.rows);
    return {{p.params, any_layout(p.depth, p.half).total(), Elem::f32},
            {p.query_raw, rows * model::kPixels, Elem::f32},
            {p.scores, rows * model::kClasses, Elem::f32},
            {p.predictions, rows, Elem::i64}};
}

inline Info info(const FusedAnyPredictOp&) { return {"fused_any_predict", Kind::kernel}; }

// As FusedAnyStepOp's: the launch sets rows_per_block and staged.
template <class Memory>
fused_any::Args resolve(const FusedAnyPredictOp& op, const Memory& m) {
    fused_any::Args a{};
    a.depth = op.depth, a.half = op.half, a.rows = op.rows, a.alpha = op.alpha;
    a.params = static_cast<int>(any_layout(op.depth, op.half).total());
    a.param = m.f32(op.params), a.pixels = m.f32(op.query_raw);
    a.scores = m.f32(op.scores), a.predictions = m.i64(op.predictions);
    return a;
}

}  // namespace ops
}  // namespace revgraph::cuda
