#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/model/layout.hpp"

using revgraph::model::Layout;

TEST_CASE("layout: parameter count and name order follow docs/spec.md §3") {
    const Layout two(2);
    CHECK(two.total() == 7554);  // the published parameter_count at depth 2
    REQUIRE(two.views().size() == 6);
    CHECK(two.views()[0].name == "weights.0");
    CHECK(two.views()[3].name == "weights.3");
    CHECK(two.views()[4].name == "head.weight");
    CHECK(two.views()[4].offset == 4 * 41 * 41);
    CHECK(two.views()[4].size() == 820);
    CHECK(two.views()[5].name == "head.bias");
    CHECK(two.views()[5].offset + two.views()[5].size() == two.total());
    const Layout one(1);
    CHECK(one.total() == 2 * 1681 + 830);
    CHECK_THROWS_AS(Layout(0), revgraph::Error);
}
