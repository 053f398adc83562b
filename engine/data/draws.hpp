#pragma once
// Labelled draws for a task (docs/spec.md §9): which images train the learner and which are queried.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace revgraph::data {

// A task's inputs in the shapes of docs/spec.md §2, plus the query labels and the source indices.
// test_labels are for reporting accuracy only; they must never reach the learner.
struct TaskData {
    std::vector<float> train_images;          // (train_count, 1, 9, 9) row-major, in [0, 1]
    std::vector<std::int64_t> train_labels;   // (train_count,) in 0..9
    std::vector<float> test_images;           // (test_count, 1, 9, 9)
    std::vector<std::int64_t> test_labels;    // (test_count,)
    std::vector<std::int64_t> train_indices;  // source image of each train row
    std::vector<std::int64_t> test_indices;   // source image of each test row

    std::int64_t train_count() const { return static_cast<std::int64_t>(train_labels.size()); }
    std::int64_t test_count() const { return static_cast<std::int64_t>(test_labels.size()); }
};

// The general draw: p = Generator(PCG64(seed)).permutation(n) with n = labels.size();
// train = images p[0 .. train_count), test = images p[train_count .. train_count+test_count),
// each resized 28 -> 9 (resize.hpp). images28 holds n x 784 bytes. Throws revgraph::Error on
// inconsistent sizes, a label above 9, or train_count + test_count > n.
TaskData split_draw(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels, std::uint64_t seed,
                    std::int64_t train_count, std::int64_t test_count);

// A set of 28x28 images that many draws share, from one thread or several at once: sizes and labels
// are checked once, and each image is resized 28 -> 9 the first time any draw uses it, then reused.
// One draw resizes only its own rows (20,000 of 60,000); 11 draws resize each image at most once.
// The draws are those of split_draw, bit for bit (the resize of an image does not depend on when
// or where it runs). images28 and labels must outlive the source and stay unchanged.
class DrawSource {
public:
    // Throws revgraph::Error on inconsistent sizes or a label above 9 (split_draw's messages).
    DrawSource(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels);
    DrawSource(const DrawSource&) = delete;
    DrawSource& operator=(const DrawSource&) = delete;

    std::int64_t size() const { return static_cast<std::int64_t>(labels_.size()); }
    TaskData split_draw(std::uint64_t seed, std::int64_t train_count, std::int64_t test_count) const;
    TaskData mnist_medium_draw(std::uint64_t seed) const;

private:
    const float* row9(std::size_t image) const;  // resized on first use; safe from any thread
    std::span<const std::uint8_t> images28_, labels_;
    std::unique_ptr<float[]> rows9_;                      // n x 81, written once per row
    std::unique_ptr<std::atomic<std::uint8_t>[]> state_;  // per row: 0 not yet, 1 being resized, 2 done
};

// docs/spec.md §9 MNIST-medium draw for dataset seed s: 10,000 train and the next 10,000 test images
// of the permutation of the official 60,000 training images (any n >= 20,000 is accepted; the
// published draws use n = 60,000, seeds 2026091400 ... 2026091410).
inline constexpr std::int64_t kMediumTrain = 10000;
inline constexpr std::int64_t kMediumTest = 10000;
TaskData mnist_medium_draw(std::span<const std::uint8_t> images28, std::span<const std::uint8_t> labels,
                           std::uint64_t seed);

// The default task when no MNIST files are at hand: the 10,000 embedded digits split by the
// permutation of 10,000 for `seed` into 5,000 train and 5,000 held-out query images. The split
// seed is fixed at 11 (the rev88 model seed) by default and independent of the model's seed
// unless a caller passes another.
inline constexpr std::uint64_t kEmbeddedSplitSeed = 11;
inline constexpr std::int64_t kEmbeddedTrain = 5000;
inline constexpr std::int64_t kEmbeddedTest = 5000;
TaskData embedded_default_task(std::uint64_t seed = kEmbeddedSplitSeed);

}  // namespace revgraph::data
