// The complete task, at rev88's shape (task/) and swept over depth, batch size and width (sweep_*/). Every
// iteration's time is the backend's own device time where it has one (CUDA events), else the wall
// time of run() including its final synchronize; preparation and warm-up happen before the loop.
#include <string>
#include <vector>

#include "bench/harness/counters.hpp"
#include "bench/harness/families.hpp"
#include "bench/harness/gpu_hooks.hpp"
#include "bench/harness/options.hpp"
#include "engine/backends.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/model/cost.hpp"
#include "engine/timing.hpp"

namespace revgraph::bench {
namespace {

void bm_task(benchmark::State& state, const BackendInfo& b, int depth, int batch_size, int width = TaskConfig{}.width) {
    PreparedTask* task = nullptr;
    try {
        task = &prepared_task(b, depth, batch_size, width);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    const bool flush = options().flush_l2 && b.gpu;
    const std::string range = "task " + b.name + " depth " + std::to_string(depth) + " batch " +
                              std::to_string(batch_size) +
                              (width == TaskConfig{}.width ? "" : " width " + std::to_string(width));
    std::vector<double> seconds, cpu_seconds;
    bool device_timed = false;
    for (auto _ : state) {
        if (flush) flush_l2();
        const double cpu0 = thread_cpu_seconds();
        {
            cuda::NvtxRange r(range.c_str());
            task->run();
        }
        const double cpu1 = thread_cpu_seconds();
        device_timed = task->backend().last_run_device_seconds().has_value();
        const double s = task->last_run_seconds();
        state.SetIterationTime(s);
        seconds.push_back(s);
        if (!b.gpu) cpu_seconds.push_back(cpu1 - cpu0);
    }
    const auto& config = task->config();
    // Examples processed per task: every train image once per epoch, every query image once.
    const std::int64_t examples = task->inputs().train_count() * config.epochs + task->inputs().test_count();
    state.SetItemsProcessed(state.iterations() * examples);
    state.counters["examples_per_task"] = static_cast<double>(examples);
    // The model's arithmetic (engine/model/cost.hpp) over the median task time: how well a width
    // uses the processor, beside what it costs.
    const double flops = model::task_flops(config.depth, config.width, task->inputs().train_count(),
                                           task->inputs().test_count(), config.epochs);
    state.counters["gflop_per_task"] = flops / 1e9;
    if (!seconds.empty()) state.counters["gflop_per_second"] = flops / 1e9 / median(seconds);
    state.counters["device_timed"] = device_timed ? 1 : 0;
    report_shape(state, *task);
    report_times(state, seconds, cpu_seconds);
}

}  // namespace

void tune(benchmark::internal::Benchmark* bm, const BackendInfo& b, benchmark::TimeUnit unit) {
    bm->UseManualTime()->Unit(unit);
    if (b.gpu) bm->MinTime(options().gpu_min_time);
}

void register_task_benchmarks(const BackendInfo& b) {
    using benchmark::RegisterBenchmark;
    tune(RegisterBenchmark(("task/" + b.name).c_str(), bm_task, b, TaskConfig{}.depth, TaskConfig{}.batch_size,
                           TaskConfig{}.width),
         b, benchmark::kMillisecond);
    auto* depth = RegisterBenchmark(("sweep_depth/" + b.name).c_str(), [b](benchmark::State& s) {
        bm_task(s, b, static_cast<int>(s.range(0)), TaskConfig{}.batch_size);
    });
    depth->ArgName("depth")->Arg(1)->Arg(2)->Arg(4)->Arg(8);
    tune(depth, b, benchmark::kMillisecond);
    auto* batch = RegisterBenchmark(("sweep_batch/" + b.name).c_str(), [b](benchmark::State& s) {
        bm_task(s, b, TaskConfig{}.depth, static_cast<int>(s.range(0)));
    });
    batch->ArgName("batch")->RangeMultiplier(2)->Range(8, 1024);
    tune(batch, b, benchmark::kMillisecond);
    // Widths only where the backend runs them (Backend::runs_width: cuda-fused and the CPU backends
    // run every width).
    if (make_backend(b.request)->runs_width(128)) {
        auto* width = RegisterBenchmark(("sweep_width/" + b.name).c_str(), [b](benchmark::State& s) {
            bm_task(s, b, TaskConfig{}.depth, TaskConfig{}.batch_size, static_cast<int>(s.range(0)));
        });
        width->ArgName("width")->Arg(82)->Arg(128)->Arg(256)->Arg(512);
        tune(width, b, benchmark::kMillisecond);
    }
}

}  // namespace revgraph::bench
