#pragma once
// Pieces several subcommands share: config from --config/--set, GPU runtime options,
// the embedded default task, accuracy.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/inputs.hpp"
#include "tools/revgraph/args.hpp"

namespace revgraph::cli {

// Options every task-running command accepts.
inline const std::set<std::string> kTaskOptions = {"config", "set", "backend", "device", "workspace-bytes"};

// Defaults (rev88), then --config FILE.json, then each --set key=value in order; validated.
TaskConfig config_from(const Args& args);
// --device / --workspace-bytes into the process-wide runtime, before any GPU work.
void configure_runtime(const Args& args);

struct LabelledTask {
    TaskInputs inputs;
    std::vector<std::int64_t> test_labels;  // empty when unknown
    std::string source;                     // for the result's "input" field
};
LabelledTask embedded_task();

// Fails early, before any work, when the directory an output will go to is missing or not writable.
void require_writable_directory(const std::string& output_path);

double accuracy(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels);
std::int64_t correct_count(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels);

}  // namespace revgraph::cli
