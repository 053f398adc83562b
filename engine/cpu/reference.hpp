#pragma once
// The reference engine: docs/spec.md §3-§5 written as plainly as possible, in float or double. It is the
// executable specification every other backend is checked against, so it favours clarity over
// speed: row-major matrices, plain loops, every sum that trains the model in the order of
// engine/model/sum_order.hpp (the reported loss, a mean over rows, in index order), no fused
// multiply-adds.
#include <cstdint>
#include <vector>

#include "engine/model/layout.hpp"
#include "engine/model/sum_order.hpp"

namespace revgraph::cpu {

template <typename T>
class Reference {
public:
    // width: the lifted coordinates (82 for rev88), left = the first width/2, right = the rest. No
    // default: a caller that forgot it would compute at 82 without a word. sum_lanes: the order of
    // every sum (engine/model/sum_order.hpp: 1, 2, 4 or 8 lanes); the engine's by default.
    Reference(int depth, T alpha, int width, int sum_lanes = model::kEngineSumLanes);
    int sum_lanes() const { return sum_lanes_; }

    const model::Layout& layout() const { return layout_; }
    T alpha() const { return alpha_; }

    // Core forward, in place on `rows` x width states (left = the first width/2 coordinates).
    void core_forward(const T* params, T* state, int rows) const;
    // The exact-up-to-rounding inverse of core_forward, in place.
    void core_inverse(const T* params, T* state, int rows) const;

    // scores (rows x 10) = state Wᵀ + b.
    void head_forward(const T* params, const T* state, int rows, T* scores) const;
    // Adds head.weight/head.bias gradients into `grads`; writes dstate = dscores W.
    void head_backward(const T* params, const T* state, const T* dscores, int rows, T* grads, T* dstate) const;

    // docs/spec.md §4, the point of the engine: `state` holds the final core state, the only thing kept
    // from the forward pass; it is rebuilt in place back to the core input while the branch
    // gradients are added into `grads`. `dstate` enters as the gradient of the final state and
    // leaves as the gradient of the core input.
    void core_backward_reconstruct(const T* params, T* state, T* dstate, int rows, T* grads) const;

    // The ordinary design, in two halves. Its forward runs the core on `state` in place (input in,
    // output out) in a pass of its own, keeping every branch's input: states[2k] block k's F input,
    // states[2k+1] its G input. Its backward walks back through those stored states, independent
    // of the inverse; tests compare the two designs.
    std::vector<std::vector<T>> core_forward_storing(const T* params, T* state, int rows) const;
    void core_backward_stored(const T* params, const std::vector<std::vector<T>>& states, T* dstate, int rows,
                              T* grads) const;
    // Both halves from the core input; returns the bytes of the states stored.
    std::size_t core_backward_storing(const T* params, const T* input, T* dstate, int rows, T* grads) const;

private:
    model::Layout layout_;
    T alpha_;
    int sum_lanes_;

    // out[r][o] += sign * alpha * (relu(in[r]) W_branchᵀ)[o]: one coupling half-step.
    void couple(const T* w, const T* in, T* out, int rows, T sign) const;
    // One branch's backward given its input x (pre-relu) and the gradient g_out of its output
    // half: dW += (alpha g_out)ᵀ relu(x); dx += ((alpha g_out) W) ⊙ [x > 0].
    void branch_backward(const T* w, const T* x, const T* g_out, int rows, T* dw, T* dx) const;
};

// Loss and gradients of one batch, for the numerical validation of docs/spec.md §8.
template <typename T>
struct BatchGradients {
    T loss = 0;                   // mean cross-entropy
    std::vector<T> scores;        // rows x 10
    std::vector<T> params;        // gradient of every parameter, flat in layout order
    std::vector<T> input;         // gradient of the rows x width core input
    std::vector<T> final_state;   // rows x width core output
    std::size_t saved_bytes = 0;  // core activations kept for the backward, from the real buffers
    // reconstruct only: the one kept buffer after the backward, which rebuilt it in place from the
    // final state back to the core input (so a check can see the inverse really ran).
    std::vector<T> rebuilt_input;
};

enum class BackwardMode { reconstruct, storing };

template <typename T>
BatchGradients<T> batch_gradients(const Reference<T>& ref, const std::vector<T>& params, const std::vector<T>& input,
                                  const std::vector<std::int64_t>& labels, BackwardMode mode);

extern template class Reference<float>;
extern template class Reference<double>;

}  // namespace revgraph::cpu
