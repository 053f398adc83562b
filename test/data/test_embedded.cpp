#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "engine/data/embedded.hpp"
#include "engine/io/sha256.hpp"

using revgraph::data::embedded_digits;

TEST_CASE("embedded digits: 10,000 images with the checksums of EMBEDDED_DATA.md") {
    const auto& d = embedded_digits();
    CHECK(d.count == 10000);
    REQUIRE(d.images.size() == 10000u * 784u);
    REQUIRE(d.labels.size() == 10000u);
    // Recomputed here, against the literal values printed by tools/make_embedded_digits.py.
    CHECK(revgraph::io::sha256_hex(d.images) == "0768d16c5adea568dee18fa5e4e1acb117e9ec2c5d6b1dffe5fc29c1e61c1eca");
    CHECK(revgraph::io::sha256_hex(d.labels) == "44e605757823cf79c6557e6d2a7f45c693b286e8cd303ea10339b002801b4916");
    CHECK(&embedded_digits() == &d);  // decoded once
}

TEST_CASE("embedded digits: label counts of the npm package (src/digits/0.json ... 9.json)") {
    const auto& d = embedded_digits();
    const std::array<int, 10> expected = {1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978};
    std::array<int, 10> counts{};
    int previous = 0;
    bool sorted = true;
    for (const auto label : d.labels) {
        REQUIRE(label <= 9);
        ++counts[label];
        sorted = sorted && label >= previous;
        previous = label;
    }
    CHECK(counts == expected);
    CHECK(sorted);  // package order: every 0, then every 1, ...
}

TEST_CASE("embedded digits: pixels equal round(v*255) of the package's JSON values") {
    // (image, pixel, value in the JSON): image 0 = first of 0.json, 9022 = first of 9.json,
    // 9999 = last of 9.json.
    struct Pixel {
        int image, pixel;
        double value;
    };
    const Pixel pixels[] = {{0, 126, 0.0},      {0, 127, 0.2},      {0, 128, 0.624},    {0, 129, 0.992},
                            {0, 656, 0.553},    {0, 657, 0.145},    {9022, 208, 0.216}, {9022, 209, 0.58},
                            {9022, 210, 0.824}, {9022, 746, 0.165}, {9999, 180, 0.039}, {9999, 181, 0.525},
                            {9999, 182, 0.851}};
    const auto& d = embedded_digits();
    for (const auto& p : pixels) {
        const int byte = d.images[static_cast<std::size_t>(p.image) * 784 + static_cast<std::size_t>(p.pixel)];
        CAPTURE(p.image);
        CAPTURE(p.pixel);
        CHECK(byte == static_cast<int>(std::lround(p.value * 255)));
        CHECK(std::fabs(byte / 255.0 - p.value) <= 0.0005);
    }
    int nonzero = 0;
    for (int k = 0; k < 784; ++k) nonzero += d.images[static_cast<std::size_t>(k)] != 0;
    CHECK(nonzero == 176);  // non-zero values of the first image of 0.json
}
