#include "engine/cpu/reference.hpp"

#include <algorithm>

#include "engine/error.hpp"
#include "engine/model/math.hpp"
#include "engine/model/sum_order.hpp"

namespace revgraph::cpu {

using model::kClasses;

template <typename T>
Reference<T>::Reference(int depth, T alpha, int width, int sum_lanes)
    : layout_(depth, width), alpha_(alpha), sum_lanes_(sum_lanes) {
    if (!model::valid_sum_lanes(sum_lanes)) throw Error("reference: sum lanes must be 1, 2, 4 or 8");
}

template <typename T>
void Reference<T>::couple(const T* w, const T* in, T* out, int rows, T sign) const {
    const int width = layout_.width(), half = layout_.half();
    for (int r = 0; r < rows; ++r) {
        const T* x = in + static_cast<std::size_t>(r) * width;
        T* y = out + static_cast<std::size_t>(r) * width;
        for (int o = 0; o < half; ++o) {
            const T* w_row = w + o * half;
            const T branch =
                model::lane_sum_any<T>(half, sum_lanes_, [&](int i) { return model::relu(x[i]) * w_row[i]; });
            y[o] = y[o] + sign * (alpha_ * branch);
        }
    }
}

template <typename T>
void Reference<T>::core_forward(const T* params, T* state, int rows) const {
    const int half = layout_.half();
    for (int k = 0; k < layout_.depth(); ++k) {
        // left += α·linear(relu(right), W_2k); right += α·linear(relu(left), W_2k+1)
        couple(params + layout_.branch_offset(2 * k), state + half, state, rows, T(1));
        couple(params + layout_.branch_offset(2 * k + 1), state, state + half, rows, T(1));
    }
}

template <typename T>
void Reference<T>::core_inverse(const T* params, T* state, int rows) const {
    const int half = layout_.half();
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        couple(params + layout_.branch_offset(2 * k + 1), state, state + half, rows, T(-1));
        couple(params + layout_.branch_offset(2 * k), state + half, state, rows, T(-1));
    }
}

template <typename T>
void Reference<T>::head_forward(const T* params, const T* state, int rows, T* scores) const {
    const int width = layout_.width();
    const T* w = params + layout_.head_weight_offset();
    const T* b = params + layout_.head_bias_offset();
    for (int r = 0; r < rows; ++r) {
        const T* x = state + static_cast<std::size_t>(r) * width;
        for (int j = 0; j < kClasses; ++j) {
            const T* w_row = w + j * width;
            scores[r * kClasses + j] =
                model::lane_sum_any<T>(width, sum_lanes_, [&](int i) { return x[i] * w_row[i]; }) + b[j];
        }
    }
}

// The backward products below keep one set of lanes (engine/model/sum_order.hpp) per output and add
// the terms of every sum in ascending index order into their lanes, as a plain triple loop with the
// sum innermost (model::lane_sum) would; the loops are only nested so that the outputs' sums advance
// together along a contiguous row, which the compiler vectorises across outputs (never within one
// sum: the bits are the rule's for the lane count).
template <typename T>
void Reference<T>::head_backward(const T* params, const T* state, const T* dscores, int rows, T* grads,
                                 T* dstate) const {
    const int width = layout_.width();
    const T* w = params + layout_.head_weight_offset();
    T* dw = grads + layout_.head_weight_offset();
    T* db = grads + layout_.head_bias_offset();
    model::LaneRows<T> acc(width, sum_lanes_);
    for (int j = 0; j < kClasses; ++j) {
        acc.clear();  // dW[j][i] = sum over r of dscores[r][j] * state[r][i]
        for (int r = 0; r < rows; ++r) {
            const T d = dscores[r * kClasses + j];
            T* lane = acc.lane_of(r);
            for (int i = 0; i < width; ++i) lane[i] += d * state[r * width + i];
        }
        const T* sums = acc.sums();
        for (int i = 0; i < width; ++i) dw[j * width + i] += sums[i];
        db[j] += model::lane_sum_any<T>(rows, sum_lanes_, [&](int r) { return dscores[r * kClasses + j]; });
    }
    for (int r = 0; r < rows; ++r) {
        acc.clear();  // dstate[r][i] = sum over j of dscores[r][j] * W[j][i]
        for (int j = 0; j < kClasses; ++j) {
            const T d = dscores[r * kClasses + j];
            T* lane = acc.lane_of(j);
            for (int i = 0; i < width; ++i) lane[i] += d * w[j * width + i];
        }
        const T* sums = acc.sums();
        std::copy(sums, sums + width, dstate + static_cast<std::size_t>(r) * width);
    }
}

template <typename T>
void Reference<T>::branch_backward(const T* w, const T* x, const T* g_out, int rows, T* dw, T* dx) const {
    const int width = layout_.width(), half = layout_.half();
    // g = α·g_out, as autograd forms it (the scale is applied to the branch output); a = relu(x).
    std::vector<T> g(static_cast<std::size_t>(rows) * half), a(g.size());
    model::LaneRows<T> acc(half, sum_lanes_);
    for (int r = 0; r < rows; ++r)
        for (int o = 0; o < half; ++o) {
            g[r * half + o] = alpha_ * g_out[r * width + o];
            a[r * half + o] = model::relu(x[r * width + o]);
        }
    for (int o = 0; o < half; ++o) {
        acc.clear();  // dW[o][i] += sum over r of g[r][o] * a[r][i]
        for (int r = 0; r < rows; ++r) {
            const T go = g[r * half + o];
            T* lane = acc.lane_of(r);
            for (int i = 0; i < half; ++i) lane[i] += go * a[r * half + i];
        }
        const T* sums = acc.sums();
        for (int i = 0; i < half; ++i) dw[o * half + i] += sums[i];
    }
    for (int r = 0; r < rows; ++r) {
        acc.clear();  // dx[r][i] += (sum over o of g[r][o] * W[o][i]) [x > 0]
        for (int o = 0; o < half; ++o) {
            const T go = g[r * half + o];
            T* lane = acc.lane_of(o);
            for (int i = 0; i < half; ++i) lane[i] += go * w[o * half + i];
        }
        const T* sums = acc.sums();
        for (int i = 0; i < half; ++i) dx[r * width + i] += sums[i] * model::relu_mask(x[r * width + i]);
    }
}

template <typename T>
void Reference<T>::core_backward_reconstruct(const T* params, T* state, T* dstate, int rows, T* grads) const {
    const int half = layout_.half();
    // l = the first half of state, r = the second; dl, dr likewise in dstate.
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        const std::size_t f = layout_.branch_offset(2 * k), g = layout_.branch_offset(2 * k + 1);
        // G branch: rebuild r, then its gradients read l (G's input) and dr.
        couple(params + g, state, state + half, rows, T(-1));
        branch_backward(params + g, state, dstate + half, rows, grads + g, dstate);
        // F branch: rebuild l, then its gradients read r (F's input, just rebuilt) and dl.
        couple(params + f, state + half, state, rows, T(-1));
        branch_backward(params + f, state + half, dstate, rows, grads + f, dstate + half);
    }
}

template <typename T>
std::vector<std::vector<T>> Reference<T>::core_forward_storing(const T* params, T* state, int rows) const {
    const int half = layout_.half();
    const std::size_t n = static_cast<std::size_t>(rows) * layout_.width();
    std::vector<std::vector<T>> states;
    for (int k = 0; k < layout_.depth(); ++k) {
        states.emplace_back(state, state + n);
        couple(params + layout_.branch_offset(2 * k), state + half, state, rows, T(1));
        states.emplace_back(state, state + n);
        couple(params + layout_.branch_offset(2 * k + 1), state, state + half, rows, T(1));
    }
    return states;
}

template <typename T>
void Reference<T>::core_backward_stored(const T* params, const std::vector<std::vector<T>>& states, T* dstate, int rows,
                                        T* grads) const {
    const int half = layout_.half();
    if (states.size() != static_cast<std::size_t>(2 * layout_.depth()))
        throw Error("reference: core_backward_stored given the states of another depth");
    for (int k = layout_.depth() - 1; k >= 0; --k) {
        const std::size_t f = layout_.branch_offset(2 * k), g = layout_.branch_offset(2 * k + 1);
        branch_backward(params + g, states[2 * k + 1].data(), dstate + half, rows, grads + g, dstate);
        branch_backward(params + f, states[2 * k].data() + half, dstate, rows, grads + f, dstate + half);
    }
}

namespace {
template <typename T>
std::size_t stored_bytes(const std::vector<std::vector<T>>& states) {
    std::size_t bytes = 0;
    for (const auto& stored : states) bytes += stored.size() * sizeof(T);
    return bytes;
}
}  // namespace

template <typename T>
std::size_t Reference<T>::core_backward_storing(const T* params, const T* input, T* dstate, int rows, T* grads) const {
    std::vector<T> s(input, input + static_cast<std::size_t>(rows) * layout_.width());
    const auto states = core_forward_storing(params, s.data(), rows);
    core_backward_stored(params, states, dstate, rows, grads);
    return stored_bytes(states);
}

template <typename T>
BatchGradients<T> batch_gradients(const Reference<T>& ref, const std::vector<T>& params, const std::vector<T>& input,
                                  const std::vector<std::int64_t>& labels, BackwardMode mode) {
    const int rows = static_cast<int>(labels.size());
    if (rows < 1 || input.size() != static_cast<std::size_t>(rows) * ref.layout().width() ||
        params.size() != ref.layout().total())
        throw Error("reference: batch_gradients given mismatched sizes");
    BatchGradients<T> out;
    out.final_state = input;
    // Each design runs its own forward pass (the reconstructing one keeps nothing), so that a check
    // of their forward outputs compares two passes.
    std::vector<std::vector<T>> states;
    if (mode == BackwardMode::reconstruct)
        ref.core_forward(params.data(), out.final_state.data(), rows);
    else
        states = ref.core_forward_storing(params.data(), out.final_state.data(), rows);
    out.scores.assign(static_cast<std::size_t>(rows) * kClasses, T(0));
    ref.head_forward(params.data(), out.final_state.data(), rows, out.scores.data());

    std::vector<T> dscores(out.scores.size());
    for (int r = 0; r < rows; ++r)
        out.loss += model::softmax_xent_grad_row_lanes(&out.scores[r * kClasses], labels[r], rows,
                                                       &dscores[r * kClasses], ref.sum_lanes());
    out.loss /= static_cast<T>(rows);

    out.params.assign(params.size(), T(0));
    out.input.assign(input.size(), T(0));
    ref.head_backward(params.data(), out.final_state.data(), dscores.data(), rows, out.params.data(), out.input.data());
    if (mode == BackwardMode::reconstruct) {
        // The backward is handed exactly one buffer from the forward pass: the final state.
        std::vector<T> saved = out.final_state;
        out.saved_bytes = saved.size() * sizeof(T);
        ref.core_backward_reconstruct(params.data(), saved.data(), out.input.data(), rows, out.params.data());
        out.rebuilt_input = std::move(saved);
    } else {
        out.saved_bytes = stored_bytes(states);
        ref.core_backward_stored(params.data(), states, out.input.data(), rows, out.params.data());
    }
    return out;
}

template class Reference<float>;
template class Reference<double>;
template BatchGradients<float> batch_gradients(const Reference<float>&, const std::vector<float>&,
                                               const std::vector<float>&, const std::vector<std::int64_t>&,
                                               BackwardMode);
template BatchGradients<double> batch_gradients(const Reference<double>&, const std::vector<double>&,
                                                const std::vector<double>&, const std::vector<std::int64_t>&,
                                                BackwardMode);

}  // namespace revgraph::cpu
