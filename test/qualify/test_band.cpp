// The exact-integer band rule (engine/qualify/band.hpp) against values worked out by hand, none
// computed by code: the published protocol's own numbers (docs/spec.md §9), ceilings of exact
// rationals where a double would round across an integer (worked in the comments), and the
// edges (0 and 100 %, empty totals, floors that reach zero, int64's top); and the verdict on counts.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/error.hpp"
#include "engine/qualify/band.hpp"
#include "engine/qualify/protocol.hpp"

using revgraph::Error;
using revgraph::qualify::Band;

TEST_CASE("the published protocol: 96,800 of 110,000 and 8,650 per draw at 12 %") {
    const Band b = Band::parse("12");
    CHECK(b.text() == "12");
    CHECK(b.percent() == 12.0);
    CHECK(b.required_correct(110000) == 96800);
    CHECK(b.per_draw_floor(10000) == 8650);
    CHECK(b.required_correct(20000) == 17600);
}

TEST_CASE("ceilings exact where floats are not") {
    // 100 at 30 %: 70 exactly (0.7 * 100 is 70.00000000000001 in doubles, whose ceil is 71).
    CHECK(Band::parse("30").required_correct(100) == 70);
    // 7 at 12.5 %: 7 * 87.5 / 100 = 6.125 -> 7.
    CHECK(Band::parse("12.5").required_correct(7) == 7);
    // 200 at 12 %: 176 exactly; 201: 176.88 -> 177.
    CHECK(Band::parse("12").required_correct(200) == 176);
    CHECK(Band::parse("12").required_correct(201) == 177);
    // 7.5 %: 110,000 * 92.5 / 100 = 101,750 exactly; 10,000 * (100 - 9) / 100 = 9,100.
    CHECK(Band::parse("7.5").required_correct(110000) == 101750);
    CHECK(Band::parse("7.5").per_draw_floor(10000) == 9100);
    // Nine decimals: 1 * (100 - 0.000000001) / 100 -> 1; 10^9 * 99.999999999 / 100 = 999,999,999.99 -> 10^9.
    CHECK(Band::parse("0.000000001").required_correct(1) == 1);
    CHECK(Band::parse("0.000000001").required_correct(1000000000) == 1000000000);
    CHECK(Band::parse("0.000000001").required_correct(100000000000) == 99999999999);
}

TEST_CASE("edges: 0 %, 100 %, empty totals, floors that reach zero") {
    CHECK(Band::parse("0").required_correct(110000) == 110000);
    CHECK(Band::parse("100").required_correct(110000) == 0);
    CHECK(Band::parse("100.000000000").required_correct(5) == 0);
    CHECK(Band::parse("12").required_correct(0) == 0);
    CHECK(Band::parse("98.5").per_draw_floor(10000) == 0);
    CHECK(Band::parse("99").per_draw_floor(10000) == 0);
    CHECK(Band::parse("98.4").per_draw_floor(10000) == 10);
    // A total near int64's top stays exact (the product is 128-bit).
    const std::int64_t big = INT64_MAX;
    CHECK(Band::parse("0").required_correct(big) == big);
    CHECK(Band::parse("50").required_correct(big) == big / 2 + 1);  // odd: ceil(big / 2)
    CHECK_THROWS_AS(Band::parse("12").required_correct(-1), Error);
}

TEST_CASE("only plain decimal percentages in 0..100") {
    for (const std::string bad : {"", " 12", "12 ", "+12", "-1", "1e1", "12.", ".5", "0x10", "100.000000001", "101",
                                  "1000", "12.0000000001", "twelve", "12,5", "nan", "inf"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(Band::parse(bad), Error);
    }
    try {
        Band::parse("x", "--band");
        FAIL("no error");
    } catch (const Error& e) { CHECK(std::string(e.what()).rfind("--band must be a decimal number", 0) == 0); }
    CHECK(Band::parse("007.50").nano_percent() == 7500000000);
    CHECK(Band::parse("7.5").text() == "7.5");
}

// The verdict on bare counts (engine/qualify/protocol.hpp), qualify's and revgraph.band_verdict's.
TEST_CASE("the verdict: the total and every draw's floor, each draw against its own total") {
    using revgraph::qualify::verdict_of_counts;
    const Band b12 = Band::parse("12");
    const std::vector<std::int64_t> tenk(11, 10000);
    // 11 draws of 10,000 at 12 %: 96,800 in all, no draw below 8,650 (docs/spec.md §9's numbers).
    std::vector<std::int64_t> at(11, 8815);
    at[0] = 8650;  // 8,650 + 10 x 8,815 = 96,800
    auto v = verdict_of_counts(at, tenk, b12);
    CHECK(v.passed());
    CHECK(v.total_correct == 96800);
    CHECK(v.total_count == 110000);
    CHECK(v.required_correct == 96800);
    CHECK(v.per_draw_floor == 8650);
    at[10] -= 1;  // one short of the total
    v = verdict_of_counts(at, tenk, b12);
    CHECK_FALSE(v.meets_accuracy_target);
    CHECK(v.per_draw_floor_met);
    CHECK_FALSE(v.passed());
    std::vector<std::int64_t> low(11, 9900);
    low[1] = 8649;  // a total far above 96,800, one draw one below the floor
    v = verdict_of_counts(low, tenk, b12);
    CHECK(v.meets_accuracy_target);
    CHECK(v.draws_below_floor == std::vector<int>{2});
    CHECK_FALSE(v.passed());
    // Draws of their own sizes at 7.5 %: 110 images need ceil(101.75) = 102; a draw of 10 needs
    // ceil(9.1) = 10, one of 100 needs 91 (9 points below the band), the floor reported the larger's.
    v = verdict_of_counts({91, 9}, {100, 10}, Band::parse("7.5"));
    CHECK(v.required_correct == 102);
    CHECK(v.per_draw_floor == 91);
    CHECK(v.draws_below_floor == std::vector<int>{2});
    // Counts no draw can have.
    CHECK_THROWS_AS(verdict_of_counts({}, {}, b12), Error);
    CHECK_THROWS_AS(verdict_of_counts({1, 2}, {10}, b12), Error);
    CHECK_THROWS_AS(verdict_of_counts({11}, {10}, b12), Error);
    CHECK_THROWS_AS(verdict_of_counts({-1}, {10}, b12), Error);
    CHECK_THROWS_AS(verdict_of_counts({0}, {0}, b12), Error);
    CHECK_THROWS_AS(verdict_of_counts({0, 0}, {INT64_MAX, 1}, b12), Error);  // totals past int64
}

TEST_CASE("the counts a band's numbers are asked for: a draw of at least 1, a total of at least one draw") {
    using revgraph::qualify::check_band_counts;
    CHECK_NOTHROW(check_band_counts(110000, 10000));
    CHECK_NOTHROW(check_band_counts(10000, 10000));  // one draw
    CHECK_NOTHROW(check_band_counts(1, 1));
    CHECK_THROWS_AS(check_band_counts(10, 0), Error);
    CHECK_THROWS_AS(check_band_counts(9999, 10000), Error);
    CHECK_THROWS_AS(check_band_counts(0, 1), Error);
    CHECK_THROWS_AS(check_band_counts(5, -1), Error);
}
