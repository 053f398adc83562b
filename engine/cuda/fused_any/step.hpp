#pragma once
// cuda-fused's SGD step and prediction at ANY width and depth, as phases (the idea of
// engine/cuda/fused.hpp, written once for every shape): a rows kernel takes a few batch rows a
// block through gather, forward, scores, the loss gradient, the head's input gradient and the
// reconstructing backward (docs/spec.md §4) in shared memory, leaving relu(x) and α·g of every
// branch in two stacks; a grads kernel sums each parameter's gradient over the batch's rows
// and applies SGD; a predict kernel runs query rows forward to their argmax.
//
// Why a second step beside fused.hpp: that one is tuned for rev88's 82 coordinates (constants of
// 41 and 82 everywhere, vector copies sized for them). This one takes the half width h as a
// template argument kH — a compile-time constant where the width is known when it is compiled
// (the race entry compiles it at its first call for its one config), or 0 to read it from
// Args::half at run time — so one source serves every width the CPU backends run, 82..1024, and is
// small enough to travel inside a one-file entry (engine/export/). Its one include, math.hpp,
// reaches standard headers that NVRTC lacks: the export's kernel_text.py drops those lines, and
// engine/export/nvrtc_prelude.cuh gives what the inlined text uses of them.
//
// Bits: every item sums in the trainer's order (kL lanes, engine/model/sum_order.hpp) without fused
// multiply-adds (nvcc and NVRTC run with --fmad=false), with model::exp_f32 for the softmax, so it
// gives cpu::Trainer<float>'s very bits in that order; test/cuda/test_fused_any.cpp holds it to that
// step by step at widths 82..1024, with every block and every phase's items also run last to first
// (a race on a GPU would change bits), and test/cuda/test_fused_lanes.cpp in every order.
#include "engine/model/math.hpp"

namespace revgraph::cuda::fused_any {

using model::kClasses;
using model::kPixels;

// Everything a launch reads and writes, passed by value to every kernel: a plain struct, made
// value-initialised (Args a{}); the race entry builds the same struct with ctypes (test/export/
// checks the two layouts agree). Pointers are device addresses.
struct Args {
    int depth, half;     // half = width / 2 (read where kH = 0)
    int rows;            // step: this batch's rows; predict: all query rows
    int first;           // step: the batch's first slot in `order`
    int rows_per_block;  // rows kernel: batch rows a block; predict: query rows a block
    int staged;          // 1: a block copies the parameters to shared memory first
    int slot;            // rows of one branch's slot in the stacks (the full batch)
    int params;          // parameter count (docs/spec.md §3's layout)
    float alpha, lr, momentum, weight_decay;
    const std::int32_t* order;   // the epoch's order of the training rows
    const float* pixels;         // 81 a row: the training images (step) or the query images (predict)
    const std::int32_t* labels;  // training labels
    float *param, *velocity;
    float* grads;               // kept where not null (the step-by-step tests read them)
    float* final_state;         // rows x width: the core output, for the head's gradient
    float* dscores;             // rows x 10
    float* act;                 // branch b, row r, input i at (b·slot + r)·half + i: relu(x)
    float* grad;                // branch b, row r, output o at (b·slot + r)·half + o: α·g_out
    float* scores;              // predict: Q x 10
    std::int64_t* predictions;  // predict: Q
};

// Launch shapes: any values give the same bits (every item is its own); these are the defaults.
inline constexpr int kGradsItems = 256;  // parameters a grads block owns, a thread each
RG_HD int blocks_for(int items, int per_block) { return (items + per_block - 1) / per_block; }
// Floats of a block's shared memory besides the parameters (rows: state and dstate, ld = width + 1
// apart, odd so that a column of consecutive rows spans the banks; scores, exponentials, dscores;
// the label, an int in a float's slot. predict: the state).
RG_HD int rows_scratch(int ld, int per) { return per * (2 * ld + 3 * kClasses + 1); }
RG_HD int predict_scratch(int ld, int per) { return per * ld; }

// The engine's order (model::kEngineSumLanes; engine/cuda/fused_any_shape.hpp checks they agree):
// every step function's default kL.
inline constexpr int kSumLanes = 1;

// Σ_{i<n} op(a[i·sa], b[i·sb]) in L lanes: term i into lane i mod L from +0, the lanes joined
// pairwise ((l0 + l1) + (l2 + l3) for 4: model::join_lanes' tree, written out here because this
// file travels alone); L = 1 is index order. On the device each 16 terms' operands are loaded before
// their adds, so the loads overlap and the chains of adds run on registers (the reason of
// engine/cuda/ordered_sum.hpp, here over strided arrays); every lane index is a constant.
template <int L, class Op>
RG_HD float dot(int n, const float* a, int sa, const float* b, int sb, Op op) {
    float acc[L] = {};
    int i = 0;
#if defined(__CUDA_ARCH__)
    for (; i + 16 <= n; i += 16) {
        float x[16], y[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) x[k] = a[(i + k) * sa], y[k] = b[(i + k) * sb];
#pragma unroll
        for (int k = 0; k < 16; ++k) acc[k % L] += op(x[k], y[k]);
    }
#endif
    for (; i < n; i += L) RG_DEVICE_UNROLL
    for (int l = 0; l < L; ++l)
        if (i + l < n) acc[l] += op(a[(i + l) * sa], b[(i + l) * sb]);
    RG_DEVICE_UNROLL
    for (int w = L / 2; w > 0; w /= 2) RG_DEVICE_UNROLL
    for (int l = 0; l < w; ++l) acc[l] = acc[2 * l] + acc[2 * l + 1];
    return acc[0];
}
RG_HD float relu_times(float x, float w) { return model::relu(x) * w; }
RG_HD float times(float x, float w) { return x * w; }
RG_HD float first(float x, float) { return x; }
// Score j of a row: Σ_i x[i]·H[j][i] + b[j] (the reference's head_forward); hw: head.weight, then head.bias.
template <int kL>
RG_HD float score(int width, const float* x, const float* hw, int j) {
    return dot<kL>(width, x, 1, hw + j * width, 1, times) + hw[kClasses * width + j];
}

// docs/spec.md §2: coordinate c of a row lifted from its 81 pixels, as the rows are gathered (the
// same operation as a separate pass over all rows, so the same bits, with no pass and no buffer).
RG_HD float lifted(const float* row_pixels, int c) {
    return c < kPixels ? model::lift_pixel<float>(row_pixels[c]) : 0.0f;
}

// out[o] = out[o] + sign·(α·Σ_i relu(in[i])·W[o][i]) on each row: the reference's couple.
template <int kL, class Exec>
RG_HD void couple(const Exec& ex, int h, const float* w, float* state, int rows, int in, int out, float sign,
                  float alpha) {
    ex.phase(rows * h, [=](int item) {
        const int r = item / h, o = item - r * h;
        float* x = state + r * (2 * h + 1);
        x[out + o] = x[out + o] + sign * (alpha * dot<kL>(h, x + in, 1, w + o * h, 1, relu_times));
    });
}

template <int kL, class Exec>
RG_HD void forward(const Exec& ex, int h, const float* w, int depth, float alpha, float* state, int rows) {
    for (int k = 0; k < depth; ++k) {
        couple<kL>(ex, h, w + 2 * k * h * h, state, rows, h, 0, 1.0f, alpha);
        couple<kL>(ex, h, w + (2 * k + 1) * h * h, state, rows, 0, h, 1.0f, alpha);
    }
}

// One branch's backward for a block's rows (the reference's branch_backward; its weight gradient
// is the grads kernel's): relu(x[c]) and α·g_out[c] to the branch's stack slots, and where with_dx,
// dx[c] += (Σ_o α·g_out[o]·W[o][c])·[x[c] > 0] into dstate's `in` half. Reads dstate's `out` half.
template <int kL, class Exec>
RG_HD void branch_rows(const Exec& ex, int h, const float* w, const float* state, float* dstate, int rows, int in,
                       int out, float alpha, bool with_dx, float* act, float* grad) {
    ex.phase(rows * h, [=](int item) {
        const int r = item / h, c = item - r * h, at = r * (2 * h + 1) + c;
        const float x = state[at + in];
        const float* g = dstate + at - c + out;
        act[item] = model::relu(x);
        grad[item] = alpha * g[c];
        if (with_dx)
            dstate[at + in] = dstate[at + in] + dot<kL>(h, g, 1, w + c, h, [=](float go, float wo) {
                                                    return (alpha * go) * wo;
                                                }) * model::relu_mask(x);
    });
}

// The rows kernel's block: cpu::Trainer<float>::step for its rows, up to the weight gradients.
// smem: the parameters where staged, then rows_scratch floats.
template <int kH, int kL = kSumLanes, class Exec>
RG_HD void step_rows(const Exec& ex, const Args& a, int block, float* smem) {
    const int h = kH > 0 ? kH : a.half, width = 2 * h, ld = width + 1, per = a.rows_per_block;
    const int r0 = block * per, rows = a.rows - r0 < per ? a.rows - r0 : per;
    float *const w = a.staged ? smem : a.param, *const state = smem + (a.staged ? a.params : 0);
    float *const dstate = state + per * ld, *const scores = dstate + per * ld, *const exps = scores + per * kClasses;
    float* const dsc = exps + per * kClasses;
    std::int32_t* const labels = reinterpret_cast<std::int32_t*>(dsc + per * kClasses);
    const Args g = a;
    // The rows and labels are the task's, the order the epoch's: no kernel of the epoch writes them,
    // so their loads go out before the wait for the previous kernel (a launch that may start early:
    // Hopper's programmatic launch); the parameters, which it updates, after.
    ex.issue(rows * width, [=](int item) {
        const int r = item / width, c = item - r * width, src = g.order[g.first + r0 + r];
        state[r * ld + c] = lifted(g.pixels + static_cast<std::int64_t>(src) * kPixels, c);
        if (c == 0) labels[r] = g.labels[src];
    });
    ex.wait_for_prior_grid();
    ex.phase(a.staged ? a.params : 0, [=](int i) { w[i] = g.param[i]; });
    forward<kL>(ex, h, w, a.depth, a.alpha, state, rows);
    const float* const hw = w + 2 * a.depth * h * h;  // head.weight, then head.bias
    ex.phase(rows * (kClasses + width), [=](int item) {
        if (item < rows * kClasses) {
            const int r = item / kClasses, j = item - r * kClasses;
            scores[item] = score<kL>(width, state + r * ld, hw, j);
        } else {
            const int k = item - rows * kClasses, r = k / width;
            g.final_state[r0 * width + k] = state[r * ld + k - r * width];
        }
    });
    // The mean cross-entropy gradient (model::softmax_xent_grad_row_lanes' steps in kL lanes), a thread a class.
    ex.phase(rows * kClasses, [=](int item) {
        exps[item] = model::softmax_exp(scores[item] - model::row_max(scores + item / kClasses * kClasses));
    });
    ex.phase(rows * kClasses, [=](int item) {
        const int r = item / kClasses;
        dsc[item] = model::xent_grad(exps[item], dot<kL>(kClasses, exps + r * kClasses, 1, exps, 0, first),
                                     item - r * kClasses == labels[r], model::inverse_rows<float>(g.rows));
        g.dscores[r0 * kClasses + item] = dsc[item];
    });
    // dstate = dscores·H, over the 10 classes (the reference's head_backward).
    ex.phase(rows * width, [=](int item) {
        const int r = item / width, i = item - r * width;
        dstate[r * ld + i] = dot<kL>(kClasses, dsc + r * kClasses, 1, hw + i, width, times);
    });
    // docs/spec.md §4, block k = D-1 .. 0: rebuild r, G's rows; rebuild l, F's rows. Block 0 skips
    // the rebuild of l and F's input gradient: they serve only the gradient of the core input.
    for (int k = a.depth - 1; k >= 0; --k) {
        if (k == 0) ex.launch_dependents();
        const float* wf = w + 2 * k * h * h;
        float* act = a.act + (2 * k * a.slot + r0) * h;
        float* grad = a.grad + (2 * k * a.slot + r0) * h;
        couple<kL>(ex, h, wf + h * h, state, rows, 0, h, -1.0f, a.alpha);
        branch_rows<kL>(ex, h, wf + h * h, state, dstate, rows, 0, h, a.alpha, true, act + a.slot * h,
                        grad + a.slot * h);
        if (k > 0) couple<kL>(ex, h, wf, state, rows, h, 0, -1.0f, a.alpha);
        branch_rows<kL>(ex, h, wf, state, dstate, rows, h, 0, a.alpha, k > 0, act, grad);
    }
}

// The grads kernel's block: parameters block·kGradsItems.., one item each: its gradient Σ over the
// batch's rows (in kL lanes) — branch (o, i): α·g[r][o]·relu(x[r][i]); head (j, i):
// dscores[r][j]·state[r][i]; bias j: dscores[r][j] — then SGD.
template <int kH, int kL = kSumLanes, class Exec>
RG_HD void step_grads(const Exec& ex, const Args& a, int block) {
    const int h = kH > 0 ? kH : a.half, p0 = block * kGradsItems;
    const Args g = a;
    ex.wait_for_prior_grid();
    // The next rows kernel may be scheduled now: it gathers its rows, which no kernel writes, while
    // this one sums, and waits for this whole grid before it reads a parameter (as fused::step_grads).
    ex.launch_dependents();
    ex.phase(a.params - p0 < kGradsItems ? a.params - p0 : kGradsItems, [=](int t) {
        const int p = p0 + t, width = 2 * h, branches = 2 * g.depth * h * h;
        float sum;
        if (p < branches) {
            const int b = p / (h * h), o = (p - b * h * h) / h, i = p - b * h * h - o * h;
            sum = dot<kL>(g.rows, g.grad + b * g.slot * h + o, h, g.act + b * g.slot * h + i, h, times);
        } else if (p < branches + kClasses * width) {
            const int j = (p - branches) / width, i = p - branches - j * width;
            sum = dot<kL>(g.rows, g.dscores + j, kClasses, g.final_state + i, width, times);
        } else {
            const int j = p - branches - kClasses * width;
            sum = dot<kL>(g.rows, g.dscores + j, kClasses, g.dscores, 0, first);
        }
        float param = g.param[p], v = g.velocity[p];
        model::sgd_update(param, v, sum, g.lr, g.momentum, g.weight_decay);
        if (g.grads != nullptr) g.grads[p] = sum;
        g.param[p] = param;
        g.velocity[p] = v;
    });
}

// The predict kernel's block: query rows block·per.. forward, their scores, their argmax.
template <int kH, int kL = kSumLanes, class Exec>
RG_HD void predict(const Exec& ex, const Args& a, int block, float* smem) {
    const int h = kH > 0 ? kH : a.half, width = 2 * h, ld = width + 1, per = a.rows_per_block;
    const int r0 = block * per, rows = a.rows - r0 < per ? a.rows - r0 : per;
    float* const w = a.staged ? smem : a.param;
    float* const state = smem + (a.staged ? a.params : 0);
    const Args g = a;
    ex.wait_for_prior_grid();
    ex.phase(rows * width + (a.staged ? a.params : 0), [=](int item) {
        const int r = item / width;
        if (r < rows)
            state[r * ld + item - r * width] =
                lifted(g.pixels + static_cast<std::int64_t>(r0 + r) * kPixels, item - r * width);
        else
            w[item - rows * width] = g.param[item - rows * width];
    });
    forward<kL>(ex, h, w, a.depth, a.alpha, state, rows);
    const float* const hw = w + 2 * a.depth * h * h;
    ex.phase(rows * kClasses, [=](int item) {
        const int r = item / kClasses, j = item - r * kClasses;
        g.scores[r0 * kClasses + item] = score<kL>(width, state + r * ld, hw, j);
    });
    ex.phase(rows, [=](int r) { g.predictions[r0 + r] = model::argmax_row(g.scores + (r0 + r) * kClasses); });
}

}  // namespace revgraph::cuda::fused_any
