#pragma once
// The reference engine's training loop (docs/spec.md §5) over Reference<T>: shuffled batches from the
// epoch permutation, the short last batch, the reconstructing backward, SGD with momentum.
#include <cstdint>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cpu/reference.hpp"

namespace revgraph::cpu {

template <typename T>
class Trainer {
public:
    // sum_lanes: the order of every sum (engine/model/sum_order.hpp); the engine's by default.
    explicit Trainer(const PreparedInputs& prepared, int sum_lanes = model::kEngineSumLanes);

    void reset();
    void normalize();
    void epoch(int e);
    void step(int e, int b);
    void predict();

    int batches_per_epoch() const;
    int batch_rows(int b) const;

    const Reference<T>& reference() const { return ref_; }
    const std::vector<T>& parameters() const { return params_; }
    const std::vector<T>& velocity() const { return velocity_; }
    const std::vector<T>& gradients() const { return grads_; }
    const std::vector<T>& scores() const { return scores_; }
    const std::vector<std::int64_t>& predictions() const { return predictions_; }
    // The one buffer that carries core activations from forward to backward: batch_size x width.
    std::size_t retained_core_bytes() const { return saved_state_.size() * sizeof(T); }

private:
    const TaskInputs* inputs_;
    TaskConfig config_;
    std::vector<float> initial_;
    rng::EpochOrders permutations_;  // drawn as each epoch needs its order
    Reference<T> ref_;

    std::vector<T> params_, grads_, velocity_;
    std::vector<T> train_rows_, test_rows_;  // lifted, N x width and Q x width
    std::vector<T> test_state_;              // Q x width core states of predict()
    // Per-step buffers, sized once for a full batch.
    std::vector<T> saved_state_, dstate_, scores_batch_, dscores_;
    std::vector<std::int64_t> labels_batch_;
    std::vector<T> scores_;
    std::vector<std::int64_t> predictions_;
};

extern template class Trainer<float>;
extern template class Trainer<double>;

}  // namespace revgraph::cpu
