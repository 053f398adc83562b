#include "engine/data/draws.hpp"

#include <cstddef>
#include <cstring>
#include <string>

#include "engine/classes.hpp"
#include "engine/data/embedded.hpp"
#include "engine/data/resize.hpp"
#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"

namespace revgraph::data {
namespace {

constexpr std::size_t kIn = 28 * 28;
constexpr std::size_t kOut = 9 * 9;

void check_sizes(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels) {
    const std::size_t n = labels.size();
    if (images28.size() != n * kIn)
        throw Error("draw: " + std::to_string(images28.size()) + " image bytes for " + std::to_string(n) +
                    " labels (expected 784 bytes per image)");
}

void check_counts(std::size_t n, std::int64_t train_count, std::int64_t test_count) {
    if (train_count < 1 || test_count < 1 ||
        static_cast<std::size_t>(train_count) + static_cast<std::size_t>(test_count) > n)
        throw Error("draw: cannot take " + std::to_string(train_count) + " train and " + std::to_string(test_count) +
                    " test images from " + std::to_string(n));
}

}  // namespace

DrawSource::DrawSource(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels)
    : images28_(images28), labels_(labels) {
    check_sizes(images28, labels);
    check_classes(labels, "draw");
    // Left uninitialised: a row's memory is first touched when it is resized, so rows no draw uses
    // cost neither time nor resident memory.
    rows9_.reset(new float[labels.size() * kOut]);
    state_ = std::make_unique<std::atomic<std::uint8_t>[]>(labels.size());
}

const float* DrawSource::row9(std::size_t image) const {
    float* row = rows9_.get() + image * kOut;
    std::atomic<std::uint8_t>& state = state_[image];
    std::uint8_t seen = state.load(std::memory_order_acquire);
    if (seen == 2) return row;
    if (seen == 0 && state.compare_exchange_strong(seen, 1, std::memory_order_acquire)) {
        resize_28_to_9(images28_.data() + image * kIn, row);
        state.store(2, std::memory_order_release);
        state.notify_all();
        return row;
    }
    // Another thread is resizing it: wait for its result (the same bits either way).
    for (seen = state.load(std::memory_order_acquire); seen != 2; seen = state.load(std::memory_order_acquire))
        state.wait(seen, std::memory_order_acquire);
    return row;
}

TaskData DrawSource::split_draw(std::uint64_t seed, std::int64_t train_count, std::int64_t test_count) const {
    const std::size_t n = labels_.size();
    check_counts(n, train_count, test_count);
    rng::Pcg64 generator(seed);
    const std::vector<std::int64_t> order = rng::permutation(generator, static_cast<std::int64_t>(n));
    const std::span<const std::int64_t> all(order);
    const auto tr = static_cast<std::size_t>(train_count), te = static_cast<std::size_t>(test_count);
    const auto take = [&](std::span<const std::int64_t> indices, std::vector<float>& images9,
                          std::vector<std::int64_t>& out_labels, std::vector<std::int64_t>& out_indices) {
        images9.resize(indices.size() * kOut);
        out_labels.resize(indices.size());
        out_indices.assign(indices.begin(), indices.end());
        for (std::size_t r = 0; r < indices.size(); ++r) {
            const auto src = static_cast<std::size_t>(indices[r]);
            std::memcpy(images9.data() + r * kOut, row9(src), kOut * sizeof(float));
            out_labels[r] = labels_[src];
        }
    };
    TaskData d;
    take(all.subspan(0, tr), d.train_images, d.train_labels, d.train_indices);
    take(all.subspan(tr, te), d.test_images, d.test_labels, d.test_indices);
    return d;
}

TaskData DrawSource::mnist_medium_draw(std::uint64_t seed) const { return split_draw(seed, kMediumTrain, kMediumTest); }

TaskData split_draw(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels, std::uint64_t seed,
                    std::int64_t train_count, std::int64_t test_count) {
    // The checks in the order they always ran: sizes, counts, labels.
    check_sizes(images28, labels);
    check_counts(labels.size(), train_count, test_count);
    return DrawSource(images28, labels).split_draw(seed, train_count, test_count);
}

TaskData mnist_medium_draw(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels,
                           std::uint64_t seed) {
    return split_draw(images28, labels, seed, kMediumTrain, kMediumTest);
}

TaskData embedded_default_task(std::uint64_t seed) {
    const Digits28& digits = embedded_digits();
    return split_draw(digits.images, digits.labels, seed, kEmbeddedTrain, kEmbeddedTest);
}

}  // namespace revgraph::data
