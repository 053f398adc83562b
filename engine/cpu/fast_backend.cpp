#include "engine/cpu/fast_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/cpu/cpu_name.hpp"
#include "engine/error.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cpu {

using model::kClasses;

template <typename T>
void AlignedArray<T>::Free::operator()(T* p) const {
    std::free(p);
}

template <typename T>
void AlignedArray<T>::resize(std::size_t n) {
    constexpr std::size_t kAlign = 64;
    // Rounded up to whole cache lines; zero-filled so no stale bits ever reach a result.
    const std::size_t bytes = std::max<std::size_t>((n * sizeof(T) + kAlign - 1) / kAlign * kAlign, kAlign);
    T* p = static_cast<T*>(std::aligned_alloc(kAlign, bytes));
    if (p == nullptr) throw std::bad_alloc();
    std::memset(static_cast<void*>(p), 0, bytes);
    data_.reset(p);
    size_ = n;
}

template class AlignedArray<float>;
template class AlignedArray<std::int64_t>;

namespace {
// Prediction works through the queries in chunks of this many columns: the chunk's state,
// relu scratch and scores stay in the first-level cache.
constexpr int kPredictChunk = 256;
}  // namespace

FastBackend::FastBackend(fast::Isa isa) : isa_(isa), ops_(&fast::ops(isa)) {}

std::string FastBackend::device() const { return cpu_name() + " (1 thread, " + fast::isa_name(isa_) + ")"; }

void FastBackend::require_prepared() const {
    if (!prepared_) throw Error("cpu: used before prepare()");
}

void FastBackend::prepare(const PreparedInputs& prepared) {
    const TaskInputs* in = prepared.inputs;
    const TaskConfig& c = prepared.config;
    if (in == nullptr) throw Error("cpu: no inputs");
    c.validate();
    const model::Layout layout(c.depth, c.width);
    if (prepared.initial_parameters.size() != layout.total())
        throw Error("cpu: initial parameters have the wrong size");
    if (static_cast<int>(prepared.permutations.size()) < c.epochs) throw Error("cpu: too few epoch permutations");
    const std::int64_t n = in->train_count(), q = in->test_count();
    // Each order's length is checked as it is drawn (step/epoch): drawing them all here would
    // cost the time and memory the lazy orders save.
    if (static_cast<std::int64_t>(in->train_images.size()) != n * model::kPixels)
        throw Error("cpu: train images and labels differ in count");

    prepared_ = false;
    batch_size_ = c.batch_size;
    initial_ = prepared.initial_parameters;
    permutations_ = prepared.permutations;
    const int ld = static_cast<int>(std::min<std::int64_t>(c.batch_size, n));
    const std::size_t f = static_cast<std::size_t>(layout.width()), h = static_cast<std::size_t>(layout.half()),
                      k = kClasses;

    params_.resize(layout.total());
    grads_.resize(layout.total());
    velocity_.resize(layout.total());
    train_rows_.resize(static_cast<std::size_t>(n) * f);
    state_.resize(f * ld);
    dstate_.resize(f * ld);
    relu_l_.resize(h * ld);
    relu_r_.resize(h * ld);
    scores_.resize(k * ld);
    dscores_.resize(k * ld);
    labels_.resize(ld);
    const int pld = static_cast<int>(std::min<std::int64_t>(kPredictChunk, q));
    pstate_.resize(f * pld);
    prelu_l_.resize(h * pld);
    prelu_r_.resize(h * pld);
    pscores_.resize(k * pld);
    out_scores_.resize(static_cast<std::size_t>(q) * k);
    predictions_.resize(static_cast<std::size_t>(q));

    fast::Workspace& w = ws_;
    w = fast::Workspace{};
    w.depth = c.depth;
    w.width = layout.width();
    w.half = layout.half();
    w.alpha = static_cast<float>(c.alpha);
    w.learning_rate = static_cast<float>(c.learning_rate);
    w.momentum = static_cast<float>(c.momentum);
    w.weight_decay = static_cast<float>(c.weight_decay);
    w.parameter_count = layout.total();
    w.head_weight_offset = layout.head_weight_offset();
    w.head_bias_offset = layout.head_bias_offset();
    w.params = params_.data();
    w.grads = grads_.data();
    w.velocity = velocity_.data();
    w.train_count = n;
    w.test_count = q;
    w.train_pixels = in->train_images.data();
    w.train_labels = in->train_labels.data();
    w.test_pixels = in->test_images.data();
    w.train_rows = train_rows_.data();
    w.ld = ld;
    w.state = state_.data();
    w.dstate = dstate_.data();
    w.relu_l = relu_l_.data();
    w.relu_r = relu_r_.data();
    w.scores = scores_.data();
    w.dscores = dscores_.data();
    w.labels = labels_.data();
    w.pld = pld;
    w.pstate = pstate_.data();
    w.prelu_l = prelu_l_.data();
    w.prelu_r = prelu_r_.data();
    w.pscores = pscores_.data();
    w.out_scores = out_scores_.data();
    prepared_ = true;
}

void FastBackend::reset() {
    require_prepared();
    std::copy(initial_.begin(), initial_.end(), params_.data());
    std::fill_n(grads_.data(), grads_.size(), 0.0f);
    std::fill_n(velocity_.data(), velocity_.size(), 0.0f);
}

void FastBackend::normalize() {
    require_prepared();
    ops_->normalize(ws_);
}

int FastBackend::batches_per_epoch() const {
    return static_cast<int>((ws_.train_count + batch_size_ - 1) / batch_size_);
}

int FastBackend::batch_rows(int b) const {
    return static_cast<int>(
        std::min<std::int64_t>(batch_size_, ws_.train_count - static_cast<std::int64_t>(b) * batch_size_));
}

void FastBackend::step(int e, int b) {
    require_prepared();
    if (e < 0 || e >= static_cast<int>(permutations_.size()) || b < 0 || b >= batches_per_epoch())
        throw Error("cpu: step out of range");
    const std::int64_t* order = epoch_order(e) + static_cast<std::int64_t>(b) * batch_size_;
    ops_->step(ws_, order, batch_rows(b));
}

void FastBackend::epoch(int e) {
    require_prepared();
    if (e < 0 || e >= static_cast<int>(permutations_.size())) throw Error("cpu: epoch out of range");
    const std::int64_t* order = epoch_order(e);
    for (int b = 0, n = batches_per_epoch(); b < n; ++b)
        ops_->step(ws_, order + static_cast<std::int64_t>(b) * batch_size_, batch_rows(b));
}

const std::int64_t* FastBackend::epoch_order(int e) {
    const auto& order = permutations_[static_cast<std::size_t>(e)];
    if (static_cast<std::int64_t>(order.size()) != ws_.train_count)
        throw Error("cpu: a permutation has the wrong length");
    return order.data();
}

void FastBackend::predict() {
    require_prepared();
    ops_->predict(ws_);
    // The model's argmax (lowest index on ties), here and not in the kernel sets: a model:: template
    // instantiated under their target pragmas could come out as an AVX-512 copy that the linker
    // may pick for every caller, before the processor check.
    const std::int64_t q = ws_.test_count;
    for (std::int64_t r = 0; r < q; ++r)
        predictions_.data()[r] = model::argmax_row(out_scores_.data() + r * model::kClasses);
}

TaskState FastBackend::read_state() {
    require_prepared();
    auto vec = [](const auto& a) { return std::vector(a.data(), a.data() + a.size()); };
    return TaskState{vec(params_), vec(velocity_), vec(grads_), vec(out_scores_), vec(predictions_)};
}

}  // namespace revgraph::cpu
