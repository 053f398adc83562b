#pragma once
// Small synthetic tasks shared by the CPU suites: pixels and labels from torch's mt19937 stream,
// so they depend on nothing under test but the generator the rng suite checks bit for bit.
#include <cstdint>

#include "engine/inputs.hpp"
#include "engine/rng/torch_init.hpp"

namespace revgraph::test {

inline TaskInputs synthetic_inputs(int n, int q, std::uint32_t seed) {
    rng::Mt19937 gen(seed);
    TaskInputs in;
    for (int i = 0; i < n * 81; ++i) in.train_images.push_back(rng::torch_uniform01(gen));
    for (int i = 0; i < n; ++i) in.train_labels.push_back(gen.next() % 10);
    for (int i = 0; i < q * 81; ++i) in.test_images.push_back(rng::torch_uniform01(gen));
    return in;
}

}  // namespace revgraph::test
