#pragma once
// The fused path of the CUDA backend (`--backend cuda-fused`): one whole SGD step — gather, forward,
// loss, reconstructing backward, SGD — as ONE kernel on one thread block, and prediction as one
// kernel over tiles of query rows. A step of the rev88 task is ~3.7 M multiply-adds on 128 x 82
// floats: far too small to fill a GPU, so what costs is the ~25 dependent launches of the cuBLASLt
// path; here a step is one graph node and its working set lives in shared memory.
//
// Every operation is written once, here, as a sequence of *phases*. A phase is a set of independent
// work items (each writes only its own outputs and reads nothing another item of the phase writes);
// phases are separated by a barrier. The executor decides how a phase runs: the kernel
// (engine/cuda/kernels/fused.cuh) spreads the items over the block's threads and ends each phase with
// __syncthreads(); the CPU emulator (engine/cuda/emulator.cpp) runs the items in a loop. Every item
// sums in the reference's index order with no fused multiply-add (nvcc runs with --fmad=false), so
// the emulated kernel reproduces cpu::Trainer<float> bit for bit, and on a GPU only exp/log (CUDA's
// expf/logf against the C library's) can make the bits differ from the CPU's.
#include <cstddef>
#include <cstdint>

#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

using model::kBranchSize;
using model::kClasses;
using model::kFeatures;
using model::kHalf;

// Row stride of core states in shared memory: odd, so a warp reading one column of 32 consecutive
// rows touches 32 different banks. In global memory the plan's buffers keep rows of 82.
inline constexpr int kSharedLd = 83;
inline constexpr int kStepThreads = 1024;    // one block runs the whole step
inline constexpr int kPredictThreads = 256;  // one block per tile of query rows
inline constexpr int kPredictTile = 64;

// ---- arguments ---------------------------------------------------------------------------------

struct StepArgs {
    int depth = 0;
    float alpha = 0, lr = 0, momentum = 0, weight_decay = 0;
    int rows = 0;            // this batch
    std::int64_t first = 0;  // its slice of the epoch order
    const std::int32_t* order = nullptr;
    const float* train_rows = nullptr;  // N x 82, lifted
    const std::int32_t* train_labels = nullptr;
    float* params = nullptr;
    float* velocity = nullptr;
    float* grads = nullptr;
    int param_count = 0;
    float* weights = nullptr;  // the step's copy of params (shared memory); null: read params itself
    float* state = nullptr;    // rows x ld: the one core state, forward and reconstruction in place
    float* dstate = nullptr;   // rows x ld: its gradient
    int ld = kFeatures;
    float* scores = nullptr;         // rows x 10
    float* dscores = nullptr;        // rows x 10
    std::int32_t* labels = nullptr;  // rows
};

struct PredictArgs {
    int depth = 0;
    float alpha = 0;
    const float* params = nullptr;
    int param_count = 0;
    float* weights = nullptr;           // as in StepArgs
    const float* query_rows = nullptr;  // Q x 82, lifted
    std::int64_t first = 0;             // this tile: query rows first .. first+rows-1
    int rows = 0;
    float* state = nullptr;  // rows x ld
    int ld = kFeatures;
    float* scores = nullptr;              // Q x 10 (the tile writes its rows)
    std::int64_t* predictions = nullptr;  // Q
};

// ---- where the working set lives ---------------------------------------------------------------

// Shared memory when it fits the device's per-block limit, else the plan's global buffers (the same
// code either way: only pointers and the row stride change). Parameters are copied in first when
// they fit too; large batches keep the states in global memory (then L1/L2-resident).
struct Placement {
    bool weights_shared = false;
    bool state_shared = false;
    std::size_t bytes = 0;  // dynamic shared memory per block
    bool operator==(const Placement&) const = default;
};

inline std::size_t step_state_floats(int rows) {
    return 2 * static_cast<std::size_t>(rows) * kSharedLd + 2 * static_cast<std::size_t>(rows) * kClasses;
}
inline std::size_t predict_state_floats(int rows) { return static_cast<std::size_t>(rows) * kSharedLd; }

inline Placement place(std::size_t state_floats, int param_count, std::size_t shared_limit_bytes) {
    Placement p;
    const std::size_t state = state_floats * sizeof(float),
                      weights = static_cast<std::size_t>(param_count) * sizeof(float);
    if (state + weights <= shared_limit_bytes)
        p.weights_shared = p.state_shared = true, p.bytes = state + weights;
    else if (state <= shared_limit_bytes)
        p.state_shared = true, p.bytes = state;
    return p;
}

// Points the shared parts of the arguments into `smem` (laid out: weights, state, dstate, scores,
// dscores). The kernel and the emulator both call this, so both index the same layout.
RG_HD void carve(StepArgs& a, const Placement& p, float* smem) {
    if (p.weights_shared) {
        a.weights = smem;
        smem += a.param_count;
    }
    if (p.state_shared) {
        a.ld = kSharedLd;
        a.state = smem;
        a.dstate = smem + static_cast<std::size_t>(a.rows) * kSharedLd;
        a.scores = a.dstate + static_cast<std::size_t>(a.rows) * kSharedLd;
        a.dscores = a.scores + static_cast<std::size_t>(a.rows) * kClasses;
    }
}
RG_HD void carve(PredictArgs& a, const Placement& p, float* smem) {
    if (p.weights_shared) {
        a.weights = smem;
        smem += a.param_count;
    }
    if (p.state_shared) {
        a.ld = kSharedLd;
        a.state = smem;
    }
}

// ---- phases shared by training and prediction --------------------------------------------------
// Work items are numbered so that consecutive items (consecutive threads of a warp) take consecutive
// rows of one output: the weight row is then one broadcast read and the states are `ld` apart.

// out[o] = out[o] + sign*(alpha*branch) on each row, branch = Σ_i relu(in[i]) W[o][i] (the
// reference's couple); in/out are the column offsets of the two halves.
template <class Exec>
RG_HD void couple(Exec& ex, const float* w, float* state, int ld, int rows, int in, int out, float sign, float alpha) {
    ex.phase(rows * kHalf, [=](int item) {
        const int o = item / rows, r = item - o * rows;
        float* s = state + static_cast<std::size_t>(r) * ld;
        const float branch = model::branch_dot(w + o * kHalf, s + in);
        s[out + o] = s[out + o] + sign * (alpha * branch);
    });
}

// SPEC §3: left += α·linear(relu(right), W_2k); right += α·linear(relu(left), W_2k+1).
template <class Exec>
RG_HD void core_forward(Exec& ex, const float* weights, int depth, float alpha, float* state, int ld, int rows) {
    for (int k = 0; k < depth; ++k) {
        couple(ex, weights + (2 * k) * kBranchSize, state, ld, rows, kHalf, 0, 1.0f, alpha);
        couple(ex, weights + (2 * k + 1) * kBranchSize, state, ld, rows, 0, kHalf, 1.0f, alpha);
    }
}

// scores (rows x 10) = state Hᵀ + b, summed as the reference's head_forward.
template <class Exec>
RG_HD void head_scores(Exec& ex, const float* hw, const float* hb, const float* state, int ld, int rows,
                       float* scores) {
    ex.phase(rows * kClasses, [=](int item) {
        const int j = item / rows, r = item - j * rows;
        const float* x = state + static_cast<std::size_t>(r) * ld;
        float acc = 0.0f;
        for (int i = 0; i < kFeatures; ++i) acc += x[i] * hw[j * kFeatures + i];
        scores[static_cast<std::size_t>(r) * kClasses + j] = acc + hb[j];
    });
}

// One branch's gradients, the reference's branch_backward with g = α·g_out formed per use (the same
// rounding as forming it first): the input half `in` holds x (pre-relu), dstate's `out` half holds
// g_out. dW[o][i] = Σ_r g[r][o] relu(x[r][i]) is *written* (the step's gradients start at zero and
// each branch is added once, and 0 + acc == acc); with_dx adds dx[r][i] += (Σ_o g[r][o] W[o][i]) ⊙
// [x > 0] into dstate's `in` half. The two kinds of item touch different halves, so one phase.
template <class Exec>
RG_HD void branch_backward(Exec& ex, const float* w, float* dw, const float* state, float* dstate, int ld, int rows,
                           int in, int out, float alpha, bool with_dx) {
    constexpr int kWeightItems = kHalf * kHalf;
    ex.phase(kWeightItems + (with_dx ? rows * kHalf : 0), [=](int item) {
        if (item < kWeightItems) {
            const int o = item / kHalf, i = item - o * kHalf;
            float acc = 0.0f;
            for (int r = 0; r < rows; ++r) {
                const std::size_t row = static_cast<std::size_t>(r) * ld;
                acc += (alpha * dstate[row + out + o]) * model::relu(state[row + in + i]);
            }
            dw[item] = acc;
        } else {
            const int k = item - kWeightItems;
            const int i = k / rows, r = k - i * rows;
            const std::size_t row = static_cast<std::size_t>(r) * ld;
            const float* g = dstate + row + out;
            float acc = 0.0f;
            for (int o = 0; o < kHalf; ++o) acc += (alpha * g[o]) * w[o * kHalf + i];
            float* dx = dstate + row + in + i;
            *dx = *dx + acc * model::relu_mask(state[row + in + i]);
        }
    });
}

// ---- one SGD step --------------------------------------------------------------------------------

// cpu::Trainer<float>::step, phase by phase (16 phases at depth 2).
template <class Exec>
RG_HD void train_step(Exec& ex, const StepArgs& a) {
    const int rows = a.rows, ld = a.ld, depth = a.depth;
    const float alpha = a.alpha;
    float* const state = a.state;
    float* const dstate = a.dstate;
    const std::size_t head_w = static_cast<std::size_t>(2 * depth) * kBranchSize,
                      head_b = head_w + kClasses * kFeatures;

    // The batch's rows in epoch order with their labels, and the step's copy of the parameters.
    {
        const int gather_items = rows * kFeatures;
        const StepArgs s = a;
        ex.phase(gather_items + (a.weights != nullptr ? a.param_count : 0), [=](int item) {
            if (item < gather_items) {
                const int r = item / kFeatures, c = item - r * kFeatures;
                const std::int64_t src = s.order[s.first + r];
                s.state[static_cast<std::size_t>(r) * ld + c] = s.train_rows[src * kFeatures + c];
                if (c == 0) s.labels[r] = s.train_labels[src];
            } else {
                s.weights[item - gather_items] = s.params[item - gather_items];
            }
        });
    }
    const float* const w = a.weights != nullptr ? a.weights : a.params;

    // Forward; only `state` carries anything to the backward.
    core_forward(ex, w, depth, alpha, state, ld, rows);
    head_scores(ex, w + head_w, w + head_b, state, ld, rows, a.scores);
    {
        const float* scores = a.scores;
        float* dscores = a.dscores;
        const std::int32_t* labels = a.labels;
        ex.phase(rows, [=](int r) {
            (void)model::softmax_xent_grad_row(scores + static_cast<std::size_t>(r) * kClasses,
                                               static_cast<std::int64_t>(labels[r]), rows,
                                               dscores + static_cast<std::size_t>(r) * kClasses);
        });
    }

    // Head backward: weight and bias gradients (row-order sums) and dstate = dscores H.
    {
        constexpr int kWeightItems = kClasses * kFeatures, kBiasItems = kClasses;
        const float* hw = w + head_w;
        const float* ds = a.dscores;
        float* g = a.grads;
        ex.phase(kWeightItems + kBiasItems + rows * kFeatures, [=](int item) {
            if (item < kWeightItems) {
                const int j = item / kFeatures, i = item - j * kFeatures;
                float acc = 0.0f;
                for (int r = 0; r < rows; ++r)
                    acc += ds[static_cast<std::size_t>(r) * kClasses + j] * state[static_cast<std::size_t>(r) * ld + i];
                g[head_w + item] = acc;
            } else if (item < kWeightItems + kBiasItems) {
                const int j = item - kWeightItems;
                float acc = 0.0f;
                for (int r = 0; r < rows; ++r) acc += ds[static_cast<std::size_t>(r) * kClasses + j];
                g[head_b + j] = acc;
            } else {
                const int k = item - kWeightItems - kBiasItems;
                const int i = k / rows, r = k - i * rows;
                float acc = 0.0f;
                for (int j = 0; j < kClasses; ++j)
                    acc += ds[static_cast<std::size_t>(r) * kClasses + j] * hw[j * kFeatures + i];
                dstate[static_cast<std::size_t>(r) * ld + i] = acc;
            }
        });
    }

    // SPEC §4, block k = D-1 .. 0: rebuild r, G's gradients; rebuild l, F's gradients. Block 0 skips
    // the rebuild of l and F's input gradient: they serve only the gradient of the core input.
    for (int k = depth - 1; k >= 0; --k) {
        const std::size_t f = static_cast<std::size_t>(2 * k) * kBranchSize, g = f + kBranchSize;
        couple(ex, w + g, state, ld, rows, 0, kHalf, -1.0f, alpha);
        branch_backward(ex, w + g, a.grads + g, state, dstate, ld, rows, 0, kHalf, alpha, true);
        if (k > 0) couple(ex, w + f, state, ld, rows, kHalf, 0, -1.0f, alpha);
        branch_backward(ex, w + f, a.grads + f, state, dstate, ld, rows, kHalf, 0, alpha, k > 0);
    }

    // SGD with momentum and weight decay on every parameter (every gradient was written above).
    {
        float* p = a.params;
        float* v = a.velocity;
        const float* gr = a.grads;
        const float lr = a.lr, mom = a.momentum, wd = a.weight_decay;
        ex.phase(a.param_count, [=](int i) { model::sgd_update(p[i], v[i], gr[i], lr, mom, wd); });
    }
}

// ---- prediction of one tile of query rows --------------------------------------------------------

template <class Exec>
RG_HD void predict_tile(Exec& ex, const PredictArgs& a) {
    const int rows = a.rows, ld = a.ld;
    {
        const PredictArgs s = a;
        const int load_items = rows * kFeatures;
        ex.phase(load_items + (a.weights != nullptr ? a.param_count : 0), [=](int item) {
            if (item < load_items) {
                const int r = item / kFeatures, c = item - r * kFeatures;
                s.state[static_cast<std::size_t>(r) * ld + c] = s.query_rows[(s.first + r) * kFeatures + c];
            } else {
                s.weights[item - load_items] = s.params[item - load_items];
            }
        });
    }
    const float* const w = a.weights != nullptr ? a.weights : a.params;
    const std::size_t head_w = static_cast<std::size_t>(2 * a.depth) * kBranchSize,
                      head_b = head_w + kClasses * kFeatures;
    core_forward(ex, w, a.depth, a.alpha, a.state, ld, rows);
    float* scores = a.scores + a.first * kClasses;
    head_scores(ex, w + head_w, w + head_b, a.state, ld, rows, scores);
    std::int64_t* pred = a.predictions + a.first;
    ex.phase(rows, [=](int r) { pred[r] = model::argmax_row(scores + static_cast<std::size_t>(r) * kClasses); });
}

// How the emulator runs a phase: every item in order (any order gives the same bits, since the items
// of a phase are independent).
struct SequentialExec {
    template <class F>
    void phase(int count, F&& item) const {
        for (int i = 0; i < count; ++i) item(i);
    }
};

}  // namespace revgraph::cuda::fused
