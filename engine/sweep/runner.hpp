#pragma once
// Runs a sweep: every point of one shard of a grid, `jobs` at a time through
// PreparedTask::run_together (CPU worker threads, or GPU tasks each on its own stream), one
// line per point appended to the output in grid order (jsonl.hpp). Points already in the
// output are skipped, so an interrupted sweep resumes where it stopped.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/inputs.hpp"
#include "engine/sweep/grid.hpp"

namespace revgraph::sweep {

struct Progress {
    std::size_t done = 0;   // points of the shard in the output, skipped ones included
    std::size_t total = 0;  // points of the shard
    std::size_t ran = 0;    // points run by this call
    double seconds = 0;     // since this call started running points
};

struct SweepJob {
    const TaskInputs* inputs = nullptr;
    std::vector<std::int64_t> test_labels;  // empty when unknown
    Grid grid{TaskConfig{}};
    Shard shard;
    unsigned jobs = 0;  // points prepared and run at once; 0: one per CPU this process may use
    std::string backend = "auto";
    std::filesystem::path output;
    std::function<void(const Progress&)> on_progress;  // after the skip check, and after every batch
    // Check only: everything that is checked before the first point (the grid, the shard, each
    // width on the backend, an existing output against the resume rule, read only) and return the
    // shard's point count; the output is never created nor written.
    bool check_only = false;
};

struct SweepSummary {
    std::size_t points = 0;   // of the shard
    std::size_t skipped = 0;  // already in the output
    std::size_t ran = 0;
    double seconds = 0;   // wall time of the points run
    unsigned jobs = 0;    // as resolved
    std::string backend;  // Backend::name() of what ran
};

SweepSummary run_sweep(const SweepJob& job);

}  // namespace revgraph::sweep
