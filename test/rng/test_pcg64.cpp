#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"
#include "test/rng/vectors.hpp"

using namespace revgraph::rng;
using revgraph::test::hash_of;
using revgraph::test::load_vector;

TEST_CASE("pcg64: SeedSequence generate_state matches numpy") {
    const auto v = load_vector("rng_numpy.json");
    REQUIRE(v.at("seed_sequence").size() >= 10);
    for (const auto& e : v.at("seed_sequence")) {
        const auto seed = e.at("seed").get<std::uint64_t>();
        CAPTURE(seed);
        const auto state = seed_sequence_state(seed);
        for (int k = 0; k < 4; ++k) CHECK(state[k] == e.at("state").at(k).get<std::uint64_t>());
    }
}

TEST_CASE("pcg64: raw next64 and buffered next32 outputs match numpy") {
    const auto v = load_vector("rng_numpy.json");
    for (const auto& e : v.at("pcg64_raw")) {
        const auto seed = e.at("seed").get<std::uint64_t>();
        CAPTURE(seed);
        Pcg64 g(seed);
        for (const auto& want : e.at("next64")) CHECK(g.next64() == want.get<std::uint64_t>());
        Pcg64 m(seed);
        const auto& ops = e.at("mixed_ops");
        REQUIRE(ops.size() == e.at("mixed").size());
        for (std::size_t i = 0; i < ops.size(); ++i) {
            CAPTURE(i);
            const std::uint64_t got = ops[i] == "32" ? m.next32() : m.next64();
            CHECK(got == e.at("mixed").at(i).get<std::uint64_t>());
        }
    }
}

TEST_CASE("pcg64: interval above 32 bits draws next64 with masked rejection") {
    const auto v = load_vector("rng_numpy.json");
    REQUIRE(!v.at("interval64").empty());
    for (const auto& e : v.at("interval64")) {
        const auto seed = e.at("seed").get<std::uint64_t>();
        const auto max = e.at("max").get<std::uint64_t>();
        CAPTURE(seed);
        CAPTURE(max);
        Pcg64 g(seed);
        for (const auto& want : e.at("values")) CHECK(g.interval(max) == want.get<std::uint64_t>());
    }
}

TEST_CASE("pcg64: interval(0) draws nothing and small ranges stay in range") {
    Pcg64 a(5), b(5);
    CHECK(a.interval(0) == 0);
    CHECK(a.next64() == b.next64());
    for (int i = 0; i < 1000; ++i) CHECK(a.interval(6) <= 6);
}

namespace {
void check_permutation_entries(const nlohmann::json& entries) {
    REQUIRE(!entries.empty());
    for (const auto& e : entries) {
        const auto seed = e.at("seed").get<std::uint64_t>();
        const auto n = e.at("n").get<std::int64_t>();
        const int count = e.at("count").get<int>();
        CAPTURE(seed);
        CAPTURE(n);
        const auto perms = epoch_permutations(seed, n, count);
        REQUIRE(perms.size() == static_cast<std::size_t>(count));
        for (int k = 0; k < count; ++k) {
            CAPTURE(k);
            CHECK(hash_of(perms[k]) == e.at("sha256").at(k).get<std::string>());
            if (e.contains("values")) CHECK(perms[k] == e.at("values").at(k).get<std::vector<std::int64_t>>());
        }
    }
}
}  // namespace

TEST_CASE("pcg64: every entry of the published pcg64_permutation.json") {
    check_permutation_entries(load_vector("pcg64_permutation.json"));
}

TEST_CASE("pcg64: generated permutations (more seeds and sizes, the MNIST draws)") {
    check_permutation_entries(load_vector("rng_numpy.json").at("permutation"));
}

TEST_CASE("pcg64: seed report's epoch permutations (seed 11, n=19)") {
    const auto report =
        revgraph::test::read_json(revgraph::test::source_root() / "test" / "vectors" / "validation-report.json");
    const auto& meta = report.at("api_cli_smoke").at("metadata");
    REQUIRE(meta.at("config").at("seed") == 11);
    const auto seed = meta.at("config").at("seed").get<std::uint64_t>();
    const auto n = meta.at("train_count").get<std::int64_t>();
    const auto& want = meta.at("epoch_permutation_sha256");
    REQUIRE(want.size() == meta.at("config").at("epochs").get<std::size_t>());
    const auto perms = epoch_permutations(seed, n, static_cast<int>(want.size()));
    for (std::size_t e = 0; e < want.size(); ++e) CHECK(hash_of(perms[e]) == want.at(e).get<std::string>());
}

TEST_CASE("pcg64: bad sizes are rejected") {
    Pcg64 g(1);
    CHECK_THROWS_AS(permutation(g, -1), revgraph::Error);
    CHECK_THROWS_AS(epoch_permutations(1, 5, -1), revgraph::Error);
    CHECK(permutation(g, 0).empty());
}
