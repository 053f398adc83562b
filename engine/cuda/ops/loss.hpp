#pragma once
// The head's bias added to the batch's scores (the reference's acc + b, kept out of the matmul so no
// epilogue and no bias-pointer alignment rule is involved), the softmax/cross-entropy gradient
// (model::softmax_xent_grad_row) of every row, the head-bias gradient as column sums of it, and relu
// of the left half of the retained state for the first reconstructing block: one single-block
// launch. A single block makes the bias gradient a plain fixed-order reduction with no atomics:
// warp j owns class j, lane l sums rows l, l+32, ... in order, then a fixed shuffle tree (16, 8,
// 4, 2, 1) combines the lanes — the same order on every run. The relu is recomputed from the
// state rather than kept from the forward, so the state stays the only activation that crosses
// from forward to backward.
//
// The block has 1024 threads and spreads a row's softmax over its classes (model::
// softmax_xent_grad_row's steps, the same operations): with 320 threads, a row a thread and the
// relu copy 17 dependent rounds of global loads, it was the step's longest node (ncu's times before
// and after: bench/NOTES.md, "Levers tried, and what each gave").
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct LossOp {
    int rows = 0;
    Ref scores, bias, labels, dscores, dbias, state, act_left;
    int half_cols = model::kHalf;  // h: the state is rows x 2h
};

namespace ops {

inline std::vector<Access> accesses(const LossOp& l, std::size_t) {
    const std::size_t s = static_cast<std::size_t>(l.rows) * model::kClasses;
    return {{l.scores, s, Elem::f32},
            {l.bias, static_cast<std::size_t>(model::kClasses), Elem::f32},
            {l.labels, static_cast<std::size_t>(l.rows), Elem::i32},
            {l.dscores, s, Elem::f32},
            {l.dbias, static_cast<std::size_t>(model::kClasses), Elem::f32},
            {l.state, half_extent(l.rows, l.half_cols), Elem::f32},
            {l.act_left, half_elements(l.rows, l.half_cols), Elem::f32}};
}

inline Info info(const LossOp&) { return {"loss", Kind::kernel}; }

struct LossArgs {
    int rows, h;
    float* scores;
    const float* bias;
    const std::int32_t* labels;
    float* dscores;
    float* dbias;
    const float* state;
    float* act_left;
};
template <class Memory>
LossArgs resolve(const LossOp& l, const Memory& m) {
    return {l.rows,           l.half_cols,    m.f32(l.scores), m.f32(l.bias),    m.i32(l.labels),
            m.f32(l.dscores), m.f32(l.dbias), m.f32(l.state),  m.f32(l.act_left)};
}

// Row r of the head: scores += bias (the reference's acc + b[j]), then dscores of that row (mean
// cross-entropy over `rows`).
RG_HD float loss_row(float* scores, const float* bias, const std::int32_t* labels, int rows, float* dscores, int r) {
    float* s = scores + r * model::kClasses;
    for (int j = 0; j < model::kClasses; ++j) s[j] = s[j] + bias[j];
    return model::softmax_xent_grad_row(s, static_cast<std::int64_t>(labels[r]), rows, dscores + r * model::kClasses);
}

// Element i of rows x h: relu of the left half of a rows x 2h state.
RG_HD void relu_left(const float* state, float* act, int h, int i) {
    const int r = i / h;
    const int c = i - r * h;
    act[i] = model::relu(state[r * 2 * h + c]);
}

inline void run_host(const LossArgs& a) {
    for (int r = 0; r < a.rows; ++r) loss_row(a.scores, a.bias, a.labels, a.rows, a.dscores, r);
    // Column sums in row order, as the reference's head backward forms the bias gradient. The GPU
    // kernel below sums lane-strided rows and then a shuffle tree: fixed, so deterministic, but not
    // these bits; the cuBLASLt path is held to the GPU tolerance, not to the reference's bits, as its
    // products are too.
    for (int j = 0; j < model::kClasses; ++j) {
        float acc = 0.0f;
        for (int r = 0; r < a.rows; ++r) acc += a.dscores[r * model::kClasses + j];
        a.dbias[j] = acc;
    }
    for (int k = 0; k < a.rows * a.h; ++k) relu_left(a.state, a.act_left, a.h, k);
}

void launch(const LossArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
inline constexpr int kLossThreads = 1024;                               // warps 0..9 also own a class each
inline constexpr int kLossRowsAtOnce = kLossThreads / model::kClasses;  // a thread a (row, class)

__global__ void __launch_bounds__(kLossThreads)
    loss_kernel(int rows, float* __restrict__ scores, const float* __restrict__ bias,
                const std::int32_t* __restrict__ labels, float* dscores, float* __restrict__ dbias,
                const float* __restrict__ state, float* __restrict__ act_left, int h) {
    constexpr int C = model::kClasses;
    __shared__ float exps[kLossRowsAtOnce * C];
    const int t = static_cast<int>(threadIdx.x);
    // relu of the left half: independent loads, a few in flight a thread (h == 41, rev88, on a loop
    // of its own: its split by h is then a multiply; other widths divide).
    if (h == model::kHalf) {
#pragma unroll 4
        for (int i = t; i < rows * model::kHalf; i += kLossThreads) relu_left(state, act_left, model::kHalf, i);
    } else {
#pragma unroll 4
        for (int i = t; i < rows * h; i += kLossThreads) relu_left(state, act_left, h, i);
    }
    // loss_row, kLossRowsAtOnce rows at a time, thread t on (row t / C, class t % C); each step
    // below is loss_row's, on the same values, so the bits are its bits.
    const float inv_rows = model::inverse_rows<float>(rows);
    const int rr = t / C, j = t - rr * C;
    for (int r0 = 0; r0 < rows; r0 += kLossRowsAtOnce) {
        const int r = r0 + rr;
        const bool mine = rr < kLossRowsAtOnce && r < rows;
        if (mine) scores[r * C + j] = scores[r * C + j] + bias[j];
        __syncthreads();  // the row's scores (global memory, this block) before its maximum
        if (mine) {
            const float* s = scores + r * C;
            exps[rr * C + j] = model::softmax_exp(s[j] - model::row_max(s));
        }
        __syncthreads();
        if (mine) {
            const float* e = exps + rr * C;
            dscores[r * C + j] = model::xent_grad(e[j], model::row_sum(e), j == labels[r], inv_rows);
        }
        __syncthreads();  // exps reused by the next rows; every dscores written before the column sums
    }
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    if (warp < model::kClasses) {  // whole warps only: the shuffles below need all 32 lanes
        float acc = 0.0f;
        for (int r = lane; r < rows; r += 32) acc += dscores[r * model::kClasses + warp];
        for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (lane == 0) dbias[warp] = acc;
    }
}

void launch(const LossArgs& a, Stream stream) {
    NVTX_RANGE("loss");
    loss_kernel<<<1, kLossThreads, 0, stream>>>(a.rows, a.scores, a.bias, a.labels, a.dscores, a.dbias, a.state,
                                                a.act_left, a.h);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops
}  // namespace revgraph::cuda
