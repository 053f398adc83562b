// Which GPU backends `auto` may pick (engine/gpu_verified.hpp): the build's line parsed, and no GPU
// pick where there is no device. That the line is tools/gpu_check/verified.py's verdict on this tree
// is checked through `revgraph backends --json` (test/cli/cli_misc.py).
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/backends.hpp"
#include "engine/cuda/device.hpp"
#include "engine/gpu_verified.hpp"

using namespace revgraph;

TEST_CASE("gpu verdict: the build's line gives the backends fastest first, the report and the why") {
    const GpuVerification v = parse_gpu_verified(
        "cuda-fused,cuda;bench/results/2026-12-04-h200-abc.json;current and passed: the report (x);"
        "NVIDIA H200 (sm_90);90");
    CHECK(v.backends == std::vector<std::string>{"cuda-fused", "cuda"});
    CHECK(v.report == "bench/results/2026-12-04-h200-abc.json");
    CHECK(v.why == "current and passed: the report (x)");
    CHECK(v.device == "NVIDIA H200 (sm_90)");
    CHECK(v.gpu_arch == "90");
    // A verdict that names no GPU verifies nothing (the older three-field line included).
    CHECK(parse_gpu_verified("cuda-fused;r.json;current and passed;;90").backends.empty());
    CHECK(parse_gpu_verified("cuda-fused;r.json;current and passed").backends.empty());
    const GpuVerification none = parse_gpu_verified(";bench/results/r.json;unverified: engine/ and graphs/ changed");
    CHECK(none.backends.empty());
    CHECK(none.why == "unverified: engine/ and graphs/ changed");
    CHECK(parse_gpu_verified(";;no gpu-check report under bench/results").report.empty());
    const GpuVerification broken = parse_gpu_verified("unknown");  // vcs_tag's fallback
    CHECK(broken.backends.empty());
    CHECK(broken.why.find("no verdict") != std::string::npos);
    // This build's own line parses to the same shape.
    const std::string own = gpu_verified_tag();
    CHECK(std::count(own.begin(), own.end(), ';') == 4);
}

TEST_CASE("gpu verdict: without a CUDA device auto builds cpu whatever is verified") {
    if (cuda::device_count() != 0) return;  // test/cuda/test_gpu.cpp checks the pick on a device
    CHECK(make_backend("auto")->name() == "cpu");
    // What it says it does names the build's verified backends in order, or why there are none.
    const std::string& says = find_backend("auto")->reported;
    const GpuVerification& v = gpu_verification();
    if (v.backends.empty()) {
        CHECK(says == "cpu: no GPU backend has a passing gpu-check report current for this build (" + v.why + ")");
    } else {
        CHECK(says.rfind(v.backends.front() + (v.backends.size() > 1 ? ", then " + v.backends[1] : ""), 0) == 0);
        CHECK(says.find(" on a " + v.device + " (verified there by " + v.report) != std::string::npos);
    }
}
