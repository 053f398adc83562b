#pragma once
// Pieces several subcommands share: config from --config/--set, GPU runtime options,
// the embedded default task, accuracy.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/config.hpp"
#include "engine/inputs.hpp"
#include "tools/revgraph/args.hpp"

namespace revgraph::cli {

// Options (with a value) and flags every task-running command accepts.
inline const std::set<std::string> kTaskOptions = {"config", "set", "backend", "device", "workspace-bytes"};
inline const std::set<std::string> kTaskFlags = {"pdl"};

// Defaults (rev88), then --config FILE.json, then each --set key=value in order; validated.
TaskConfig config_from(const Args& args);
// --device / --workspace-bytes / --pdl into the process-wide runtime, before any GPU work.
void configure_runtime(const Args& args);

struct LabelledTask {
    TaskInputs inputs;
    std::vector<std::int64_t> test_labels;  // empty when unknown
    std::string source;                     // for the result's "input" field
};
LabelledTask embedded_task();

// Fails early, before any work, when the directory an output will go to is missing or not writable.
void require_writable_directory(const std::string& output_path);

// Before any work: a usage error when two outputs, or an output and an input, are one file
// however spelled ("r.json", "./r.json", a symlinked directory, a link; io::require_distinct_files),
// then require_writable_directory for each. `outputs` and `inputs` hold (what, path) pairs,
// `what` naming the option in the message ("--state").
void require_distinct_writable_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                                       const std::vector<std::pair<std::string, std::string>>& inputs = {});

// The whole text to standard output, flushed; throws Error when it cannot be written (a full
// disk, a closed pipe), so that a lost result is never an exit 0.
void write_stdout(const std::string& text);

double accuracy(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels);
std::int64_t correct_count(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels);

}  // namespace revgraph::cli
