#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/data/embedded.hpp"
#include "engine/data/resize.hpp"
#include "engine/error.hpp"
#include "vectors.hpp"

using namespace revgraph::data;

namespace {
void check_close(const float* got, const nlohmann::json& want) {
    REQUIRE(want.size() == 81u);
    double worst = 0;
    for (int k = 0; k < 81; ++k)
        worst = std::fmax(worst, std::fabs(got[k] - want[static_cast<std::size_t>(k)].get<double>()));
    CHECK(worst <= 1e-6);
}
}  // namespace

TEST_CASE("resize: box weights are overlaps of [i*28/9, (i+1)*28/9) with [j, j+1)") {
    const auto& vectors = revgraph::test::data_vectors();
    for (int i = 0; i < kSide9; ++i) {
        int units = 0;
        double sum = 0;
        int nonzero = 0;
        for (int j = 0; j < kSide28; ++j) {
            units += box_overlap_ninths(i, j);
            sum += box_weight(i, j);
            nonzero += box_weight(i, j) > 0;
            CHECK(box_weight(i, j) >= 0.0);
        }
        CAPTURE(i);
        CHECK(units == 28);
        CHECK(std::fabs(sum - 1.0) <= 1e-12);
        CHECK(std::fabs(sum - vectors["box_row_sums"][static_cast<std::size_t>(i)].get<double>()) <= 1e-12);
        CHECK(nonzero <= 4);
    }
    CHECK(box_weight(0, 0) == 9.0 / 28.0);  // pixel 0 wholly inside cell 0: 1 px of 28/9
    CHECK(box_weight(0, 3) == 1.0 / 28.0);  // [3, 3.111): 1/9 px of 28/9
    CHECK(box_weight(1, 3) == 8.0 / 28.0);
    CHECK(box_weight(8, 27) == 9.0 / 28.0);
}

TEST_CASE("resize: embedded digits match numpy's A x A^T within 1e-6") {
    const auto& vectors = revgraph::test::data_vectors();
    const auto& d = embedded_digits();
    const std::vector<float> all = resize_28_to_9(d.images);
    REQUIRE(all.size() == 10000u * 81u);
    const auto& picks = vectors["embedded_indices"];
    REQUIRE(picks.size() == vectors["embedded_resized"].size());
    for (std::size_t p = 0; p < picks.size(); ++p) {
        const auto e = picks[p].get<std::size_t>();
        CAPTURE(e);
        check_close(all.data() + e * 81, vectors["embedded_resized"][p]);
    }
    double sum = 0, lo = 1, hi = 0;
    for (const float v : all) {
        sum += v;
        lo = std::fmin(lo, v);
        hi = std::fmax(hi, v);
    }
    CHECK(std::fabs(sum - vectors["embedded_resized_sum"].get<double>()) <= 1e-6 * 81 * 10000);
    CHECK(lo >= 0.0);
    CHECK(hi <= 1.0);
}

TEST_CASE("resize: synthetic images (saturated, byte pattern) match numpy") {
    const auto& want = revgraph::test::data_vectors()["synthetic_resized"];
    std::vector<std::uint8_t> images(2 * 784);
    for (int j = 0; j < 28; ++j)
        for (int l = 0; l < 28; ++l) {
            images[static_cast<std::size_t>(j * 28 + l)] = 255;
            images[static_cast<std::size_t>(784 + j * 28 + l)] =
                static_cast<std::uint8_t>((j * 37 + l * 11 + j * l) % 256);
        }
    const std::vector<float> out = resize_28_to_9(images);
    check_close(out.data(), want[0]);
    check_close(out.data() + 81, want[1]);
    for (int k = 0; k < 81; ++k) CHECK(out[static_cast<std::size_t>(k)] == 1.0f);  // clipped to exactly 1
}

TEST_CASE("resize: deterministic, per-image equal to the batch form, bad sizes rejected") {
    const auto& d = embedded_digits();
    float one[81];
    resize_28_to_9(d.images.data() + 1234 * 784, one);
    const std::vector<float> batch = resize_28_to_9(std::span(d.images).subspan(1234 * 784, 784));
    REQUIRE(batch.size() == 81u);
    for (int k = 0; k < 81; ++k) CHECK(batch[static_cast<std::size_t>(k)] == one[k]);
    CHECK_THROWS_AS(resize_28_to_9(std::span(d.images).subspan(0, 783)), revgraph::Error);
    CHECK(resize_28_to_9(std::span<const std::uint8_t>()).empty());
}
