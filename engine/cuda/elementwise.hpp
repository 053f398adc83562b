#pragma once
// The body of every elementwise CUDA kernel, one element (or one row) at a time, written once: the
// kernels in engine/cuda/kernels/ call these per thread, the CPU emulator calls them in a loop. The
// arithmetic itself is model/math.hpp's; what lives here is only the index math of each operation
// (rows of 82 with halves at 0 and 41, scratch rows of 41, scores rows of 10).
#include <cstdint>

#include "engine/model/math.hpp"

namespace revgraph::cuda::elem {

using model::kClasses;
using model::kFeatures;
using model::kHalf;
using model::kPixels;

// Element i of a rows x 82 lifted array: lifted pixel or the appended zero.
RG_HD void lift(const float* raw, float* rows, std::int64_t i) {
    const std::int64_t r = i / kFeatures;
    const int c = static_cast<int>(i - r * kFeatures);
    rows[i] = c < kPixels ? model::lift_pixel<float>(raw[r * kPixels + c]) : 0.0f;
}

// Element i of a rows x 82 batch: the source row is order[first + r], or r itself without an order.
// The element's relu goes to act_right when it is in the right half; column 0 carries the label.
RG_HD void gather(const std::int32_t* order, std::int64_t first, const float* src_rows,
                  const std::int32_t* src_labels, float* state, float* act_right, std::int32_t* labels, int i) {
    const int r = i / kFeatures;
    const int c = i - r * kFeatures;
    const std::int64_t src = order != nullptr ? static_cast<std::int64_t>(order[first + r]) : r;
    const float v = src_rows[src * kFeatures + c];
    state[i] = v;
    if (c >= kHalf) act_right[r * kHalf + (c - kHalf)] = model::relu(v);
    if (labels != nullptr && c == 0) labels[r] = src_labels[src];
}

// Element i of rows x 41: one coupling update of a half (half points at column 0 of that half in a
// rows x 82 state), in the reference's rounding h + sign*(alpha*branch), and relu of the result.
// Backward extras on the half's gradient (dhalf, same layout as half): with dtmp non-null first the
// mask-multiply dhalf += dtmp ⊙ [h > 0] on h before the update; with grad_copy non-null the
// finished gradient also goes to grad_copy[i] (rows x 41).
RG_HD void couple(float* half, const float* branch, float* act, float sign, float alpha, float* dhalf,
                  const float* dtmp, float* grad_copy, int i) {
    const int r = i / kHalf;
    const int c = i - r * kHalf;
    const int s = r * kFeatures + c;
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

// Element i of rows x 41: dhalf += dtmp ⊙ [half > 0], and the result to grad_copy[i] if non-null.
RG_HD void mask(float* dhalf, const float* dtmp, const float* half, float* grad_copy, int i) {
    const int r = i / kHalf;
    const int c = i - r * kHalf;
    const int s = r * kFeatures + c;
    const float g = dhalf[s] + dtmp[i] * model::relu_mask(half[s]);
    dhalf[s] = g;
    if (grad_copy != nullptr) grad_copy[i] = g;
}

// Row r of the head: scores += bias (the reference's acc + b[j]), then dscores of that row (mean
// cross-entropy over `rows`).
RG_HD float loss_row(float* scores, const float* bias, const std::int32_t* labels, int rows, float* dscores, int r) {
    float* s = scores + r * kClasses;
    for (int j = 0; j < kClasses; ++j) s[j] = s[j] + bias[j];
    return model::softmax_xent_grad_row(s, static_cast<std::int64_t>(labels[r]), rows, dscores + r * kClasses);
}

// Element i of rows x 41: relu of the left half of a rows x 82 state.
RG_HD void relu_left(const float* state, float* act, int i) {
    const int r = i / kHalf;
    const int c = i - r * kHalf;
    act[i] = model::relu(state[r * kFeatures + c]);
}

RG_HD void sgd(float* params, float* velocity, const float* grads, float lr, float momentum, float weight_decay,
               std::int64_t i) {
    model::sgd_update(params[i], velocity[i], grads[i], lr, momentum, weight_decay);
}

// Row r of the query scores: scores += bias, then the prediction.
RG_HD void argmax(float* scores, const float* bias, std::int64_t* predictions, std::int64_t r) {
    float* s = scores + r * kClasses;
    for (int j = 0; j < kClasses; ++j) s[j] = s[j] + bias[j];
    predictions[r] = model::argmax_row(s);
}

}  // namespace revgraph::cuda::elem
