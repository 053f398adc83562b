#pragma once
// Pieces several subcommands share: the task options (--config/--set, backend, GPU runtime
// options) and their parsing, the embedded default task, output checks, accuracy.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/config.hpp"
#include "engine/inputs.hpp"

namespace revgraph::cli {

// A mistake on the command line: exit 2, one line.
struct UsageError {
    std::string message;
};

// Options every task-running command accepts. Numbers stay text until parse_int/parse_double,
// which take decimal only (CLI11's own conversion reads "010" as octal).
struct TaskOptions {
    std::optional<std::string> config;
    std::vector<std::string> set;
    std::string backend = "auto";
    std::optional<std::string> device;           // --device N
    std::optional<std::string> workspace_bytes;  // --workspace-bytes N
    bool pdl = false;                            // --pdl: Programmatic Dependent Launch (the default)
    bool no_pdl = false;                         // --no-pdl: plain launches
    std::optional<std::string> cluster_blocks;   // --cluster-blocks N: cuda-fused's epochs on a cluster
};
// with_config false: no --config or --set (validate, whose checks run shapes of their own).
void add_task_options(CLI::App& app, TaskOptions& o, bool with_config = true);

// The config keys with their rev88 defaults, for the help of every task-running command.
std::string config_keys_help();

// A value that must not be empty ("--output ''" from an unset variable means nothing).
extern const CLI::Validator kNonEmpty;

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max);
// 0..2^64-1, the engine's seeds (a sign, even "+", is refused).
std::uint64_t parse_uint64(const std::string& option, const std::string& text);
double parse_double(const std::string& option, const std::string& text);

// Defaults (rev88), then --config FILE.json, then each --set key=value in order; validated.
TaskConfig config_from(const TaskOptions& o);
// --device / --workspace-bytes / --pdl / --no-pdl / --cluster-blocks into the process-wide runtime,
// before any GPU work.
void configure_runtime(const TaskOptions& o);
// --device, --pdl, --no-pdl and --cluster-blocks only steer the CUDA backends: a usage error when
// --backend names (or `auto` picks) a CPU one and one was given, rather than silently ignoring it.
// Before any work.
void refuse_gpu_options_on_cpu(const TaskOptions& o);

struct LabelledTask {
    TaskInputs inputs;
    std::vector<std::int64_t> test_labels;  // empty when unknown
    std::string source;                     // for the result's "input" field
};
LabelledTask embedded_task();

// Files named by the option that named them: (what, path), `what` as the message says it ("--state").
using NamedPaths = std::vector<std::pair<std::string, std::string>>;

// The inputs of the task options that an output may not replace: --config, where given.
NamedPaths config_inputs(const TaskOptions& o);
// The MNIST training IDX files a command reads from an --idx-dir (each as raw and gzip name).
NamedPaths idx_inputs(const std::string& idx_dir);

// Before any work: a usage error for an output named "-" (other tools' standard output; here it
// would be a file so named) or when two outputs, or an output and an input, are one file
// however spelled ("r.json", "./r.json", a symlinked directory, a link), then an Error where an
// output's directory is missing or not writable (io::require_outputs). Every command that writes a file names here
// every file it reads.
void require_distinct_writable_outputs(const NamedPaths& outputs, const NamedPaths& inputs = {});

// The whole text to standard output, flushed; throws Error when it cannot be written (a full
// disk, a closed pipe), so that a lost result is never an exit 0.
void write_stdout(const std::string& text);

}  // namespace revgraph::cli
