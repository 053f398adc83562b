// gpu_validation [--replays N] [--backend cuda|cuda-fused] [--pdl] [--output FILE]: docs/spec.md §8's GPU replay
// validation on its own, as JSON (validate::gpu_validation), for tools/gpu-check and for anyone on a
// GPU machine. Exit status 0 when it passed, 1 when it failed, 77 when there is no usable GPU.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "engine/cuda/cublaslt_loader.hpp"
#include "engine/cuda/device.hpp"
#include "engine/runtime_options.hpp"
#include "engine/validate/gpu_replay.hpp"

int main(int argc, char** argv) {
    int replays = 100;
    std::string output, backend = "cuda";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--replays" && i + 1 < argc)
            replays = std::atoi(argv[++i]);
        else if (a == "--output" && i + 1 < argc)
            output = argv[++i];
        else if (a == "--backend" && i + 1 < argc)
            backend = argv[++i];
        else if (a == "--pdl") {  // validate the fused kernels launched with Programmatic Dependent Launch
            revgraph::RuntimeOptions o = revgraph::Runtime::options();
            o.programmatic_launch = true;
            revgraph::Runtime::configure(o);
        } else {
            std::cerr << "usage: gpu_validation [--replays N] [--backend cuda|cuda-fused] [--pdl] [--output FILE]\n";
            return 2;
        }
    }
    if (revgraph::cuda::device_count() == 0) {
        std::cerr << "gpu_validation: SKIP: " << revgraph::cuda::describe_device() << "\n";
        return 77;
    }
    try {
        auto report = revgraph::validate::gpu_validation(replays, backend);
        // Which cuBLASLt file the products ran on (the toolkit's, or PyTorch's copy): only the
        // cuBLASLt path loads it.
        if (backend == "cuda") report["cublaslt_library"] = revgraph::cuda::cublaslt_library_path();
        const std::string text = report.dump(2) + "\n";
        if (output.empty())
            std::cout << text;
        else
            std::ofstream(output) << text;
        const bool passed = report["passed"].is_boolean() && report["passed"].get<bool>();
        std::cerr << "gpu_validation: " << (passed ? "passed" : "FAILED") << "\n";
        return passed ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "gpu_validation: error: " << e.what() << "\n";
        return 1;
    }
}
