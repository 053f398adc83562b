#include "engine/cpu/trainer.hpp"

#include <algorithm>

#include "engine/error.hpp"
#include "engine/model/math.hpp"
#include "engine/model/sum_order.hpp"

namespace revgraph::cpu {

using model::kClasses;
using model::kPixels;

template <typename T>
Trainer<T>::Trainer(const PreparedInputs& prepared, int sum_lanes)
    : inputs_(prepared.inputs),
      config_(prepared.config),
      initial_(prepared.initial_parameters),
      permutations_(prepared.permutations),
      ref_(prepared.config.depth, static_cast<T>(prepared.config.alpha), prepared.config.width, sum_lanes) {
    if (inputs_ == nullptr) throw Error("trainer: no inputs");
    if (initial_.size() != ref_.layout().total()) throw Error("trainer: initial parameters have the wrong size");
    if (static_cast<int>(permutations_.size()) < config_.epochs) throw Error("trainer: too few epoch permutations");
    const std::size_t batch =
        static_cast<std::size_t>(std::min<std::int64_t>(config_.batch_size, inputs_->train_count()));
    const std::size_t width = static_cast<std::size_t>(config_.width);
    params_.resize(initial_.size());
    grads_.resize(initial_.size());
    velocity_.resize(initial_.size());
    train_rows_.resize(static_cast<std::size_t>(inputs_->train_count()) * width);
    test_rows_.resize(static_cast<std::size_t>(inputs_->test_count()) * width);
    test_state_.resize(test_rows_.size());
    saved_state_.resize(batch * width);
    dstate_.resize(batch * width);
    scores_batch_.resize(batch * kClasses);
    dscores_.resize(batch * kClasses);
    labels_batch_.resize(batch);
    scores_.resize(static_cast<std::size_t>(inputs_->test_count()) * kClasses);
    predictions_.resize(static_cast<std::size_t>(inputs_->test_count()));
}

template <typename T>
int Trainer<T>::batches_per_epoch() const {
    const std::int64_t n = inputs_->train_count();
    return static_cast<int>((n + config_.batch_size - 1) / config_.batch_size);
}

template <typename T>
int Trainer<T>::batch_rows(int b) const {
    const std::int64_t n = inputs_->train_count();
    return static_cast<int>(
        std::min<std::int64_t>(config_.batch_size, n - static_cast<std::int64_t>(b) * config_.batch_size));
}

template <typename T>
void Trainer<T>::reset() {
    std::transform(initial_.begin(), initial_.end(), params_.begin(), [](float v) { return static_cast<T>(v); });
    std::fill(grads_.begin(), grads_.end(), T(0));
    std::fill(velocity_.begin(), velocity_.end(), T(0));
}

template <typename T>
void Trainer<T>::normalize() {
    const int width = config_.width;
    for (std::int64_t i = 0; i < inputs_->train_count(); ++i)
        model::lift_row(&inputs_->train_images[i * kPixels], &train_rows_[i * width], width);
    for (std::int64_t i = 0; i < inputs_->test_count(); ++i)
        model::lift_row(&inputs_->test_images[i * kPixels], &test_rows_[i * width], width);
}

template <typename T>
void Trainer<T>::step(int e, int b) {
    const int rows = batch_rows(b);
    const auto& order = permutations_.at(static_cast<std::size_t>(e));
    const std::size_t first = static_cast<std::size_t>(b) * config_.batch_size;
    const int width = config_.width;
    for (int r = 0; r < rows; ++r) {
        const std::int64_t src = order[first + r];
        std::copy_n(&train_rows_[src * width], width, &saved_state_[r * width]);
        labels_batch_[r] = inputs_->train_labels[src];
    }
    // Forward: only saved_state_ survives to the backward.
    ref_.core_forward(params_.data(), saved_state_.data(), rows);
    ref_.head_forward(params_.data(), saved_state_.data(), rows, scores_batch_.data());
    // The loss's gradient (the loss itself, which the function returns, steers nothing).
    for (int r = 0; r < rows; ++r)
        model::softmax_xent_grad_row_lanes(&scores_batch_[r * kClasses], labels_batch_[r], rows,
                                           &dscores_[r * kClasses], ref_.sum_lanes());
    // Backward: gradients from zero each step.
    std::fill(grads_.begin(), grads_.end(), T(0));
    ref_.head_backward(params_.data(), saved_state_.data(), dscores_.data(), rows, grads_.data(), dstate_.data());
    ref_.core_backward_reconstruct(params_.data(), saved_state_.data(), dstate_.data(), rows, grads_.data());
    const T lr = static_cast<T>(config_.learning_rate), mom = static_cast<T>(config_.momentum),
            wd = static_cast<T>(config_.weight_decay);
    for (std::size_t i = 0; i < params_.size(); ++i)
        model::sgd_update(params_[i], velocity_[i], grads_[i], lr, mom, wd);
}

template <typename T>
void Trainer<T>::epoch(int e) {
    for (int b = 0; b < batches_per_epoch(); ++b) step(e, b);
}

template <typename T>
void Trainer<T>::predict() {
    const std::int64_t q = inputs_->test_count();
    std::copy(test_rows_.begin(), test_rows_.end(), test_state_.begin());
    ref_.core_forward(params_.data(), test_state_.data(), static_cast<int>(q));
    ref_.head_forward(params_.data(), test_state_.data(), static_cast<int>(q), scores_.data());
    for (std::int64_t i = 0; i < q; ++i) predictions_[i] = model::argmax_row(&scores_[i * kClasses]);
}

template class Trainer<float>;
template class Trainer<double>;

}  // namespace revgraph::cpu
