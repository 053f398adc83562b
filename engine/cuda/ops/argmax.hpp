#pragma once
// Prediction: the head's bias added to each query row's scores (the reference's acc + b), then the
// argmax of its 10 scores (model::argmax_row, lowest index on ties), int64.
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct ArgmaxOp {
    std::int64_t rows = 0;
    Ref scores, bias, predictions;
};

namespace ops {

inline std::vector<Access> accesses(const ArgmaxOp& a, std::size_t) {
    return {{a.scores, static_cast<std::size_t>(a.rows) * model::kClasses, Elem::f32},
            {a.bias, static_cast<std::size_t>(model::kClasses), Elem::f32},
            {a.predictions, static_cast<std::size_t>(a.rows), Elem::i64}};
}

inline Info info(const ArgmaxOp&) { return {"argmax", Kind::kernel}; }

struct ArgmaxArgs {
    std::int64_t rows;
    float* scores;
    const float* bias;
    std::int64_t* predictions;
};
template <class Memory>
ArgmaxArgs resolve(const ArgmaxOp& a, const Memory& m) {
    return {a.rows, m.f32(a.scores), m.f32(a.bias), m.i64(a.predictions)};
}

// Row r of the query scores: scores += bias, then the prediction.
RG_HD void argmax(float* scores, const float* bias, std::int64_t* predictions, std::int64_t r) {
    float* s = scores + r * model::kClasses;
    for (int j = 0; j < model::kClasses; ++j) s[j] = s[j] + bias[j];
    predictions[r] = model::argmax_row(s);
}

inline void run_host(const ArgmaxArgs& a) {
    for (std::int64_t r = 0; r < a.rows; ++r) argmax(a.scores, a.bias, a.predictions, r);
}

void launch(const ArgmaxArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    argmax_kernel(std::int64_t rows, float* __restrict__ scores, const float* __restrict__ bias,
                  std::int64_t* __restrict__ predictions) {
    for (std::int64_t r = kernels::first_index(); r < rows; r += kernels::grid_stride())
        argmax(scores, bias, predictions, r);
}

void launch(const ArgmaxArgs& a, Stream stream) {
    NVTX_RANGE("argmax");
    argmax_kernel<<<kernels::blocks_for(a.rows), kernels::kThreads, 0, stream>>>(a.rows, a.scores, a.bias,
                                                                                 a.predictions);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
