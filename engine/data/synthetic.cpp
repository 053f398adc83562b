#include "engine/data/synthetic.hpp"

#include "engine/data/numpy_integers.hpp"
#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"

namespace revgraph::data {

TaskData synthetic_task(std::int64_t train_count, std::int64_t test_count, std::uint64_t seed) {
    if (train_count < 1 || test_count < 1) throw Error("synthetic: train and test counts must be >= 1");
    rng::Pcg64 gen(seed);
    auto pixel = [&gen] { return static_cast<float>(gen.next32() >> 8) * (1.0f / 16777216.0f); };
    TaskData t;
    for (std::int64_t i = 0; i < train_count * 81; ++i) t.train_images.push_back(pixel());
    for (std::int64_t i = 0; i < train_count; ++i) t.train_labels.push_back(numpy_integer(gen, 0, 10));
    for (std::int64_t i = 0; i < test_count * 81; ++i) t.test_images.push_back(pixel());
    for (std::int64_t i = 0; i < test_count; ++i) t.test_labels.push_back(numpy_integer(gen, 0, 10));
    for (std::int64_t i = 0; i < train_count; ++i) t.train_indices.push_back(i);
    for (std::int64_t i = 0; i < test_count; ++i) t.test_indices.push_back(train_count + i);
    return t;
}

}  // namespace revgraph::data
