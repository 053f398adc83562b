// model/math.hpp's float32 exponential, the one the softmax uses on the CPU and the GPU alike:
// within 2 ulp of the exact value over the range that matters, exact at 0, and its edges; and its
// argmax, the one every backend predicts with: the lowest index on ties (docs/spec.md §5).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/model/math.hpp"

using revgraph::model::argmax_row;
using revgraph::model::exp_f32;

namespace {

// Distance in units in the last place between a float and the exact (double) value.
double ulps(float got, double want) {
    const float w = static_cast<float>(want);
    const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
    return std::fabs(static_cast<double>(got) - want) / ulp;
}

}  // namespace

TEST_CASE("exp_f32: within 2 ulp of e^x on [-87, 88], exact at 0") {
    CHECK(exp_f32(0.0f) == 1.0f);
    CHECK(exp_f32(-0.0f) == 1.0f);
    double worst = 0;
    float worst_x = 0;
    // Every 1/4096 on [-87, 88] and a fine sweep near 0, where the softmax's largest terms are.
    for (int k = -87 * 4096; k <= 88 * 4096; ++k) {
        const float x = static_cast<float>(k) / 4096.0f;
        const double u = ulps(exp_f32(x), std::exp(static_cast<double>(x)));
        if (u > worst) worst = u, worst_x = x;
    }
    for (int k = -1000000; k <= 1000000; ++k) {
        const float x = static_cast<float>(k) * 1e-6f;
        const double u = ulps(exp_f32(x), std::exp(static_cast<double>(x)));
        if (u > worst) worst = u, worst_x = x;
    }
    CAPTURE(worst_x);
    CHECK(worst <= 2.0);
    MESSAGE("exp_f32: worst error " << worst << " ulp at x = " << worst_x);
}

TEST_CASE("exp_f32: the edges (NaN, under- and overflow) and monotone steps") {
    CHECK(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
    CHECK(exp_f32(-std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(exp_f32(-100.0f) == 0.0f);
    CHECK(std::isinf(exp_f32(std::numeric_limits<float>::infinity())));
    CHECK(std::isinf(exp_f32(89.0f)));
    // Around the cut-offs the value is tiny / huge and finite.
    CHECK(exp_f32(-87.0f) > 0.0f);
    CHECK(std::isfinite(exp_f32(88.7f)));
    // Monotone (non-decreasing) across a range of the softmax's inputs, x <= 0.
    float prev = exp_f32(-30.0f);
    int decreases = 0;
    for (int k = -30 * 1000; k <= 0; ++k) {
        const float v = exp_f32(static_cast<float>(k) / 1000.0f);
        decreases += v < prev ? 1 : 0;
        prev = v;
    }
    CHECK(decreases == 0);
}

TEST_CASE("argmax_row: the first of the largest scores, as std::max_element finds it (lowest index on ties)") {
    std::array<float, 10> row{};
    CHECK(argmax_row(row.data()) == 0);  // all ten tie
    row = {1, 3, 2, 3, 0, 3, 1, 1, 1, 1};
    CHECK(argmax_row(row.data()) == 1);
    row = {-2, -2, -2, -2, -2, -2, -2, -2, -1, -1};
    CHECK(argmax_row(row.data()) == 8);
    row.fill(-INFINITY);
    row[6] = row[7] = INFINITY;
    CHECK(argmax_row(row.data()) == 6);
    // Rows of three values, so that most have ties, against the standard library's first largest.
    std::uint32_t x = 12345;
    for (int t = 0; t < 2000; ++t) {
        for (float& v : row) {
            x = x * 1664525u + 1013904223u;
            v = static_cast<float>((x >> 16) % 3) - 1.f;
        }
        CAPTURE(t);
        CHECK(argmax_row(row.data()) == std::max_element(row.begin(), row.end()) - row.begin());
    }
}
