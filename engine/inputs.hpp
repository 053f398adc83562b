#pragma once
// The three inputs of a task (docs/spec.md §2), checked once at the door so no backend has to.
#include <cstdint>
#include <vector>

namespace revgraph {

struct TaskInputs {
    std::vector<float> train_images;         // (N,1,9,9) row-major, values in [0,1]
    std::vector<std::int64_t> train_labels;  // (N,) in 0..9
    std::vector<float> test_images;          // (Q,1,9,9)

    std::int64_t train_count() const { return static_cast<std::int64_t>(train_labels.size()); }
    std::int64_t test_count() const { return static_cast<std::int64_t>(test_images.size() / 81); }

    // Throws revgraph::Error with a one-line reason: empty sets, size mismatches, NaN/inf or
    // out-of-range pixels, labels outside 0..9.
    void validate() const;
};

}  // namespace revgraph
