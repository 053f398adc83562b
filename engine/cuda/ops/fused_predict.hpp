#pragma once
// The fused path's prediction (engine/cuda/fused.hpp): every query row, in tiles of
// fused::PredictArgs::tile rows, one block each. Kernel and launcher: kernels/fused.cuh.
#include "engine/cuda/fused.hpp"
#include "engine/cuda/ops/op.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda {

struct FusedPredictOp {
    std::int64_t rows = 0;
    int depth = 0;
    float alpha = 0;
    Ref params, query_rows, scores, predictions;
};

namespace ops {

inline std::vector<Access> accesses(const FusedPredictOp& p, std::size_t) {
    const std::size_t rows = static_cast<std::size_t>(p.rows);
    return {{p.params, model::Layout(p.depth).total(), Elem::f32},
            {p.query_rows, state_elements(p.rows), Elem::f32},
            {p.scores, rows * model::kClasses, Elem::f32},
            {p.predictions, rows, Elem::i64}};
}

inline Info info(const FusedPredictOp&) { return {"fused_predict", Kind::kernel}; }

template <class Memory>
fused::PredictArgs resolve(const FusedPredictOp& op, const Memory& m) {
    fused::PredictArgs a;
    a.depth = op.depth, a.alpha = op.alpha;
    a.params = m.f32(op.params), a.param_count = static_cast<int>(model::Layout(op.depth).total());
    a.query_rows = m.f32(op.query_rows), a.scores = m.f32(op.scores), a.predictions = m.i64(op.predictions);
    return a;
}

}  // namespace ops
}  // namespace revgraph::cuda
