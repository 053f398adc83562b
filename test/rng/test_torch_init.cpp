#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/model/layout.hpp"
#include "engine/rng/torch_init.hpp"
#include "test/rng/vectors.hpp"

using namespace revgraph::rng;
using revgraph::model::Layout;
using revgraph::test::hash_of;
using revgraph::test::load_vector;

namespace {
// torch.manual_seed keeps the low 32 bits of the seed.
Mt19937 manual_seed(const nlohmann::json& seed) {
    return Mt19937(static_cast<std::uint32_t>(seed.get<std::uint64_t>()));
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
    std::vector<std::uint32_t> out(v.size());
    std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
    return out;
}

// Number of values whose bits differ, so a failure says how far off it is.
std::size_t mismatches(const std::vector<float>& got, const nlohmann::json& want_bits) {
    const auto want = want_bits.get<std::vector<std::uint32_t>>();
    REQUIRE(want.size() == got.size());
    const auto have = bits_of(got);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) bad += have[i] != want[i];
    return bad;
}

void check_init(const nlohmann::json& e) {
    const int depth = e.at("depth").get<int>();
    const int width = e.value("width", revgraph::model::kFeatures);  // entries without one are rev88's
    const auto seed = e.at("seed").get<std::uint64_t>();
    CAPTURE(depth);
    CAPTURE(width);
    CAPTURE(seed);
    const Layout layout(depth, width);
    std::vector<float> params(layout.total(), std::nanf(""));
    init_parameters(layout, seed, params.data());
    const auto& want = e.at("sha256");
    REQUIRE(want.size() == layout.views().size());
    for (const auto& view : layout.views()) {
        CAPTURE(view.name);
        CHECK(hash_of(params.data() + view.offset, view.size()) == want.at(view.name).get<std::string>());
    }
    if (e.contains("state_vector_sha256")) CHECK(hash_of(params) == e.at("state_vector_sha256").get<std::string>());
}
}  // namespace

TEST_CASE("torch: mt19937 outputs (init_genrand seeding) across regenerations") {
    const auto v = load_vector("rng_torch.json");
    REQUIRE(!v.at("mt19937").empty());
    for (const auto& e : v.at("mt19937")) {
        CAPTURE(e.at("seed").get<std::uint64_t>());
        Mt19937 g = manual_seed(e.at("seed"));
        std::vector<std::uint32_t> raw(1255);
        for (auto& r : raw) r = g.next();
        CHECK(std::vector<std::uint32_t>(raw.begin(), raw.begin() + 8) ==
              e.at("first").get<std::vector<std::uint32_t>>());
        CHECK(std::vector<std::uint32_t>(raw.begin() + 620, raw.begin() + 630) ==
              e.at("at_620").get<std::vector<std::uint32_t>>());
        CHECK(std::vector<std::uint32_t>(raw.begin() + 1245, raw.end()) ==
              e.at("at_1245").get<std::vector<std::uint32_t>>());
    }
    // The reference output of mt19937's authors: the 10000th draw after the default seed 5489.
    Mt19937 g(5489);
    std::uint32_t r = 0;
    for (int i = 0; i < 10000; ++i) r = g.next();
    CHECK(r == 4123659995u);
}

TEST_CASE("torch: normal_ (AVX2 path) bit for bit, n = 16 ... 1681") {
    const auto v = load_vector("rng_torch.json");
    std::size_t entries = 0, with_bits = 0;
    for (const auto& e : v.at("normal")) {
        const auto n = e.at("n").get<std::size_t>();
        const double mean = e.at("mean"), std = e.at("std");
        CAPTURE(e.at("seed").get<std::uint64_t>());
        CAPTURE(n);
        CAPTURE(mean);
        CAPTURE(std);
        Mt19937 g = manual_seed(e.at("seed"));
        std::vector<float> data(n);
        torch_normal(g, data.data(), n, mean, std);
        CHECK(hash_of(data) == e.at("sha256").get<std::string>());
        if (e.contains("bits")) {
            CHECK(mismatches(data, e.at("bits")) == 0);
            ++with_bits;
        }
        ++entries;
    }
    CHECK(entries >= 200);
    CHECK(with_bits >= 100);
}

TEST_CASE("torch: normal_ over millions of values (fma points that change 1 value in 10^6)") {
    const auto v = load_vector("rng_torch.json");
    REQUIRE(v.at("normal_large").size() >= 2);
    for (const auto& e : v.at("normal_large")) {
        const auto n = e.at("n").get<std::size_t>();
        CAPTURE(n);
        Mt19937 g = manual_seed(e.at("seed"));
        std::vector<float> data(n);
        torch_normal(g, data.data(), n, e.at("mean").get<double>(), e.at("std").get<double>());
        CHECK(hash_of(data) == e.at("sha256").get<std::string>());
    }
}

TEST_CASE("torch: normal_ call sequences, scalar path below 16 and its cached value") {
    const auto v = load_vector("rng_torch.json");
    REQUIRE(!v.at("normal_sequence").empty());
    for (const auto& e : v.at("normal_sequence")) {
        const double mean = e.at("mean"), std = e.at("std");
        CAPTURE(e.dump().substr(0, 80));
        Mt19937 g = manual_seed(e.at("seed"));
        const auto sizes = e.at("sizes").get<std::vector<std::size_t>>();
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            CAPTURE(k);
            std::vector<float> data(sizes[k]);
            torch_normal(g, data.data(), data.size(), mean, std);
            const auto& want = e.at("bits").at(k);
            if (want.is_string()) {
                CHECK(hash_of(data) == want.get<std::string>());
            } else {
                CHECK(mismatches(data, want) == 0);
            }
        }
    }
}

TEST_CASE("torch: uniform_ bit for bit") {
    const auto v = load_vector("rng_torch.json");
    REQUIRE(!v.at("uniform").empty());
    for (const auto& e : v.at("uniform")) {
        const double from = e.at("from"), to = e.at("to");
        CAPTURE(e.at("seed").get<std::uint64_t>());
        CAPTURE(from);
        CAPTURE(to);
        Mt19937 g = manual_seed(e.at("seed"));
        std::vector<float> data(300);
        torch_uniform(g, data.data(), data.size(), from, to);
        CHECK(hash_of(data) == e.at("sha256").get<std::string>());
        CHECK(mismatches(std::vector<float>(data.begin(), data.begin() + 40), e.at("bits")) == 0);
    }
}

TEST_CASE("torch: torch_uniform01 is the low 24 bits over 2^24") {
    Mt19937 a(7), b(7);
    for (int i = 0; i < 100; ++i) CHECK(torch_uniform01(a) == static_cast<float>(b.next() & 0xFFFFFF) / 16777216.0f);
}

TEST_CASE("torch: every entry of the published torch_init.json") {
    const auto v = load_vector("torch_init.json");
    REQUIRE(v.size() >= 5);
    for (const auto& e : v) check_init(e);
}

TEST_CASE("torch: generated initial parameter hashes, depth 1, 2, 3, 8, and widths 84 to 1024") {
    const auto v = load_vector("rng_torch.json");
    REQUIRE(v.at("init").size() >= 20);
    int wide = 0;
    for (const auto& e : v.at("init")) {
        check_init(e);
        wide += e.value("width", 82) != 82;
    }
    CHECK(wide >= 15);  // every width entry of tools/make_vectors.py was checked
}

TEST_CASE("torch: seed report's initial parameters (seed 11, depth 2)") {
    const auto report =
        revgraph::test::read_json(revgraph::test::source_root() / "test" / "vectors" / "validation-report.json");
    const auto& meta = report.at("api_cli_smoke").at("metadata");
    nlohmann::json e;
    e["depth"] = meta.at("config").at("depth");
    e["seed"] = meta.at("config").at("seed");
    e["sha256"] = meta.at("initial_parameter_sha256");
    REQUIRE(e["depth"] == 2);
    REQUIRE(e["seed"] == 11);
    check_init(e);
}

TEST_CASE("torch: bad distribution parameters are rejected") {
    Mt19937 g(1);
    std::vector<float> data(20);
    CHECK_THROWS_AS(torch_normal(g, data.data(), data.size(), 0.0, -1.0), revgraph::Error);
    CHECK_THROWS_AS(torch_normal(g, data.data(), 3, 0.0, std::nan("")), revgraph::Error);
    CHECK_THROWS_AS(torch_uniform(g, data.data(), data.size(), 1.0, 0.0), revgraph::Error);
    CHECK_THROWS_AS(torch_uniform(g, data.data(), data.size(), -3e38, 3e38), revgraph::Error);
}
