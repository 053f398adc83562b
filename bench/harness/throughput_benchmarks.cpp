// K tasks at once (throughput/): on a GPU each on its own stream, on the CPU a thread each.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness/counters.hpp"
#include "bench/harness/families.hpp"
#include "bench/harness/gpu_hooks.hpp"
#include "bench/harness/options.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/parallel_for.hpp"
#include "engine/timing.hpp"

namespace revgraph::bench {
namespace {

// K tasks at once through PreparedTask::run_together: wall time from the first launch to the last
// task done (every task's results are its own run()'s bytes; the suites test that).
void bm_throughput(benchmark::State& state, const BackendInfo& b) {
    const int count = static_cast<int>(state.range(0));
    const std::vector<PreparedTask*>* tasks = nullptr;
    try {
        tasks = &prepared_tasks(b, count);
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    const bool flush = options().flush_l2 && b.gpu;
    const std::string range = "throughput " + b.name + " tasks " + std::to_string(count);
    std::vector<double> seconds;
    for (auto _ : state) {
        if (flush) flush_l2();
        double s = 0;
        {
            cuda::NvtxRange r(range.c_str());
            s = PreparedTask::run_together(*tasks);
        }
        state.SetIterationTime(s);
        seconds.push_back(s);
    }
    PreparedTask& first = *tasks->front();
    const std::int64_t examples = first.inputs().train_count() * first.config().epochs + first.inputs().test_count();
    state.SetItemsProcessed(state.iterations() * examples * count);
    state.counters["tasks"] = count;
    report_shape(state, first);
    report_times(state, seconds, {});
    const double task_seconds = median(seconds);
    if (task_seconds > 0) {
        state.counters["tasks_per_second"] = count / task_seconds;
        state.counters["ms_per_task"] = task_seconds * 1e3 / count;
    }
}

}  // namespace

void register_throughput_benchmarks(const BackendInfo& b) {
    // GPU: up to 16 streams; CPU: up to one task per CPU this process may use.
    auto* many = benchmark::RegisterBenchmark(("throughput/" + b.name).c_str(), bm_throughput, b);
    const int most = b.gpu ? 16 : static_cast<int>(usable_cpus());
    many->ArgName("tasks");
    for (int k = 1; k <= most; k *= 2) many->Arg(k);
    tune(many, b, benchmark::kMillisecond);
}

}  // namespace revgraph::bench
