// The process-wide GPU options (engine/runtime_options.hpp): free to change until the GPU is
// initialised, fixed afterwards (docs/spec.md §8's "late initialisation rejected"). Host-only rules, so
// they are tested here; test/cuda/test_gpu.cpp checks that a real first GPU task fixes them.
#include <doctest/doctest.h>

#include "engine/error.hpp"
#include "engine/runtime_options.hpp"

using namespace revgraph;

TEST_CASE("runtime options: changeable before initialisation, fixed after it") {
    Runtime::reset_for_tests();
    RuntimeOptions a;
    a.device = 1;
    a.cublaslt_workspace_bytes = std::size_t(4) << 20;
    a.programmatic_launch = false;  // not the default
    Runtime::configure(a);
    RuntimeOptions b = a;
    b.programmatic_launch = true;
    Runtime::configure(b);  // not initialised yet: anything valid goes
    CHECK(Runtime::options() == b);
    CHECK_FALSE(Runtime::initialized());

    // A device that cannot be opened fixes nothing.
    CHECK_THROWS_AS(Runtime::initialize([](const RuntimeOptions&) { throw Error("no such device"); }), Error);
    CHECK_FALSE(Runtime::initialized());
    int opened = -1;
    CHECK(Runtime::initialize([&](const RuntimeOptions& o) { opened = o.device; }) == b);
    CHECK(opened == 1);
    CHECK(Runtime::initialized());
    CHECK_NOTHROW(Runtime::configure(b));  // the options in force, again
    RuntimeOptions other = b;
    other.programmatic_launch = false;
    CHECK_THROWS_WITH_AS(Runtime::configure(other), doctest::Contains("programmatic launch on"), Error);
    other = b;
    other.device = 0;
    CHECK_THROWS_WITH_AS(Runtime::configure(other), doctest::Contains("already initialised with device 1"), Error);
    other = b;
    other.cublaslt_workspace_bytes += 1;
    CHECK_THROWS_WITH_AS(Runtime::configure(other), doctest::Contains("4194304-byte cuBLASLt workspace"), Error);
    other = b;
    other.fused_cluster_blocks = 8;
    CHECK_THROWS_AS(Runtime::configure(other), Error);
    CHECK(Runtime::options() == b);  // a refused change leaves the options alone

    RuntimeOptions bad;
    bad.fused_cluster_blocks = 17;
    Runtime::reset_for_tests();
    CHECK_THROWS_WITH_AS(Runtime::configure(bad), doctest::Contains("cluster blocks must be in 0..16, got 17"), Error);
    bad = RuntimeOptions{};
    bad.device = -1;
    Runtime::reset_for_tests();
    CHECK_THROWS_WITH_AS(Runtime::configure(bad), doctest::Contains("device must be in 0..1023, got -1"), Error);
    CHECK(Runtime::options() == RuntimeOptions{});
    Runtime::reset_for_tests();
}

TEST_CASE("runtime options: cuda-fused's cluster blocks, 0..16") {
    CHECK(RuntimeOptions{}.fused_cluster_blocks == 0);  // two kernels a step until a GPU report says otherwise
    CHECK(RuntimeOptions::cluster_blocks_from("0", "cluster_blocks") == 0);
    CHECK(RuntimeOptions::cluster_blocks_from("16", "cluster_blocks") == 16);
    CHECK_THROWS_WITH_AS(RuntimeOptions::cluster_blocks_from("17", "option --cluster-blocks"),
                         "option --cluster-blocks must be in 0..16, got 17", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::cluster_blocks_from("x", "cluster_blocks"),
                         "cluster_blocks needs an integer, got 'x'", Error);
    // Once initialised, a task's options say which cluster it runs on.
    Runtime::reset_for_tests();
    RuntimeOptions c;
    c.fused_cluster_blocks = 8;
    Runtime::configure(c);
    Runtime::initialize([](const RuntimeOptions&) {});
    RuntimeOptions off = c;
    off.fused_cluster_blocks = 0;
    CHECK_THROWS_WITH_AS(Runtime::configure(off), doctest::Contains("epochs on clusters of 8 blocks"), Error);
    Runtime::reset_for_tests();
}

TEST_CASE("runtime options: the ranges of device and workspace, written once") {
    // Edges of each range, and numbers of any size (a Python int is passed as its decimal text).
    CHECK(RuntimeOptions::device_from("0", "device") == 0);
    CHECK(RuntimeOptions::device_from("1023", "device") == 1023);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("1024", "device"), "device must be in 0..1023, got 1024", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("-1", "option --device"),
                         "option --device must be in 0..1023, got -1", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("99999999999999999999999", "device"),
                         "device must be in 0..1023, got 99999999999999999999999", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("1.5", "device"), "device needs an integer, got '1.5'", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("", "device"), "device needs an integer, got ''", Error);
    CHECK_THROWS_WITH_AS(RuntimeOptions::device_from("+1", "device"), "device needs an integer, got '+1'", Error);
    CHECK(RuntimeOptions::workspace_bytes_from("4294967296", "w") == (std::size_t(1) << 32));
    CHECK(RuntimeOptions::workspace_bytes_from("0", "w") == 0);
    CHECK_THROWS_WITH_AS(RuntimeOptions::workspace_bytes_from("4294967297", "w"),
                         "w must be in 0..4294967296, got 4294967297", Error);
    // check() holds a whole set of options to the same ranges.
    RuntimeOptions o;
    CHECK_NOTHROW(o.check());
    o.device = 1024;
    CHECK_THROWS_WITH_AS(o.check(), "runtime: device must be in 0..1023, got 1024", Error);
    o.device = 1023;
    o.cublaslt_workspace_bytes = (std::size_t(1) << 32) + 1;
    CHECK_THROWS_WITH_AS(o.check(), doctest::Contains("must be in 0..4294967296"), Error);
}
