// docs/spec.md §8's CPU block: reconstructing vs storing backward, inverse, kept activation memory.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "engine/cpu/reference.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/validate/cpu_numerics.hpp"

using namespace revgraph;

TEST_CASE_TEMPLATE("numerics: reconstruction matches the storing backward", T, float, double) {
    for (const auto& shape : {std::pair{1, 82}, std::pair{2, 82}, std::pair{3, 82}, std::pair{8, 82}, std::pair{2, 128},
                              std::pair{3, 90}, std::pair{2, 512}}) {
        // Plain variables, not a structured binding: clang 14 cannot capture one in CAPTURE.
        const int depth = shape.first, width = shape.second;
        CAPTURE(depth);
        CAPTURE(width);
        const auto c = validate::check_cpu_numerics<T>(depth, 199, 3, width);
        MESSAGE(c.dtype << " depth " << depth << ": max gradient error " << c.maximum_gradient_abs_error
                        << ", inverse error " << c.inverse_max_abs_error);
        CHECK(c.forward_bitwise_equal);
        CHECK(c.maximum_gradient_excess <= 0);
        CHECK(c.inverse_within_tolerance);
        // The reconstructing backward walked its one buffer back from the final state to the input:
        // it ran the inverse, rather than keeping or re-running the forward as the storing one does.
        CHECK(c.rebuilt_input_within_tolerance);
        CHECK(c.passed);
        // Reconstruction really ran: a float64 inverse is not exact, but close.
        CHECK(c.inverse_max_abs_error < (sizeof(T) == 8 ? 1e-13 : 1e-5));
    }
}

TEST_CASE_TEMPLATE("numerics: kept activations are one B x W state at every depth and width", T, float, double) {
    for (int depth : {1, 2, 8}) {
        CAPTURE(depth);
        const auto c = validate::check_cpu_numerics<T>(depth);
        CHECK(c.saved_activation_bytes == 3 * 82 * sizeof(T));  // 984 bytes for 3 float32 rows
        // The storing backward keeps 2·depth states: what reconstruction saves.
        CHECK(c.storing_activation_bytes == static_cast<std::size_t>(2 * depth) * 3 * 82 * sizeof(T));
    }
    // At width W the one kept state is B x W: 4·W bytes an example in float32.
    const auto wide = validate::check_cpu_numerics<T>(2, 199, 3, 256);
    CHECK(wide.saved_activation_bytes == 3 * 256 * sizeof(T));
    CHECK(wide.storing_activation_bytes == 4 * 3 * 256 * sizeof(T));
}

// Independent of both backward paths: central finite differences of the float64 loss.
TEST_CASE("numerics: float64 gradients agree with finite differences") {
    for (const auto& shape : {std::pair{1, 82}, std::pair{2, 82}, std::pair{2, 128}}) {
        // Plain variables, not a structured binding: clang 14 cannot capture one in CAPTURE.
        const int depth = shape.first, width = shape.second;
        CAPTURE(depth);
        CAPTURE(width);
        const cpu::Reference<double> ref(depth, 0.5, width);
        std::vector<float> init(ref.layout().total());
        rng::init_parameters(ref.layout(), 199, init.data());
        std::vector<double> params(init.begin(), init.end());
        // Branch weights of 0.05/sqrt(W/2) barely move a 3-row loss; scale them up so every
        // parameter matters and relu masks are exercised.
        for (std::size_t i = 0; i < ref.layout().head_weight_offset(); ++i) params[i] *= 20.0;
        rng::Mt19937 gen(7);
        std::vector<double> input(static_cast<std::size_t>(3 * width), 0.0);
        for (int r = 0; r < 3; ++r)
            for (int i = 0; i < 81; ++i) input[r * width + i] = 4.0 * rng::torch_uniform01(gen) - 0.5;
        const std::vector<std::int64_t> labels{2, 7, 1};
        const auto g = cpu::batch_gradients(ref, params, input, labels, cpu::BackwardMode::reconstruct);

        const double h = 1e-6;
        auto loss_at = [&](std::vector<double>& p, std::vector<double>& x) {
            return cpu::batch_gradients(ref, p, x, labels, cpu::BackwardMode::storing).loss;
        };
        double worst = 0;
        // Every 7th parameter (all kinds: branches, head weight, bias) and every 5th input.
        for (std::size_t i = 0; i < params.size(); i += 7) {
            auto p = params;
            p[i] += h;
            const double up = loss_at(p, input);
            p[i] -= 2 * h;
            const double down = loss_at(p, input);
            const double fd = (up - down) / (2 * h);
            worst = std::max(worst, std::fabs(fd - g.params[i]) / (1e-6 + std::fabs(fd)));
            CHECK(std::fabs(fd - g.params[i]) <= 1e-7 + 1e-5 * std::fabs(fd));
        }
        for (std::size_t i = 0; i < input.size(); i += 5) {
            if (static_cast<int>(i) % width >= 81) continue;  // an appended zero: a constant, not an input
            auto x = input;
            x[i] += h;
            const double up = loss_at(params, x);
            x[i] -= 2 * h;
            const double down = loss_at(params, x);
            const double fd = (up - down) / (2 * h);
            CHECK(std::fabs(fd - g.input[i]) <= 1e-7 + 1e-5 * std::fabs(fd));
        }
        MESSAGE("depth " << depth << " width " << width << ": worst finite-difference relative error " << worst);
    }
}
