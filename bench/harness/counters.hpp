#pragma once
// The counters every benchmark family reports besides Google Benchmark's own time.
#include <vector>

#include <benchmark/benchmark.h>

#include "engine/stats.hpp"  // median, summarize
#include "engine/task.hpp"

namespace revgraph::bench {

// Median, fastest and slowest iteration of this call, and the thread's CPU time per iteration
// (for CPU backends: less disturbed than wall time by other processes on a shared machine).
void report_times(benchmark::State& state, const std::vector<double>& seconds, const std::vector<double>& cpu_seconds);
// The task's shape (depth, batch) and its retained core state, and backend | device as the label.
void report_shape(benchmark::State& state, PreparedTask& task);

}  // namespace revgraph::bench
