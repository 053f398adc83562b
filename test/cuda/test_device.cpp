// What the device questions answer on a machine without a GPU: CI machines have the toolkit's
// runtime but no NVIDIA driver, and users must read "no NVIDIA driver" there, not the runtime's
// "driver version is insufficient", which sends them upgrading a driver they do not have.
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/cuda/device.hpp"

TEST_CASE("cuda: a machine without the driver's library is said to have no NVIDIA driver") {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    const std::string said = revgraph::cuda::describe_device();
    INFO(said);
    if (driver == nullptr) {
        CHECK(said == "no NVIDIA driver (libcuda.so.1 not found)");
        CHECK(revgraph::cuda::device_count() == 0);
    } else {
        dlclose(driver);
        CHECK(said.find("no NVIDIA driver") == std::string::npos);
    }
}

// The rule `revgraph backends` and every GPU backend ask before a device is used (device.cu gives
// it nvcc's list of this build's architectures): whether a device runs this build's machine code
// or PTX, else the rebuild that makes it run.
TEST_CASE("cuda: a device this build has no kernels for is named with the rebuild that fixes it") {
    using revgraph::cuda::device_code_gap;
    const std::string a100 = "NVIDIA A100-SXM4-40GB (sm_80)";
    // The default build (machine code and PTX for sm_90) on an A100: no image it can load.
    CHECK(device_code_gap(80, {90}, a100) ==
          "this build has device code for sm_90, not for " + a100 + ": rebuild with -Dgpu_arch=80,90");
    CHECK(device_code_gap(80, {80, 90}, a100).empty());        // its own machine code
    CHECK(device_code_gap(86, {80, 90}, "an sm_86").empty());  // sm_80's machine code runs on 8.6
    CHECK(device_code_gap(90, {90}, "an H200").empty());
    CHECK(device_code_gap(100, {90}, "a B200").empty());    // sm_90's PTX, compiled by the driver
    CHECK(device_code_gap(89, {80, 90}, "an L4").empty());  // sm_80's machine code again
    CHECK(device_code_gap(75, {80, 90}, "a T4 (sm_75)") ==
          "this build has device code for sm_80, sm_90, not for a T4 (sm_75): rebuild with -Dgpu_arch=75,80,90");
    // Older than nvcc 13 builds: no rebuild to offer (and the oldest is meson_options.txt's).
    CHECK(device_code_gap(70, {80, 90}, "a V100 (sm_70)") ==
          "this build has device code for sm_80, sm_90, not for a V100 (sm_70), which is older than any "
          "architecture this toolchain builds (sm_75 is the oldest)");
    CHECK(device_code_gap(75, {90}, "a T4 (sm_75)").find("rebuild with -Dgpu_arch=75,90") != std::string::npos);
    CHECK(device_code_gap(87, {90}, "an Orin (sm_87)") ==
          "this build has device code for sm_90, not for an Orin (sm_87): rebuild with -Dgpu_arch=87,90");
}

TEST_CASE("cuda: the oldest architecture named is meson_options.txt's oldest gpu_arch choice") {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    REQUIRE(root != nullptr);
    std::ifstream f(std::string(root) + "/meson_options.txt");
    REQUIRE(f);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::size_t option = text.find("option('gpu_arch'");
    REQUIRE(option != std::string::npos);
    const std::size_t open = text.find("choices: [", option), close = text.find(']', open);
    REQUIRE(open != std::string::npos);
    int oldest = 1 << 30;
    for (std::size_t i = open; i < close; ++i)
        if (text[i] == '\'') {
            const std::size_t end = text.find('\'', i + 1);
            oldest = std::min(oldest, std::stoi(text.substr(i + 1, end - i - 1)));
            i = end;
        }
    CHECK(oldest == revgraph::cuda::kOldestBuildableArch);
}
