#pragma once
// Small synthetic tasks for validation and tests (docs/spec.md §8 uses 19 train / 7 query images):
// from one PCG64(seed) stream, train pixels, then train labels, then query pixels, then query
// labels. Pixels are numpy's float32 draw ((next32 >> 8) · 2⁻²⁴, what
// Generator.random(dtype=float32) gives); labels use the masked-rejection interval draw.
#include <cstdint>

#include "engine/data/draws.hpp"

namespace revgraph::data {

TaskData synthetic_task(std::int64_t train_count, std::int64_t test_count, std::uint64_t seed);

}  // namespace revgraph::data
