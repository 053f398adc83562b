#include "engine/data/draws.hpp"

#include <cstddef>
#include <string>

#include "engine/data/embedded.hpp"
#include "engine/data/resize.hpp"
#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"

namespace revgraph::data {
namespace {

constexpr std::size_t kIn = 28 * 28;
constexpr std::size_t kOut = 9 * 9;

void take(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels,
          std::span<const std::int64_t> indices, std::vector<float>& images9, std::vector<std::int64_t>& out_labels,
          std::vector<std::int64_t>& out_indices) {
    images9.resize(indices.size() * kOut);
    out_labels.resize(indices.size());
    out_indices.assign(indices.begin(), indices.end());
    for (std::size_t r = 0; r < indices.size(); ++r) {
        const auto src = static_cast<std::size_t>(indices[r]);
        resize_28_to_9(images28.data() + src * kIn, images9.data() + r * kOut);
        out_labels[r] = labels[src];
    }
}

}  // namespace

TaskData split_draw(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels, std::uint64_t seed,
                    std::int64_t train_count, std::int64_t test_count) {
    const std::size_t n = labels.size();
    if (images28.size() != n * kIn)
        throw Error("draw: " + std::to_string(images28.size()) + " image bytes for " + std::to_string(n) +
                    " labels (expected 784 bytes per image)");
    if (train_count < 1 || test_count < 1 ||
        static_cast<std::size_t>(train_count) + static_cast<std::size_t>(test_count) > n)
        throw Error("draw: cannot take " + std::to_string(train_count) + " train and " + std::to_string(test_count) +
                    " test images from " + std::to_string(n));
    for (std::size_t i = 0; i < n; ++i)
        if (labels[i] > 9)
            throw Error("draw: label " + std::to_string(labels[i]) + " of image " + std::to_string(i) +
                        " is outside 0..9");

    rng::Pcg64 generator(seed);
    const std::vector<std::int64_t> order = rng::permutation(generator, static_cast<std::int64_t>(n));
    const std::span<const std::int64_t> all(order);
    const auto tr = static_cast<std::size_t>(train_count), te = static_cast<std::size_t>(test_count);

    TaskData d;
    take(images28, labels, all.subspan(0, tr), d.train_images, d.train_labels, d.train_indices);
    take(images28, labels, all.subspan(tr, te), d.test_images, d.test_labels, d.test_indices);
    return d;
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
