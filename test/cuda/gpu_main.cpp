// doctest main of the GPU suite: without a usable CUDA device there is nothing to test, and the
// suite says why and exits 77, which meson reports as SKIP.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "engine/cuda/device.hpp"

int main(int argc, char** argv) {
    if (revgraph::cuda::device_count() == 0) {
        std::printf("SKIP: GPU tests need a CUDA device: %s\n", revgraph::cuda::describe_device().c_str());
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
