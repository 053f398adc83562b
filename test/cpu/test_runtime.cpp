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
    CHECK(Runtime::options() == b);  // a refused change leaves the options alone

    RuntimeOptions bad;
    bad.device = -1;
    Runtime::reset_for_tests();
    CHECK_THROWS_WITH_AS(Runtime::configure(bad), doctest::Contains("device must be >= 0"), Error);
    CHECK(Runtime::options() == RuntimeOptions{});
    Runtime::reset_for_tests();
}
