#pragma once
// revgraph sweep and revgraph sweep merge. The options arrive already parsed (SweepOptions,
// MergeOptions), so that the command line in front of them can change without touching them.
#include <optional>
#include <string>
#include <vector>

#include "engine/config.hpp"

namespace revgraph::cli {

struct SweepOptions {
    std::optional<std::string> input;        // DRAW.npz; none: the embedded default task
    std::optional<std::string> test_labels;  // L.npy, with input only
    TaskConfig base;                         // rev88 defaults, then --config, then --set
    std::optional<std::string> config_file;  // the --config read into base: --output may not replace it
    std::vector<std::string> grid;           // each "KEY=V1,V2,..." (ranges A..B for integer keys)
    unsigned jobs = 0;                       // 0: one per usable CPU
    std::string backend = "auto";
    std::optional<std::string> shard;  // "I/N"
    std::string output;                // SWEEP.jsonl (required)
    bool quiet = false;                // no progress on stderr
    bool check = false;                // check everything, count the points, run and write nothing
};
int sweep(const SweepOptions& options);

struct MergeOptions {
    std::vector<std::string> shards;  // SHARD.jsonl files, any order
    std::string output;               // ALL.jsonl (required)
};
int sweep_merge(const MergeOptions& options);

}  // namespace revgraph::cli
