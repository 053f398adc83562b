#pragma once
// A step's SGD and the next step's gather in ONE launch (`cuda`'s epoch body, TaskPlan::epoch_body):
// the two small kernels sat back to back on the step chain — nothing between them, nothing of one
// read by the other (SGD: parameters, momentum, gradients; gather: the order, the lifted rows, the
// state, relu of its right half, the labels) — so one grid runs both: element i < sgd.count is
// SGD's element i, the rest the gather's. A chain node less a step. Each element's arithmetic is
// ops/sgd.hpp's and ops/gather.hpp's own, so the bits are those of the two launches.
#include "engine/cuda/ops/gather.hpp"
#include "engine/cuda/ops/op.hpp"
#include "engine/cuda/ops/sgd.hpp"

namespace revgraph::cuda {

struct SgdGatherOp {
    SgdOp sgd;        // this step's update
    GatherOp gather;  // the next step's rows (never identity: training gathers through the order)
};

namespace ops {

inline std::vector<Access> accesses(const SgdGatherOp& o, std::size_t source_rows) {
    std::vector<Access> a = accesses(o.sgd, source_rows);
    for (const Access& g : accesses(o.gather, source_rows)) a.push_back(g);
    return a;
}

inline Info info(const SgdGatherOp&) { return {"sgd_gather", Kind::kernel}; }

struct SgdGatherArgs {
    SgdArgs sgd;
    GatherArgs gather;
};
template <class Memory>
SgdGatherArgs resolve(const SgdGatherOp& o, const Memory& m) {
    return {resolve(o.sgd, m), resolve(o.gather, m)};
}

// Element i of the launch: SGD's i, then the gather's i - sgd.count. kH: the half width as a
// constant (model::kHalf, rev88), so that the gather's split of an element into row and column is a
// division by a constant (a multiply), as gather_kernel's is; 0: a.gather.h, divided at run time.
template <int kH = 0>
RG_HD void sgd_gather(const SgdGatherArgs& a, std::int64_t i) {
    if (i < a.sgd.count) {
        sgd(a.sgd.params, a.sgd.velocity, a.sgd.grads, a.sgd.lr, a.sgd.momentum, a.sgd.weight_decay, i);
        return;
    }
    const GatherArgs& g = a.gather;
    gather(g.order, g.first, g.src_rows, g.src_labels, g.state, g.act_right, g.labels, kH != 0 ? kH : g.h,
           static_cast<int>(i - a.sgd.count));
}

inline std::int64_t sgd_gather_elements(const SgdGatherArgs& a) {
    return a.sgd.count + static_cast<std::int64_t>(a.gather.rows) * 2 * a.gather.h;
}

// As the kernel picks its loop, so that the emulator runs the constant-width one at rev88 too.
inline void run_host(const SgdGatherArgs& a) {
    const std::int64_t elems = sgd_gather_elements(a);
    if (a.gather.h == model::kHalf)
        for (std::int64_t k = 0; k < elems; ++k) sgd_gather<model::kHalf>(a, k);
    else
        for (std::int64_t k = 0; k < elems; ++k) sgd_gather(a, k);
}

void launch(const SgdGatherArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads) sgd_gather_kernel(SgdGatherArgs a, std::int64_t elems) {
    if (a.gather.h == model::kHalf)
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            sgd_gather<model::kHalf>(a, i);
    else
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride()) sgd_gather(a, i);
}

void launch(const SgdGatherArgs& a, Stream stream) {
    NVTX_RANGE("sgd_gather");
    const std::int64_t elems = sgd_gather_elements(a);
    sgd_gather_kernel<<<kernels::blocks_for(elems), kernels::kThreads, 0, stream>>>(a, elems);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
