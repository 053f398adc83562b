// engine/model/sum_order.hpp: the lane rule against sums written out by hand here, and the reference
// trainer in every lane count against the float64 reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/reference.hpp"
#include "engine/error.hpp"
#include "engine/model/sum_order.hpp"
#include "engine/rng/torch_init.hpp"

using namespace revgraph;

namespace {

std::uint32_t bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Eleven terms whose float32 sum depends on the order: large values that cancel beside small ones.
const std::vector<float> kTerms{1e8f, 3.f, -1e8f, 5.f, 7.f, 1e-3f, 2.5e7f, -11.f, 13.f, -2.5e7f, 0.125f};

}  // namespace

TEST_CASE("sum order: each lane count is the sum written out by hand") {
    const auto& t = kTerms;
    const auto term = [&](int i) { return t[i]; };
    const int n = static_cast<int>(t.size());
    // 1 lane: index order, from +0.
    float index = 0.f;
    for (float v : t) index += v;
    // 2 lanes: evens and odds, then their sum.
    const float e = (((((0.f + t[0]) + t[2]) + t[4]) + t[6]) + t[8]) + t[10];
    const float o = ((((0.f + t[1]) + t[3]) + t[5]) + t[7]) + t[9];
    // 4 lanes: i mod 4, joined (l0 + l1) + (l2 + l3).
    const float l0 = ((0.f + t[0]) + t[4]) + t[8], l1 = ((0.f + t[1]) + t[5]) + t[9],
                l2 = ((0.f + t[2]) + t[6]) + t[10], l3 = (0.f + t[3]) + t[7];
    // 8 lanes: ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)), lanes 0-2 with two terms.
    const float m0 = (0.f + t[0]) + t[8], m1 = (0.f + t[1]) + t[9], m2 = (0.f + t[2]) + t[10];
    const float eight =
        ((m0 + m1) + (m2 + (0.f + t[3]))) + (((0.f + t[4]) + (0.f + t[5])) + ((0.f + t[6]) + (0.f + t[7])));

    CHECK(bits(model::lane_sum<1, float>(n, term)) == bits(index));
    CHECK(bits(model::lane_sum<2, float>(n, term)) == bits(e + o));
    CHECK(bits(model::lane_sum<4, float>(n, term)) == bits((l0 + l1) + (l2 + l3)));
    CHECK(bits(model::lane_sum<8, float>(n, term)) == bits(eight));
    // The run-time form is the same function.
    for (int lanes : {1, 2, 4, 8})
        CHECK(bits(model::lane_sum_any<float>(n, lanes, term)) == bits(lanes == 1   ? index
                                                                       : lanes == 2 ? e + o
                                                                       : lanes == 4 ? (l0 + l1) + (l2 + l3)
                                                                                    : eight));
    // The orders really differ on these terms (else the checks above could not tell them apart).
    CHECK(bits(index) != bits((l0 + l1) + (l2 + l3)));
    CHECK_THROWS(model::lane_sum_any<float>(n, 3, term));
}

TEST_CASE("sum order: LaneRows gives every output lane_sum's bits") {
    const int count = 5, n = 11;
    for (int lanes : {1, 2, 4, 8}) {
        CAPTURE(lanes);
        model::LaneRows<float> rows(count, lanes);
        rows.clear();
        auto term = [&](int i, int k) { return kTerms[static_cast<std::size_t>((i + k) % n)] * float(k + 1); };
        for (int i = 0; i < n; ++i) {
            float* lane = rows.lane_of(i);
            for (int k = 0; k < count; ++k) lane[k] += term(i, k);
        }
        const float* sums = rows.sums();
        for (int k = 0; k < count; ++k)
            CHECK(bits(sums[k]) == bits(model::lane_sum_any<float>(n, lanes, [&](int i) { return term(i, k); })));
    }
}

// The float32 reference in each order follows the float64 reference (index order) within docs/spec.md
// §8's float32 tolerance, its two backward paths agree, and the orders other than 1 give other bits
// (the lane count reaches every sum that decides the gradients).
TEST_CASE("sum order: the float32 reference in every lane count follows float64") {
    const int depth = 2, width = 82, rows = 16;
    const cpu::Reference<double> ref64(depth, 0.5, width);
    std::vector<float> init(ref64.layout().total());
    rng::init_parameters(ref64.layout(), 199, init.data());
    rng::Mt19937 gen(11);
    std::vector<float> input32(static_cast<std::size_t>(rows) * width, 0.f);
    std::vector<std::int64_t> labels(rows);
    for (int r = 0; r < rows; ++r) {
        for (int i = 0; i < 81; ++i)
            input32[r * width + i] = 4.f * static_cast<float>(rng::torch_uniform01(gen)) - 0.5f;
        labels[r] = r % 10;
    }
    const std::vector<double> params64(init.begin(), init.end()), input64(input32.begin(), input32.end());
    const auto want = cpu::batch_gradients(ref64, params64, input64, labels, cpu::BackwardMode::reconstruct);

    std::vector<float> index_grads;
    for (int lanes : {1, 2, 4, 8}) {
        CAPTURE(lanes);
        const cpu::Reference<float> ref(depth, 0.5f, width, lanes);
        const auto got = cpu::batch_gradients(ref, init, input32, labels, cpu::BackwardMode::reconstruct);
        const auto stored = cpu::batch_gradients(ref, init, input32, labels, cpu::BackwardMode::storing);
        CHECK(got.final_state == stored.final_state);
        double excess = -1;
        for (std::size_t i = 0; i < want.params.size(); ++i) {
            const double tol = 2e-6 + 3e-3 * std::fabs(want.params[i]);
            excess = std::max(excess, std::fabs(got.params[i] - want.params[i]) - tol);
            excess = std::max(excess, std::fabs(stored.params[i] - want.params[i]) - tol);
        }
        CHECK(excess <= 0);
        CHECK(std::fabs(got.loss - want.loss) < 1e-5);
        if (lanes == 1)
            index_grads = got.params;
        else
            CHECK(got.params != index_grads);
    }
    CHECK_THROWS_AS(cpu::Reference<float>(depth, 0.5f, width, 3), Error);
}
