// What the device questions answer on a machine without a GPU: CI machines have the toolkit's
// runtime but no NVIDIA driver, and users must read "no NVIDIA driver" there, not the runtime's
// "driver version is insufficient", which sends them upgrading a driver they do not have.
#include <doctest/doctest.h>
#include <dlfcn.h>

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
