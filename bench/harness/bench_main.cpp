// revgraph_bench: Google Benchmark over every backend this build can make here.
//
//   task/<backend>                       the complete rev88 task (PreparedTask::run)
//   phase/<backend>/{reset,normalize,epoch,predict}   the Backend phase methods, one at a time
//   sweep_depth/<backend>/depth:{1,2,4,8}             batch 128
//   sweep_batch/<backend>/batch:{8..1024}             depth 2
//   sweep_width/<backend>/width:{82,128,256,512}      depth 2, batch 128 (backends that run them)
//   throughput/<backend>/tasks:{1,2,4,..}             K rev88 tasks at once (seeds 11, 12, ...):
//                                                     GPU: each on its own stream; CPU: a thread each
//
// Every iteration's time is set manually (UseManualTime): the backend's own device time for the
// complete task where it has one (CUDA events), else the wall time of run() including its final
// synchronize. Preparation (PreparedTask's constructor: hashing, init draws, permutations,
// allocation, upload, graph capture) and warm-up runs happen before the timed loop. See
// bench/NOTES.md for what each number means and how to run it. This file: the command line, the
// context every report carries, and the run; the families are in families.hpp.
#include <cstddef>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/harness/families.hpp"
#include "bench/harness/gpu_hooks.hpp"
#include "bench/harness/options.hpp"
#include "bench/harness/task_cache.hpp"
#include "engine/cpu/cpu_name.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/io/sha256.hpp"
#include "engine/runtime_options.hpp"
#include "engine/version.hpp"

namespace revgraph::bench {
namespace {

void add_context(const std::vector<BackendInfo>& backends) {
    benchmark::AddCustomContext("revgraph_commit", git_commit());
    benchmark::AddCustomContext("revgraph_version", version());
    benchmark::AddCustomContext("cpu_model", cpu::cpu_name());
    benchmark::AddCustomContext("cuda_device", cuda::describe_device());
    std::string names;
    for (const auto& b : backends) names += (names.empty() ? "" : ",") + b.name;
    benchmark::AddCustomContext("backends", names);
    benchmark::AddCustomContext("task", "rev88 (depth 2, batch 128, 2 epochs) on " + data_description());
    const TaskInputs& in = task_inputs();
    benchmark::AddCustomContext("train_images_sha256", io::sha256_hex(in.train_images));
    benchmark::AddCustomContext("train_labels_sha256", io::sha256_hex(in.train_labels));
    benchmark::AddCustomContext("test_images_sha256", io::sha256_hex(in.test_images));
    benchmark::AddCustomContext("timing",
                                "manual: backend device time (CUDA events) where available, else wall "
                                "time of run() incl. synchronize; preparation and warm-up untimed");
    benchmark::AddCustomContext("flush_l2", options().flush_l2 ? flush_l2_description() : "off");
    benchmark::AddCustomContext("nvtx", cuda::kNvtxCompiledIn ? "ranges per task and phase" : "not compiled in");
    benchmark::AddCustomContext("programmatic_launch",
                                Runtime::options().programmatic_launch ? "on (cuda-fused)" : "off");
    benchmark::AddCustomContext("cluster_blocks", std::to_string(Runtime::options().fused_cluster_blocks));
}

// Google Benchmark writes --benchmark_out=FILE itself, as it goes: a run stopped part way (a
// signal, an error) would leave FILE truncated where a whole report was. So it writes a temporary
// beside FILE (the engine's AtomicFile: ".FILE.tmp-PID-HOST-*", a killed run's removed by the
// next), and only a run that measured something renames it over FILE.
// A target that is no regular file (/dev/stdout) is written as Google Benchmark writes it.
std::optional<io::AtomicFile> stage_benchmark_out(int argc, char** argv, std::string* staged_arg) {
    static const std::string flag = "--benchmark_out=";
    int at = -1;  // one at most (parse_options refuses a second)
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(flag, 0) == 0) at = i;
    if (at < 0 || std::string(argv[at]).size() == flag.size()) return std::nullopt;
    const std::string target = std::string(argv[at]).substr(flag.size());
    if (!io::non_regular_kind(target).empty()) return std::nullopt;
    std::optional<io::AtomicFile> staged;
    staged.emplace(target);
    *staged_arg = flag + staged->temp_path().string();
    argv[at] = staged_arg->data();
    return staged;
}

int benchmarks(int* argc, char** argv) {
    std::string staged_arg;
    std::optional<io::AtomicFile> out = stage_benchmark_out(*argc, argv, &staged_arg);
    benchmark::Initialize(argc, argv);
    if (benchmark::ReportUnrecognizedArguments(*argc, argv)) return 2;
    std::vector<std::string> notes;
    const auto backends = discover_backends(&notes);
    for (const auto& n : notes) std::cerr << "revgraph_bench: " << n << "\n";
    if (backends.empty()) {
        std::cerr << "revgraph_bench: no backend to measure\n";
        return 2;
    }
    for (const auto& b : backends) {
        register_task_benchmarks(b);
        register_phase_benchmarks(b);
        register_throughput_benchmarks(b);
    }
    add_context(backends);
    // A filter that matches nothing (a typo, an invalid regex, a GPU benchmark where there is no
    // GPU) measured nothing: an error, not a run that passed.
    const std::size_t ran = benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (ran == 0) {
        std::cerr << "revgraph_bench: error: no benchmark matched --benchmark_filter (the names: "
                     "--benchmark_list_tests=true; GPU benchmarks exist only where a GPU is)\n";
        return 2;
    }
    // Only a report replaces FILE: --benchmark_list_tests, say, writes none.
    std::error_code ec;
    if (out && std::filesystem::file_size(out->temp_path(), ec) > 0 && !ec) out->commit();
    return 0;
}

}  // namespace
}  // namespace revgraph::bench

int main(int argc, char** argv) {
    using namespace revgraph::bench;
    parse_options(&argc, argv);
    int status = 0;
    try {
        status = options().energy ? energy_mode() : benchmarks(&argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "revgraph_bench: error: " << e.what() << "\n";
        status = 1;
    }
    release_tasks();  // GPU buffers go before the CUDA context does
    release_gpu_hooks();
    return status;
}
