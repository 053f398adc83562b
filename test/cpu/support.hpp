#pragma once
// Helpers shared by the CPU suites. Small synthetic tasks: pixels and labels from torch's mt19937 stream,
// so they depend on nothing under test but the generator the rng suite checks bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "engine/inputs.hpp"
#include "engine/task.hpp"
#include "engine/rng/torch_init.hpp"

namespace revgraph::test {

inline TaskInputs synthetic_inputs(int n, int q, std::uint32_t seed) {
    rng::Mt19937 gen(seed);
    std::vector<float> train, test;
    std::vector<std::int64_t> labels;
    for (int i = 0; i < n * 81; ++i) train.push_back(rng::torch_uniform01(gen));
    for (int i = 0; i < n; ++i) labels.push_back(gen.next() % 10);
    for (int i = 0; i < q * 81; ++i) test.push_back(rng::torch_uniform01(gen));
    return TaskInputs{std::move(train), std::move(labels), std::move(test)};
}

// Two runs' outputs are byte-identical: parameters, momentum, scores, predictions, state hash.
inline void check_byte_identical(const TaskOutputs& a, const TaskOutputs& b) {
    CHECK(a.state.parameters == b.state.parameters);
    CHECK(a.state.velocity == b.state.velocity);
    CHECK(a.state.scores == b.state.scores);
    CHECK(a.state.predictions == b.state.predictions);
    CHECK(a.metadata["state_vector_sha256"] == b.metadata["state_vector_sha256"]);
}

// Largest |got - want| - (atol + rtol |want|) over the elements (numpy's isclose rule): <= 0 when
// every value is within tolerance, and by how much the worst one is not otherwise.
template <typename G, typename W>
double max_excess(const std::vector<G>& got, const std::vector<W>& want, double atol, double rtol) {
    REQUIRE(got.size() == want.size());
    double worst = -INFINITY;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double w = double(want[i]);
        worst = std::max(worst, std::fabs(double(got[i]) - w) - (atol + rtol * std::fabs(w)));
    }
    return worst;
}

}  // namespace revgraph::test
