// data::synthetic_task against numpy: its draw must be tools/make_synthetic.py's, byte for byte
// (pixels and labels), so a GPU run on the engine's draw and the PyTorch learner on the script's
// archive time the same task. The labels' Lemire draw is held to numpy's Generator.integers on
// ranges where its rejection step runs, and its rejection logic to a made-up stream.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "engine/data/numpy_integers.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/io/sha256.hpp"
#include "engine/rng/pcg64.hpp"
#include "vectors.hpp"

using namespace revgraph;

namespace {
// A made-up 32-bit stream that counts what it hands out.
struct Stream {
    std::vector<std::uint32_t> values;
    std::size_t next = 0;
    std::uint32_t operator()() { return values.at(next++); }
};
}  // namespace

TEST_CASE("Lemire's draw redraws exactly when the low word falls under 2^32 mod range") {
    // Range 10: 2^32 mod 10 = 6. 0 and 2^31 leave low words 0 (rejected); 2^31 + 1 leaves 10 (kept).
    Stream s{{0u, 0x80000000u, 0x80000001u, 7u}};
    CHECK(data::lemire_bounded_u32(s, 9) == 5);  // (10 · (2^31 + 1)) >> 32
    CHECK(s.next == 3);
    // A low word under the range but not under the threshold is kept without computing more.
    Stream t{{0x1999999Au}};  // 10 · 0x1999999A = 2^32 + 4: low word 4 < 6, so it is redrawn...
    CHECK_THROWS(data::lemire_bounded_u32(t, 9));
    Stream u{{0x1999999Bu}};  // ... and 2^32 + 14 is not
    CHECK(data::lemire_bounded_u32(u, 9) == 1);
    CHECK(u.next == 1);
    // The threshold's edge, range 7 (2^32 mod 7 = 4): a low word of 3 is redrawn, one of 4 is kept.
    Stream edge{{0x24924925u, 0xDB6DB6DCu}};
    CHECK(data::lemire_bounded_u32(edge, 6) == 6);  // the second draw: (7 · 0xDB6DB6DC) >> 32
    CHECK(edge.next == 2);
    Stream kept{{0xDB6DB6DCu}};
    CHECK(data::lemire_bounded_u32(kept, 6) == 6);
    CHECK(kept.next == 1);
    // One value draws nothing; the whole 32 bits are one raw draw.
    Stream none{{}};
    CHECK(data::lemire_bounded_u32(none, 0) == 0);
    CHECK(none.next == 0);
    Stream raw{{0xDEADBEEFu}};
    CHECK(data::lemire_bounded_u32(raw, 0xFFFFFFFFu) == 0xDEADBEEFu);
}

TEST_CASE("numpy_integer is Generator.integers(low, high, dtype=int64), in step with float32 draws") {
    const auto& cases = test::data_vectors()["integers"];
    REQUIRE(cases.size() >= 4);
    for (const auto& c : cases) {
        rng::Pcg64 gen(c["seed"].get<std::uint64_t>());
        for (int i = 0; i < c["floats"].get<int>(); ++i) (void)gen.next32();  // random(dtype=float32): one each
        const auto low = c["low"].get<std::int64_t>(), high = c["high"].get<std::int64_t>();
        std::vector<std::int64_t> got;
        for (std::size_t i = 0; i < c["values"].size(); ++i) got.push_back(data::numpy_integer(gen, low, high));
        CAPTURE(c["seed"].get<std::uint64_t>());
        CAPTURE(high - low);
        CHECK(got == c["values"].get<std::vector<std::int64_t>>());
    }
    rng::Pcg64 gen(1);
    CHECK_THROWS_AS(data::numpy_integer(gen, 3, 3), Error);
    CHECK_THROWS_AS(data::numpy_integer(gen, 0, (std::int64_t{1} << 32) + 1), Error);
}

TEST_CASE("synthetic_task is tools/make_synthetic.py's draw, byte for byte") {
    const auto& cases = test::data_vectors()["synthetic"];
    REQUIRE(cases.size() >= 3);
    for (const auto& c : cases) {
        const auto t = data::synthetic_task(c["train"].get<std::int64_t>(), c["query"].get<std::int64_t>(),
                                            c["seed"].get<std::uint64_t>());
        CAPTURE(c["train"].get<int>());
        CAPTURE(c["seed"].get<std::uint64_t>());
        const auto& want = c["sha256"];
        CHECK(io::sha256_hex(t.train_images) == want["train_images"].get<std::string>());
        CHECK(io::sha256_hex(t.train_labels) == want["train_labels"].get<std::string>());
        CHECK(io::sha256_hex(t.test_images) == want["test_images"].get<std::string>());
        CHECK(io::sha256_hex(t.test_labels) == want["test_labels"].get<std::string>());
        const std::vector<std::int64_t> first(t.train_labels.begin(),
                                              t.train_labels.begin() + static_cast<long>(c["first_labels"].size()));
        CHECK(first == c["first_labels"].get<std::vector<std::int64_t>>());
    }
}
