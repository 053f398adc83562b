#pragma once
// The benchmark families, each registered per backend:
//   task/<backend>                                    the complete rev88 task (task_benchmarks.cpp)
//   sweep_depth/<backend>/depth:{1,2,4,8}             batch 128 (task_benchmarks.cpp)
//   sweep_batch/<backend>/batch:{8..1024}             depth 2 (task_benchmarks.cpp)
//   sweep_width/<backend>/width:{82,128,256,512}      depth 2, batch 128; backends that run widths
//   (task_benchmarks.cpp) phase/<backend>/{reset,normalize,epoch,predict}   the Backend phase methods
//   (phase_benchmarks.cpp) throughput/<backend>/tasks:{1,2,4,..}             K rev88 tasks at once
//   (throughput_benchmarks.cpp)
// and the energy mode (--energy) instead of benchmarks (energy_mode.cpp).
#include <benchmark/benchmark.h>

#include "bench/harness/task_cache.hpp"

namespace revgraph::bench {

void register_task_benchmarks(const BackendInfo& b);  // task/ and the sweeps
void register_phase_benchmarks(const BackendInfo& b);
void register_throughput_benchmarks(const BackendInfo& b);
int energy_mode();

// Manual time in `unit`; on a GPU at least options().gpu_min_time seconds of it.
void tune(benchmark::internal::Benchmark* bm, const BackendInfo& b, benchmark::TimeUnit unit);

}  // namespace revgraph::bench
