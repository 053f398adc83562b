#pragma once
// revgraph_bench's own options (not Google Benchmark's), parsed with CLI11.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness/energy.hpp"
#include "engine/config.hpp"

namespace revgraph::bench {

struct Options {
    std::int64_t train = 10000, query = 10000;
    std::uint64_t data_seed = 2026;
    std::string input;                  // a task archive instead of the synthetic draw
    std::vector<std::string> backends;  // empty: every one buildable here
    int warmup = -1;                    // -1: 1 on CPU, 10 on GPU
    double gpu_min_time = 2.0;
    bool flush_l2 = false;
    bool energy = false;
    std::string energy_backend = "cuda";
    int energy_tasks = 1;
    std::string energy_out;
    // --energy-config FILE / --energy-set K=V: the config --energy measures (a frontier entry), read
    // by engine/config_from.hpp as `revgraph run` reads it; none: rev88.
    std::optional<TaskConfig> energy_config;
    std::string nvml_library = kNvmlLibrary;
    EnergyOptions energy_options;
};

// The process's options, as parse_options() left them.
Options& options();

// Takes our options out of argv (in place) and leaves Google Benchmark's (--benchmark_*, --v=) for
// benchmark::Initialize. --help prints the usage and exits 0; an unknown or malformed option of ours
// prints one "revgraph_bench: error: ..." line and exits 2. --pdl configures the runtime at once.
void parse_options(int* argc, char** argv);

}  // namespace revgraph::bench
