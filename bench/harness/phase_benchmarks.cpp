// The Backend phase methods one at a time (phase/): reset, normalise, one epoch, predict.
#include <string>
#include <vector>

#include "bench/harness/counters.hpp"
#include "bench/harness/families.hpp"
#include "bench/harness/gpu_hooks.hpp"
#include "bench/harness/options.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/timing.hpp"

namespace revgraph::bench {
namespace {

enum class Phase { reset, normalize, epoch, predict };

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::reset: return "reset";
        case Phase::normalize: return "normalize";
        case Phase::epoch: return "epoch";
        case Phase::predict: return "predict";
    }
    return "?";
}

// One Backend phase at a time, wall time around the call and a synchronize() (on a GPU this
// includes launch and synchronisation overhead that a captured complete task does not pay).
void bm_phase(benchmark::State& state, const BackendInfo& b, Phase phase) {
    PreparedTask* task = nullptr;
    try {
        task = &prepared_task(b, TaskConfig{}.depth, TaskConfig{}.batch_size);
        task->run();  // trained parameters and normalised rows, as predict() expects them
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return;
    }
    Backend& backend = task->backend();
    const bool flush = options().flush_l2 && b.gpu;
    const std::string range = std::string("phase ") + phase_name(phase) + " " + b.name;
    std::vector<double> seconds, cpu_seconds;
    for (auto _ : state) {
        if (phase == Phase::epoch) {  // every epoch starts from the seed's parameters (untimed)
            backend.reset();
            backend.normalize();
            backend.synchronize();
        }
        if (flush) flush_l2();
        const double cpu0 = thread_cpu_seconds();
        const auto t0 = Clock::now();
        {
            cuda::NvtxRange r(range.c_str());
            switch (phase) {
                case Phase::reset: backend.reset(); break;
                case Phase::normalize: backend.normalize(); break;
                case Phase::epoch: backend.epoch(0); break;
                case Phase::predict: backend.predict(); break;
            }
            backend.synchronize();
        }
        const double s = seconds_since(t0);
        const double cpu1 = thread_cpu_seconds();
        state.SetIterationTime(s);
        seconds.push_back(s);
        if (!b.gpu) cpu_seconds.push_back(cpu1 - cpu0);
    }
    const std::int64_t n = task->inputs().train_count(), q = task->inputs().test_count();
    const std::int64_t items = phase == Phase::epoch       ? n
                               : phase == Phase::predict   ? q
                               : phase == Phase::normalize ? n + q
                                                           : 0;
    if (items) state.SetItemsProcessed(state.iterations() * items);
    report_shape(state, *task);
    report_times(state, seconds, cpu_seconds);
}

}  // namespace

void register_phase_benchmarks(const BackendInfo& b) {
    for (Phase p : {Phase::reset, Phase::normalize, Phase::epoch, Phase::predict})
        tune(benchmark::RegisterBenchmark(("phase/" + b.name + "/" + phase_name(p)).c_str(), bm_phase, b, p), b,
             p == Phase::reset ? benchmark::kMicrosecond : benchmark::kMillisecond);
}

}  // namespace revgraph::bench
