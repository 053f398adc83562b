// The exact-integer band rule (engine/qualify/band.hpp) against values worked out by hand, none
// computed by code: the published protocol's own numbers (docs/spec.md §9), ceilings of exact
// rationals where a double would round across an integer (worked in the comments), and the
// edges (0 and 100 %, empty totals, floors that reach zero, int64's top).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "engine/error.hpp"
#include "engine/qualify/band.hpp"

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
