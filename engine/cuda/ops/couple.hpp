#pragma once
// The coupling update of one half: h = h + sign*(alpha*branch) with branch = relu(other half) Wᵀ
// from the preceding cuBLASLt product (the reference's rounding: the product is never scaled or
// accumulated inside the matmul), then relu(h) for the product that reads this half next.
// sign = +1 in the forward, -1 when the backward rebuilds the half. In the backward the
// mask-multiply of the other branch's input gradient, dhalf += dtmp ⊙ [h > 0], is fused in and
// reads h before it is rebuilt (one launch instead of two, h loaded once), and the finished dhalf
// is copied compactly into its branch's slot for the batched weight-gradient product.
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

// Backward extras, both on the gradient dhalf of this half (rows x 82 like the state): when
// `masked`, the mask-multiply on h *before* the update; when `copy_grad`, the finished dhalf is also
// written compactly to grad_copy (rows x 41) for the batched weight gradients.
struct CoupleOp {
    int rows = 0;
    Ref half, branch, act;
    float sign = 1.0f, alpha = 0.5f;
    bool masked = false;
    Ref dhalf, dtmp;
    bool copy_grad = false;
    Ref grad_copy;
    int half_cols = model::kHalf;  // h: the half's columns (the state is rows x 2h)
};

namespace ops {

inline std::vector<Access> accesses(const CoupleOp& c, std::size_t) {
    const int h = c.half_cols;
    std::vector<Access> a{{c.half, half_extent(c.rows, h), Elem::f32},
                          {c.branch, half_elements(c.rows, h), Elem::f32},
                          {c.act, half_elements(c.rows, h), Elem::f32}};
    add_gradient_accesses(a, c.rows, c.dhalf, c.masked, c.dtmp, c.copy_grad, c.grad_copy, h);
    return a;
}

inline Info info(const CoupleOp& c) { return {c.masked ? "couple_masked" : "couple", Kind::kernel}; }

// dtmp null: no mask-multiply; grad_copy null: no copy; dhalf null: neither.
struct CoupleArgs {
    int rows, h;
    float* half;
    const float* branch;
    float* act;
    float sign, alpha;
    float* dhalf;
    const float* dtmp;
    float* grad_copy;
};
template <class Memory>
CoupleArgs resolve(const CoupleOp& c, const Memory& m) {
    return {c.rows,
            c.half_cols,
            m.f32(c.half),
            m.f32(c.branch),
            m.f32(c.act),
            c.sign,
            c.alpha,
            c.masked || c.copy_grad ? m.f32(c.dhalf) : nullptr,
            c.masked ? m.f32(c.dtmp) : nullptr,
            c.copy_grad ? m.f32(c.grad_copy) : nullptr};
}

// Element i of rows x hc (hc: the half's columns, 41 for rev88): one coupling update of a half (half
// points at column 0 of that half in a rows x 2hc state), in the reference's rounding
// h + sign*(alpha*branch), and relu of the result. Backward extras on the half's gradient (dhalf,
// same layout as half): with dtmp non-null first the mask-multiply dhalf += dtmp ⊙ [h > 0] on h
// before the update; with grad_copy non-null the finished gradient also goes to grad_copy[i].
RG_HD void couple(float* half, const float* branch, float* act, float sign, float alpha, float* dhalf,
                  const float* dtmp, float* grad_copy, int hc, int i) {
    const int r = i / hc;
    const int c = i - r * hc;
    const int s = r * 2 * hc + c;
    float h = half[s];
    if (dhalf != nullptr) {
        float g = dhalf[s];
        if (dtmp != nullptr) {
            g = g + dtmp[i] * model::relu_mask(h);
            dhalf[s] = g;
        }
        if (grad_copy != nullptr) grad_copy[i] = g;
    }
    h = h + sign * (alpha * branch[i]);
    half[s] = h;
    act[i] = model::relu(h);
}

inline void run_host(const CoupleArgs& a) {
    for (int k = 0; k < a.rows * a.h; ++k)
        couple(a.half, a.branch, a.act, a.sign, a.alpha, a.dhalf, a.dtmp, a.grad_copy, a.h, k);
}

void launch(const CoupleArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
__global__ void __launch_bounds__(kernels::kThreads)
    couple_kernel(int elems, float* __restrict__ half, const float* __restrict__ branch, float* __restrict__ act,
                  float sign, float alpha, float* __restrict__ dhalf, const float* __restrict__ dtmp,
                  float* __restrict__ grad_copy, int h) {
    // h == 41 (rev88) on a loop of its own: the element's split r = i / h is then a division by a
    // constant, a multiply, as when these kernels were written for 41 alone; other widths divide.
    if (h == model::kHalf)
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            couple(half, branch, act, sign, alpha, dhalf, dtmp, grad_copy, model::kHalf, static_cast<int>(i));
    else
        for (std::int64_t i = kernels::first_index(); i < elems; i += kernels::grid_stride())
            couple(half, branch, act, sign, alpha, dhalf, dtmp, grad_copy, h, static_cast<int>(i));
}

void launch(const CoupleArgs& a, Stream stream) {
    NVTX_RANGE(a.dhalf != nullptr ? "couple_backward" : "couple");
    const int elems = a.rows * a.h;
    couple_kernel<<<kernels::blocks_for(elems), kernels::kThreads, 0, stream>>>(
        elems, a.half, a.branch, a.act, a.sign, a.alpha, a.dhalf, a.dtmp, a.grad_copy, a.h);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
