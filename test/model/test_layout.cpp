#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/model/cost.hpp"
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

TEST_CASE("layout: at width W the branches are W/2 x W/2 and the head 10 x W") {
    const Layout w128(2, 128);
    CHECK(w128.width() == 128);
    CHECK(w128.half() == 64);
    CHECK(w128.total() == 4 * 64 * 64 + 10 * 128 + 10);
    REQUIRE(w128.views().size() == 6);
    for (int i = 0; i < 4; ++i) {
        CHECK(w128.views()[i].rows == 64);
        CHECK(w128.views()[i].cols == 64);
        CHECK(w128.views()[i].offset == static_cast<std::size_t>(i) * 4096);
    }
    CHECK(w128.views()[4].rows == 10);
    CHECK(w128.views()[4].cols == 128);
    CHECK(w128.head_bias_offset() == 4 * 4096 + 1280);
    const Layout w1024(1, 1024);
    CHECK(w1024.total() == 2 * 512 * 512 + 10 * 1024 + 10);
    CHECK(Layout(2, 82).total() == Layout(2).total());
    CHECK_THROWS_AS(Layout(2, 81), revgraph::Error);
    CHECK_THROWS_AS(Layout(2, 83), revgraph::Error);
    CHECK_THROWS_AS(Layout(2, 80), revgraph::Error);
}

TEST_CASE("cost: a task's model FLOPs, counted product by product for rev88 and grown quadratically in W") {
    using revgraph::model::task_flops;
    // rev88, one training example: forward 4 branch products of 41x41 and the 10x82 head, backward
    // the head's two 10x82 products and 4 branches x 3 products less block 0's two unused ones.
    const double forward = 4 * 1681 + 820, backward = 2 * 820 + (4 * 3 - 2) * 1681;
    CHECK(task_flops(2, 82, 1, 0, 1) == 2 * (forward + backward));
    CHECK(task_flops(2, 82, 0, 1, 1) == 2 * forward);
    CHECK(task_flops(2, 82, 10000, 10000, 2) == doctest::Approx(1.19e9).epsilon(0.01));
    // The branches dominate: doubling the width costs nearly four times as much.
    const double ratio = task_flops(2, 512, 10000, 10000, 2) / task_flops(2, 256, 10000, 10000, 2);
    CHECK(ratio > 3.9);
    CHECK(ratio < 4.0);
}
