// gpu_validation [--replays N] [--cold-replays N] [--backend cuda|cuda-fused] [--pdl|--no-pdl]
//                [--cluster-blocks N] [--input DRAW.npz] [--config FILE] [--set KEY=VALUE ...] [--output FILE]:
// docs/spec.md §8's GPU replay validation on its own, as JSON (validate::gpu_validation), for
// tools/gpu-check and for anyone on a GPU machine. --input replays rev88 on that task archive (the
// file every contender of gpu-check's timing reads); --cold-replays times N more replays, each
// after an L2 flush (engine/cuda/l2_flush.hpp). --config/--set replay that config instead of rev88
// (tools/gpu-check's call 5: the frontier's shapes), read as `revgraph run` reads them
// (engine/config_from.hpp), before anything touches the GPU. Exit status 0 when it passed, 1 when it
// failed or could not run, 2 on a bad command line or config (one line), 77 when there is no usable GPU.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/config_from.hpp"
#include "engine/cuda/cublaslt_loader.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/l2_flush.hpp"
#include "engine/task_files.hpp"
#include "engine/runtime_options.hpp"
#include "engine/validate/gpu_replay.hpp"

namespace {

constexpr const char* kUsage =
    "usage: gpu_validation [--replays N] [--cold-replays N] [--backend cuda|cuda-fused] [--pdl|--no-pdl] "
    "[--cluster-blocks N] [--input DRAW.npz] [--config FILE] [--set KEY=VALUE ...] [--output FILE]";

[[noreturn]] void usage_error(const std::string& why) {
    std::cerr << "gpu_validation: error: " << why << " (" << kUsage << ")\n";
    std::exit(2);
}

int count(const std::string& option, const std::string& text, int min) {
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < min || v > 1000000)
        usage_error(option + " expects a whole number >= " + std::to_string(min) + ", got '" + text + "'");
    return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
    revgraph::validate::GpuValidationOptions options;
    std::string output, input;
    std::optional<std::string> config_file;
    std::vector<std::string> sets;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            std::cout << kUsage << "\n";
            return 0;
        }
        if (a == "--replays")
            options.replay.replays = count(a, value(), 1);
        else if (a == "--cold-replays")
            options.replay.cold_replays = count(a, value(), 0);
        else if (a == "--output")
            output = value();
        else if (a == "--input")
            input = value();
        else if (a == "--config")
            config_file = value();
        else if (a == "--set")
            sets.push_back(value());
        else if (a == "--backend") {
            // Named before the device is looked for: a typo is an error on any machine, not a SKIP.
            options.backend = value();
            const revgraph::BackendRow* row = revgraph::find_backend(options.backend);
            if (row == nullptr || !row->gpu) {
                std::string gpu;  // the table's GPU rows, as it names them
                for (const revgraph::BackendRow& r : revgraph::backend_table())
                    if (r.gpu) gpu += (gpu.empty() ? "" : " or ") + r.requested;
                usage_error("--backend must be a GPU backend, " + gpu + ", got '" + options.backend + "'");
            }
        } else if (a == "--pdl" || a == "--no-pdl") {  // Programmatic Dependent Launch (the default), or plain
            revgraph::RuntimeOptions o = revgraph::Runtime::options();
            o.programmatic_launch = a == "--pdl";
            revgraph::Runtime::configure(o);
        } else if (a == "--cluster-blocks") {  // cuda-fused's epochs on a thread-block cluster (0: two kernels a step)
            revgraph::RuntimeOptions o = revgraph::Runtime::options();
            try {
                o.fused_cluster_blocks = revgraph::RuntimeOptions::cluster_blocks_from(value(), "--cluster-blocks");
            } catch (const revgraph::Error& e) { usage_error(e.what()); }
            revgraph::Runtime::configure(o);
        } else {
            usage_error("unknown argument '" + a + "'");
        }
    }
    if (config_file || !sets.empty()) {  // the engine's one reader; a bad config is refused on any machine
        try {
            options.config = revgraph::config_from(config_file, sets);
        } catch (const revgraph::SetSyntaxError& e) { usage_error(e.what()); } catch (const std::exception& e) {
            std::cerr << "gpu_validation: error: " << e.what() << "\n";
            return 2;
        }
    }
    try {
        if (!input.empty()) {  // read first: a bad archive is an error on any machine
            options.inputs = revgraph::read_task_inputs(input);
            options.inputs_source = input;
        }
        if (revgraph::cuda::device_count() == 0) {
            std::cerr << "gpu_validation: SKIP: " << revgraph::cuda::describe_device() << "\n";
            return 77;
        }
        if (options.replay.cold_replays > 0) options.replay.before_cold = [] { revgraph::cuda::flush_l2(); };
        auto report = revgraph::validate::gpu_validation(options);
        if (options.replay.cold_replays > 0) report["l2_flush"] = revgraph::cuda::flush_l2_description();
        revgraph::cuda::release_l2_flush();
        // Which cuBLASLt file the products ran on (the toolkit's, or PyTorch's copy): only the
        // cuBLASLt path loads it.
        if (options.backend == "cuda") report["cublaslt_library"] = revgraph::cuda::cublaslt_library_path();
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
