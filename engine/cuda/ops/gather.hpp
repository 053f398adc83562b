#pragma once
// Batch gather from the resident epoch order: rows of the lifted training set into the step's core
// state, their labels, and relu of the right half, which the first product of the forward reads.
// Fusing that relu here saves a launch per step. Without an order (prediction) row r is row r.
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

// state[r] = src_rows[order[first + r]] (or src_rows[r] when identity), act_right = relu(right half),
// labels[r] = src_labels[same] when with_labels. Gather and the first relu are one launch.
struct GatherOp {
    int rows = 0;
    bool identity = false;
    Ref order;
    std::int64_t first = 0;
    Ref src_rows, src_labels;
    Ref state, act_right, labels;
    bool with_labels = false;
    int half_cols = model::kHalf;  // h: rows are 2h wide
};

namespace ops {

// source_rows: the rows of the array gathered from (train or query).
inline std::vector<Access> accesses(const GatherOp& g, std::size_t source_rows) {
    const int h = g.half_cols;
    std::vector<Access> a{{g.src_rows, state_elements(static_cast<std::int64_t>(source_rows), h), Elem::f32},
                          {g.state, state_elements(g.rows, h), Elem::f32},
                          {g.act_right, half_elements(g.rows, h), Elem::f32}};
    if (!g.identity) a.push_back({g.order, static_cast<std::size_t>(g.first) + g.rows, Elem::i32});
    if (g.with_labels) {
        a.push_back({g.src_labels, source_rows, Elem::i32});
        a.push_back({g.labels, static_cast<std::size_t>(g.rows), Elem::i32});
    }
    return a;
}

inline Info info(const GatherOp&) { return {"gather", Kind::kernel}; }

struct GatherArgs {
    int rows, h;
    const std::int32_t* order;  // null: identity
    std::int64_t first;
    const float* src_rows;
    const std::int32_t* src_labels;  // null with labels: no labels
    float* state;
    float* act_right;
    std::int32_t* labels;
};
template <class Memory>
GatherArgs resolve(const GatherOp& g, const Memory& m) {
    return {g.rows,         g.half_cols,        g.identity ? nullptr : m.i32(g.order),
            g.first,        m.f32(g.src_rows),  g.with_labels ? m.i32(g.src_labels) : nullptr,
            m.f32(g.state), m.f32(g.act_right), g.with_labels ? m.i32(g.labels) : nullptr};
}

// Element i of a rows x 2h batch: the source row is order[first + r], or r itself without an order.
// The element's relu goes to act_right when it is in the right half; column 0 carries the label.
RG_HD void gather(const std::int32_t* order, std::int64_t first, const float* src_rows, const std::int32_t* src_labels,
                  float* state, float* act_right, std::int32_t* labels, int h, int i) {
    const int r = i / (2 * h);
    const int c = i - r * 2 * h;
    const std::int64_t src = order != nullptr ? static_cast<std::int64_t>(order[first + r]) : r;
    const float v = src_rows[src * 2 * h + c];
    state[i] = v;
    if (c >= h) act_right[r * h + (c - h)] = model::relu(v);
    if (labels != nullptr && c == 0) labels[r] = src_labels[src];
}

inline void run_host(const GatherArgs& a) {
    for (int k = 0; k < a.rows * 2 * a.h; ++k)
        gather(a.order, a.first, a.src_rows, a.src_labels, a.state, a.act_right, a.labels, a.h, k);
}

void launch(const GatherArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    gather_kernel(int elems, const std::int32_t* __restrict__ order, std::int64_t first,
                  const float* __restrict__ src_rows, const std::int32_t* __restrict__ src_labels,
                  float* __restrict__ state, float* __restrict__ act_right, std::int32_t* __restrict__ labels, int h) {
    // h == 41 (rev88) on a loop of its own: the element's split r = i / h is then a division by a
    // constant, a multiply, as when these kernels were written for 41 alone; other widths divide.
    if (h == model::kHalf)
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            gather(order, first, src_rows, src_labels, state, act_right, labels, model::kHalf, static_cast<int>(i));
    else
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            gather(order, first, src_rows, src_labels, state, act_right, labels, h, static_cast<int>(i));
}

void launch(const GatherArgs& a, Stream stream) {
    NVTX_RANGE("gather");
    const int elems = a.rows * 2 * a.h;
    gather_kernel<<<kernels::blocks_for(elems), kernels::kThreads, 0, stream>>>(
        elems, a.order, a.first, a.src_rows, a.src_labels, a.state, a.act_right, a.labels, a.h);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
