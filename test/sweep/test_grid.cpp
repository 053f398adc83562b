// Grid parsing, point order and shards (engine/sweep/grid.hpp), against configs and index sets
// the test builds itself with plain nested loops.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/sweep/grid.hpp"

using revgraph::TaskConfig;
using namespace revgraph::sweep;

TEST_CASE("grid: values, ranges, and the key's own validation") {
    CHECK(parse_axis("seed=1..4,9").values == std::vector<std::string>{"1", "2", "3", "4", "9"});
    CHECK(parse_axis("depth=3").values == std::vector<std::string>{"3"});
    CHECK(parse_axis("learning_rate=0.05,0.1").values == std::vector<std::string>{"0.05", "0.1"});
    CHECK(parse_axis("batch_size=7..7").values == std::vector<std::string>{"7"});
    CHECK(parse_axis("seed=18446744073709551614..18446744073709551615").values.size() == 2);
    CHECK(parse_axis("epochs=0..2").values.size() == 3);
    for (const char* bad : {"seed", "=1", "seed=", "seed=1,,2", "bogus=1", "alpha=0.1..0.5", "seed=3..1", "seed=1..x",
                            "seed=-1", "depth=0", "depth=1..1025", "momentum=1", "learning_rate=abc",
                            "learning_rate=0.1,0.10", "seed=1..3,2", "seed=0..18446744073709551615"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_axis(bad), UsageProblem);
    }
}

TEST_CASE("grid: the first key varies slowest, the last fastest; unswept keys keep the base") {
    TaskConfig base;
    base.epochs = 1;
    const Grid g = Grid::parse(base, {"seed=1..3", "depth=1,2", "learning_rate=0.05,0.1"});
    REQUIRE(g.size() == 12);
    std::size_t i = 0;
    for (std::uint64_t seed : {1, 2, 3})
        for (int depth : {1, 2})
            for (double lr : {0.05, 0.1}) {
                const TaskConfig c = g.point(i++);
                CHECK(c.seed == seed);
                CHECK(c.depth == depth);
                CHECK(c.learning_rate == lr);
                CHECK(c.epochs == 1);
                CHECK(c.batch_size == base.batch_size);
            }
    CHECK_THROWS(g.point(12));
    CHECK(Grid(base).size() == 1);
    CHECK(Grid::parse(base, {}).point(0).to_json() == base.to_json());
    CHECK_THROWS_AS(Grid::parse(base, {"seed=1,2", "seed=3"}), UsageProblem);
    CHECK_THROWS_AS(Grid::parse(base, {"seed=1..10000", "depth=1..1001"}), UsageProblem);  // 10^7 + 10^4 points
}

TEST_CASE("shards: I/N, round robin, every point in exactly one shard") {
    CHECK(parse_shard("0/1").count == 1);
    const Shard s = parse_shard("1/4");
    CHECK(s.index == 1);
    CHECK(s.count == 4);
    CHECK(shard_points(10, s) == std::vector<std::size_t>{1, 5, 9});
    CHECK(shard_points(2, parse_shard("3/4")).empty());
    for (const char* bad : {"4/4", "1/0", "a/b", "1", "/4", "1/", "-1/4", "1/4/5", " 1/4"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_shard(bad), UsageProblem);
    }
    for (std::size_t n : {1, 3, 7}) {
        std::multiset<std::size_t> all;
        for (std::size_t i = 0; i < n; ++i)
            for (auto p : shard_points(20, Shard{i, n})) {
                CHECK(Shard{i, n}.contains(p));
                all.insert(p);
            }
        CHECK(all.size() == 20);
        CHECK(std::set<std::size_t>(all.begin(), all.end()).size() == 20);
    }
}

TEST_CASE("grid digest: one for every spelling of one grid, another for any other grid") {
    TaskConfig base;
    base.epochs = 1;
    const auto digest = [&](const TaskConfig& b, const std::vector<std::string>& specs) {
        return Grid::parse(b, specs).digest();
    };
    const std::string d = digest(base, {"seed=1..3", "learning_rate=0.1,0.2"});
    CHECK(d.size() == 64);
    // The same points, spelled otherwise: a range listed, a value with a trailing zero, and a base
    // whose value of a swept key the grid replaces anyway.
    CHECK(digest(base, {"seed=1,2,3", "learning_rate=0.10,0.2"}) == d);
    TaskConfig other_seed = base;
    other_seed.seed = 77;
    CHECK(digest(other_seed, {"seed=1..3", "learning_rate=0.1,0.2"}) == d);
    // Other points: other values, as many of them (what a merge could not tell by the count), another
    // order of values or of axes, or another value of an unswept key.
    CHECK(digest(base, {"seed=11..13", "learning_rate=0.1,0.2"}) != d);
    CHECK(digest(base, {"seed=3,2,1", "learning_rate=0.1,0.2"}) != d);
    CHECK(digest(base, {"learning_rate=0.1,0.2", "seed=1..3"}) != d);
    TaskConfig two_epochs = base;
    two_epochs.epochs = 2;
    CHECK(digest(two_epochs, {"seed=1..3", "learning_rate=0.1,0.2"}) != d);
    CHECK(Grid(base).digest() == digest(base, {}));
    CHECK(Grid(base).digest() != Grid(two_epochs).digest());
}
