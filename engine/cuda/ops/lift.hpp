#pragma once
// Normalise + lift (docs/spec.md §2): raw train and query pixels to rows of the width (81 values of
// float32 x*4 - 0.5, then width - 81 appended zeros), both sets in one launch: part of every timed run.
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct LiftOp {
    Ref train_raw, train_rows;
    std::int64_t train_count = 0;
    Ref query_raw, query_rows;
    std::int64_t query_count = 0;
    int width = model::kFeatures;
};

namespace ops {

inline std::vector<Access> accesses(const LiftOp& l, std::size_t) {
    return {{l.train_raw, static_cast<std::size_t>(l.train_count) * model::kPixels, Elem::f32},
            {l.train_rows, state_elements(l.train_count, l.width / 2), Elem::f32},
            {l.query_raw, static_cast<std::size_t>(l.query_count) * model::kPixels, Elem::f32},
            {l.query_rows, state_elements(l.query_count, l.width / 2), Elem::f32}};
}

inline Info info(const LiftOp&) { return {"lift", Kind::kernel}; }

struct LiftArgs {
    const float* train_raw;
    float* train_rows;
    std::int64_t train_count;
    const float* query_raw;
    float* query_rows;
    std::int64_t query_count;
    int width;
};
template <class Memory>
LiftArgs resolve(const LiftOp& l, const Memory& m) {
    return {m.f32(l.train_raw),  m.f32(l.train_rows), l.train_count, m.f32(l.query_raw),
            m.f32(l.query_rows), l.query_count,       l.width};
}

// Element i of a rows x width lifted array: lifted pixel or an appended zero.
RG_HD void lift(const float* raw, float* rows, int width, std::int64_t i) {
    const std::int64_t r = i / width;
    const int c = static_cast<int>(i - r * width);
    rows[i] = c < model::kPixels ? model::lift_pixel<float>(raw[r * model::kPixels + c]) : 0.0f;
}

inline void run_host(const LiftArgs& a) {
    for (std::int64_t k = 0; k < a.train_count * a.width; ++k) lift(a.train_raw, a.train_rows, a.width, k);
    for (std::int64_t k = 0; k < a.query_count * a.width; ++k) lift(a.query_raw, a.query_rows, a.width, k);
}

void launch(const LiftArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    lift_kernel(const float* __restrict__ train_raw, float* __restrict__ train_rows, std::int64_t train_elems,
                const float* __restrict__ query_raw, float* __restrict__ query_rows, std::int64_t query_elems,
                int width) {
    const std::int64_t total = train_elems + query_elems;
    // Width 82 (rev88) on a loop of its own: the element's split is then a division by a constant.
    if (width == model::kFeatures)
        for (std::int64_t i = kernels::first_index(); i < total; i += kernels::grid_stride()) {
            if (i < train_elems)
                lift(train_raw, train_rows, model::kFeatures, i);
            else
                lift(query_raw, query_rows, model::kFeatures, i - train_elems);
        }
    else
        for (std::int64_t i = kernels::first_index(); i < total; i += kernels::grid_stride()) {
            if (i < train_elems)
                lift(train_raw, train_rows, width, i);
            else
                lift(query_raw, query_rows, width, i - train_elems);
        }
}

void launch(const LiftArgs& a, Stream stream) {
    NVTX_RANGE("lift");
    const std::int64_t train_elems = a.train_count * a.width, query_elems = a.query_count * a.width;
    lift_kernel<<<kernels::blocks_for(train_elems + query_elems), kernels::kThreads, 0, stream>>>(
        a.train_raw, a.train_rows, train_elems, a.query_raw, a.query_rows, query_elems, a.width);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
