// engine/model/sum_order.hpp: the lane rule against sums written out by hand here, and the reference
// trainer in every lane count against the float64 reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
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

// The float32 reference in each order, by both backward paths, follows the float64 reference (index
// order) within docs/spec.md §8's float32 tolerance, and the orders other than 1 give other bits
// (that the lane count reaches each sum is the next case's check, site by site).
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

// Site by site at 4 lanes: each sum the reference forms (scores, both couples, the head's and both
// branches' gradients, dstate and dx) against the same math written here output by output with
// model::lane_sum<4>. Each site is also shown to differ from index order somewhere on these values,
// so a site that ignored the lane count would fail its check.
TEST_CASE("sum order: every sum of the reference follows the lane count") {
    constexpr int L = 4;
    const int width = 82, half = width / 2, rows = 7;
    const float alpha = 0.5f;
    const cpu::Reference<float> ref(1, alpha, width, L);
    const auto& lay = ref.layout();
    std::vector<float> params(lay.total());
    rng::init_parameters(lay, 199, params.data());
    for (std::size_t i = 0; i < lay.head_weight_offset(); ++i) params[i] *= 20.f;  // branches that matter
    rng::Mt19937 gen(5);
    auto uniform = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& x : v) x = 2.f * static_cast<float>(rng::torch_uniform01(gen)) - 1.f;
        return v;
    };
    const std::vector<float> input = uniform(static_cast<std::size_t>(rows) * width);
    const std::vector<float> g_out = uniform(input.size());
    const std::vector<float> dscores = uniform(static_cast<std::size_t>(rows) * model::kClasses);
    const float* wf = params.data() + lay.branch_offset(0);
    const float* wg = params.data() + lay.branch_offset(1);
    const float* hw = params.data() + lay.head_weight_offset();
    const float* hb = params.data() + lay.head_bias_offset();
    auto relu = [](float x) { return model::relu(x); };
    auto mask = [](float x) { return model::relu_mask(x); };
    // Every site's values in the rule's order at L and at 1 lane (the second only to show they differ).
    auto check_site = [](const char* site, const std::vector<float>& got, const std::vector<float>& want,
                         const std::vector<float>& index) {
        const std::string name = site;  // a string, so that a failure prints it
        CAPTURE(name);
        CHECK(got.size() == want.size());
        bool equal = got.size() == want.size(), differs_from_index = false;
        for (std::size_t i = 0; equal && i < got.size(); ++i) equal = bits(got[i]) == bits(want[i]);
        for (std::size_t i = 0; i < want.size(); ++i) differs_from_index |= bits(want[i]) != bits(index[i]);
        CHECK(equal);
        CHECK(differs_from_index);
    };

    // The forward couples: left += α·(relu(right) W_fᵀ), then (with_g) right += α·(relu(left) W_gᵀ).
    auto forward = [&](auto lanes, bool with_g) {
        constexpr int N = decltype(lanes)::value;
        std::vector<float> s = input;
        for (int r = 0; r < rows; ++r) {
            float* x = s.data() + r * width;
            for (int o = 0; o < half; ++o)
                x[o] = x[o] + alpha * model::lane_sum<N, float>(
                                          half, [&](int i) { return relu(x[half + i]) * wf[o * half + i]; });
            for (int o = 0; with_g && o < half; ++o)
                x[half + o] = x[half + o] + alpha * model::lane_sum<N, float>(
                                                        half, [&](int i) { return relu(x[i]) * wg[o * half + i]; });
        }
        return s;
    };
    std::vector<float> state = input;
    ref.core_forward(params.data(), state.data(), rows);
    const auto after_f = forward(std::integral_constant<int, L>{}, false);  // the G branch's input
    check_site("core_forward", state, forward(std::integral_constant<int, L>{}, true),
               forward(std::integral_constant<int, 1>{}, true));

    // The head: scores = state Wᵀ + b; its gradients from dscores.
    auto head = [&](auto lanes) {
        constexpr int N = decltype(lanes)::value;
        std::vector<float> scores(static_cast<std::size_t>(rows) * model::kClasses), dw(model::kClasses * width),
            db(model::kClasses), dstate(input.size());
        for (int r = 0; r < rows; ++r)
            for (int j = 0; j < model::kClasses; ++j)
                scores[r * model::kClasses + j] =
                    model::lane_sum<N, float>(width, [&](int i) { return input[r * width + i] * hw[j * width + i]; }) +
                    hb[j];
        for (int j = 0; j < model::kClasses; ++j) {
            for (int i = 0; i < width; ++i)
                dw[j * width + i] = 0.f + model::lane_sum<N, float>(rows, [&](int r) {
                                        return dscores[r * model::kClasses + j] * input[r * width + i];
                                    });
            db[j] = 0.f + model::lane_sum<N, float>(rows, [&](int r) { return dscores[r * model::kClasses + j]; });
        }
        for (int r = 0; r < rows; ++r)
            for (int i = 0; i < width; ++i)
                dstate[r * width + i] = model::lane_sum<N, float>(
                    model::kClasses, [&](int j) { return dscores[r * model::kClasses + j] * hw[j * width + i]; });
        return std::vector<std::vector<float>>{scores, dw, db, dstate};
    };
    const auto want_head = head(std::integral_constant<int, L>{}), index_head = head(std::integral_constant<int, 1>{});
    std::vector<float> scores(static_cast<std::size_t>(rows) * model::kClasses), grads(lay.total(), 0.f),
        dstate(input.size());
    ref.head_forward(params.data(), input.data(), rows, scores.data());
    ref.head_backward(params.data(), input.data(), dscores.data(), rows, grads.data(), dstate.data());
    check_site("head_forward", scores, want_head[0], index_head[0]);
    check_site("head_backward dW", {grads.begin() + lay.head_weight_offset(), grads.begin() + lay.head_bias_offset()},
               want_head[1], index_head[1]);
    check_site("head_backward db", {grads.begin() + lay.head_bias_offset(), grads.end()}, want_head[2], index_head[2]);
    check_site("head_backward dstate", dstate, want_head[3], index_head[3]);

    // The storing backward at depth 1: G's branch (input: left half after F; output gradient: the
    // right half of g_out), its dx into the left half; then F's (input: the right half of the input;
    // output gradient: the left half as just updated), its dx into the right half.
    auto backward = [&](auto lanes) {
        constexpr int N = decltype(lanes)::value;
        std::vector<float> d = g_out, dwg(half * half), dwf(half * half);
        auto branch = [&](const float* w, const std::vector<float>& x, int x_at, int g_at, int dx_at,
                          std::vector<float>& dw) {
            for (int o = 0; o < half; ++o)
                for (int i = 0; i < half; ++i)
                    dw[o * half + i] = 0.f + model::lane_sum<N, float>(rows, [&](int r) {
                                           return alpha * d[r * width + g_at + o] * relu(x[r * width + x_at + i]);
                                       });
            std::vector<float> dx(static_cast<std::size_t>(rows) * half);
            for (int r = 0; r < rows; ++r)
                for (int i = 0; i < half; ++i)
                    dx[r * half + i] =
                        model::lane_sum<N, float>(
                            half, [&](int o) { return alpha * d[r * width + g_at + o] * w[o * half + i]; }) *
                        mask(x[r * width + x_at + i]);
            for (int r = 0; r < rows; ++r)
                for (int i = 0; i < half; ++i) d[r * width + dx_at + i] += dx[r * half + i];
        };
        branch(wg, after_f, 0, half, 0, dwg);
        branch(wf, input, half, 0, half, dwf);
        return std::vector<std::vector<float>>{d, dwf, dwg};
    };
    const auto want_back = backward(std::integral_constant<int, L>{}),
               index_back = backward(std::integral_constant<int, 1>{});
    std::vector<float> d = g_out, branch_grads(lay.total(), 0.f);
    ref.core_backward_storing(params.data(), input.data(), d.data(), rows, branch_grads.data());
    check_site("backward dstate", d, want_back[0], index_back[0]);
    check_site("backward dW_f", {branch_grads.begin(), branch_grads.begin() + lay.branch_offset(1)}, want_back[1],
               index_back[1]);
    check_site("backward dW_g",
               {branch_grads.begin() + lay.branch_offset(1), branch_grads.begin() + lay.head_weight_offset()},
               want_back[2], index_back[2]);
}
