#pragma once
// The mask-multiply of the backward on its own: dhalf += dtmp ⊙ [half > 0], the result also copied
// into its branch's gradient slot. Used only where no rebuild follows to fuse it into (the left half
// of block 0, whose rebuild training never needs).
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

// dhalf += dtmp ⊙ [half > 0], and the result to grad_copy when copy_grad.
struct MaskOp {
    int rows = 0;
    Ref dhalf, dtmp, half;
    bool copy_grad = false;
    Ref grad_copy;
    int half_cols = model::kHalf;  // h: the half's columns (the state is rows x 2h)
};

namespace ops {

inline std::vector<Access> accesses(const MaskOp& m, std::size_t) {
    std::vector<Access> a{{m.half, half_extent(m.rows, m.half_cols), Elem::f32}};
    add_gradient_accesses(a, m.rows, m.dhalf, true, m.dtmp, m.copy_grad, m.grad_copy, m.half_cols);
    return a;
}

inline Info info(const MaskOp&) { return {"mask", Kind::kernel}; }

struct MaskArgs {
    int rows, h;
    float* dhalf;
    const float* dtmp;
    const float* half;
    float* grad_copy;  // null: no copy
};
template <class Memory>
MaskArgs resolve(const MaskOp& op, const Memory& m) {
    return {op.rows,        op.half_cols,   m.f32(op.dhalf),
            m.f32(op.dtmp), m.f32(op.half), op.copy_grad ? m.f32(op.grad_copy) : nullptr};
}

// Element i of rows x h: dhalf += dtmp ⊙ [half > 0], and the result to grad_copy[i] if non-null.
RG_HD void mask(float* dhalf, const float* dtmp, const float* half, float* grad_copy, int h, int i) {
    const int r = i / h;
    const int c = i - r * h;
    const int s = r * 2 * h + c;
    const float g = dhalf[s] + dtmp[i] * model::relu_mask(half[s]);
    dhalf[s] = g;
    if (grad_copy != nullptr) grad_copy[i] = g;
}

inline void run_host(const MaskArgs& a) {
    for (int k = 0; k < a.rows * a.h; ++k) mask(a.dhalf, a.dtmp, a.half, a.grad_copy, a.h, k);
}

void launch(const MaskArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    mask_kernel(int elems, float* __restrict__ dhalf, const float* __restrict__ dtmp, const float* __restrict__ half,
                float* __restrict__ grad_copy, int h) {
    // h == 41 (rev88) on a loop of its own: the element's split r = i / h is then a division by a
    // constant, a multiply, as when these kernels were written for 41 alone; other widths divide.
    if (h == model::kHalf)
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            mask(dhalf, dtmp, half, grad_copy, model::kHalf, static_cast<int>(i));
    else
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            mask(dhalf, dtmp, half, grad_copy, h, static_cast<int>(i));
}

void launch(const MaskArgs& a, Stream stream) {
    NVTX_RANGE("mask");
    const int elems = a.rows * a.h;
    mask_kernel<<<kernels::blocks_for(elems), kernels::kThreads, 0, stream>>>(elems, a.dhalf, a.dtmp, a.half,
                                                                              a.grad_copy, a.h);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
