#include "bench/harness/counters.hpp"

#include <algorithm>
#include <cstdint>

namespace revgraph::bench {

void report_times(benchmark::State& state, const std::vector<double>& seconds, const std::vector<double>& cpu_seconds) {
    if (seconds.empty()) return;
    const Summary s = revgraph::summarize(seconds);  // the times' summary, not bench::summarize of energy
    state.counters["median_ms"] = s.median * 1e3;
    state.counters["min_ms"] = s.min * 1e3;
    state.counters["max_ms"] = s.max * 1e3;
    if (!cpu_seconds.empty()) state.counters["thread_cpu_median_ms"] = median(cpu_seconds) * 1e3;
}

void report_shape(benchmark::State& state, PreparedTask& task) {
    const auto& config = task.config();
    const std::int64_t full_batch = std::min<std::int64_t>(config.batch_size, task.inputs().train_count());
    const auto bytes = static_cast<double>(task.backend().retained_core_bytes());
    state.counters["retained_core_bytes"] = bytes;
    state.counters["core_bytes_per_example"] = bytes / static_cast<double>(full_batch);
    state.counters["retained_core_states"] = task.backend().retained_core_states();
    state.counters["depth"] = config.depth;
    state.counters["width"] = config.width;
    state.counters["batch_size"] = config.batch_size;
    state.SetLabel(task.backend().name() + " | " + task.backend().device());
}

}  // namespace revgraph::bench
