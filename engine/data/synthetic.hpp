#pragma once
// Small synthetic tasks for validation and tests (docs/spec.md §8 uses 19 train / 7 query images):
// from one PCG64(seed) stream, train pixels, then train labels, then query pixels, then query
// labels. Pixels are numpy's float32 draw ((next32 >> 8) · 2⁻²⁴, what
// Generator.random(dtype=float32) gives); labels are Generator.integers(0, 10) (Lemire's draw,
// numpy_integers.hpp). So synthetic_task(N, Q, S) is byte for byte tools/make_synthetic.py's draw
// --train N --query Q --seed S (test/data/test_synthetic.cpp holds it to numpy's bytes): a GPU run
// on the engine's draw and the PyTorch learner on the script's archive see the same task.
#include <cstdint>

#include "engine/data/draws.hpp"

namespace revgraph::data {

TaskData synthetic_task(std::int64_t train_count, std::int64_t test_count, std::uint64_t seed);

}  // namespace revgraph::data
