#include "engine/sweep/jsonl.hpp"

#include <map>
#include <nlohmann/json.hpp>

#include "engine/error.hpp"
#include "engine/io/json_text.hpp"
#include "engine/io/sha256.hpp"
#include "engine/qualify/protocol.hpp"
#include "engine/sweep/grid.hpp"

namespace revgraph::sweep {
namespace {

nlohmann::ordered_json head_object(const PointHead& h) {
    nlohmann::ordered_json j;
    j["index"] = h.index;
    j["points"] = h.points;
    j["grid_sha256"] = h.grid_sha256;
    j["config"] = h.config.to_json();
    j["backend"] = h.backend;
    j["inputs_sha256"] = h.inputs_sha256;
    return j;
}

const char kTimesField[] = ",\"run_seconds\":";

// What merge holds a line to beyond its sweep's keys: the text `revgraph sweep` writes for it (one
// compact JSON object; a line edited by hand seldom is), a config the engine accepts, and counts
// that can be (0 <= correct <= total; a sweep without --test-labels writes neither). Not proof of a
// run (only running the point again is), but no line merge copies is one no sweep could have written.
void check_point_line(const std::string& where, const std::string& line, const nlohmann::ordered_json& j) {
    if (j.dump() != line) throw Error(where + " is not written as revgraph sweep writes its lines (edited?)");
    if (!j.contains("config") || !j["config"].is_object()) throw Error(where + " is not a sweep line (no config)");
    try {
        TaskConfig config;
        config.update_from_json(nlohmann::json::parse(j["config"].dump()));
        config.validate();
    } catch (const Error& e) { throw Error(where + ": " + e.what()); }
    if (j.contains("correct") != j.contains("total"))
        throw Error(where + " is not a sweep line (correct without total, or total without correct)");
    if (!j.contains("correct")) return;
    if (!j["correct"].is_number_integer() || !j["total"].is_number_integer())
        throw Error(where + ": correct and total are not integers");
    const auto correct = j["correct"].get<std::int64_t>(), total = j["total"].get<std::int64_t>();
    if (total < 1 || correct < 0 || correct > total)
        throw Error(where + ": " + std::to_string(correct) + " correct of " + std::to_string(total));
}

}  // namespace

std::string inputs_digest(const HashedInputs& inputs, const std::vector<std::int64_t>& test_labels) {
    const auto& h = inputs.hashes();
    std::string text = "train_images=" + h.at("train_images").get<std::string>() +
                       ",train_labels=" + h.at("train_labels").get<std::string>() +
                       ",test_images=" + h.at("test_images").get<std::string>();
    if (!test_labels.empty()) text += ",test_labels=" + io::sha256_hex(test_labels);
    return io::sha256_hex(text.data(), text.size());
}

std::string line_head(const PointHead& head) {
    std::string text = head_object(head).dump();
    text.pop_back();  // the closing brace: the results follow
    return text;
}

std::string format_line(const PointHead& head, const TaskOutputs& out, const std::vector<std::int64_t>& test_labels,
                        double run_seconds) {
    auto j = head_object(head);
    const auto& predictions = out.state.predictions;
    if (!test_labels.empty()) {
        const std::int64_t correct = qualify::correct_count(predictions, test_labels);  // the one scoring rule
        j["correct"] = correct;
        j["total"] = static_cast<std::int64_t>(test_labels.size());
        j["accuracy"] = double(correct) / double(test_labels.size());
    }
    for (const char* key : {"predictions_sha256", "scores_sha256", "state_vector_sha256", "final_parameter_sha256",
                            "final_velocity_sha256", "non_finite_score_rows"})
        j[key] = out.metadata.at(key);  // non_finite_score_rows: above 0, a point that diverged
    j["run_seconds"] = run_seconds;
    // dump() escapes every control character inside strings: the text holds no '\n' but the last.
    return j.dump() + "\n";
}

std::string without_times(const std::string& line) {
    const auto at = line.rfind(kTimesField);
    if (at == std::string::npos) return line;
    const auto close = line.find('}', at);
    return close == std::string::npos ? line.substr(0, at) : line.substr(0, at) + line.substr(close);
}

Lines split_lines(const std::string& text) {
    Lines lines;
    std::size_t start = 0;
    for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
        lines.complete.push_back(text.substr(start, nl - start));
    lines.partial = text.substr(start);
    return lines;
}

std::string merge_shards(const std::vector<std::pair<std::string, std::string>>& files) {
    std::map<std::size_t, std::string> by_index;
    std::size_t points = 0;
    std::string grid, backend, inputs, first_file;
    for (const auto& [name, content] : files) {
        const Lines lines = split_lines(content);
        if (!lines.partial.empty())
            throw Error(name + ": ends in a partial line (its shard did not finish; rerun it to resume)");
        for (std::size_t k = 0; k < lines.complete.size(); ++k) {
            const std::string& line = lines.complete[k];
            const std::string where = name + ": line " + std::to_string(k + 1);
            nlohmann::ordered_json j;  // in the order sweep wrote it, to hold the line to its own text
            try {
                j = io::parse_json_text<nlohmann::ordered_json>(line);
            } catch (const nlohmann::json::exception&) {
                throw Error(where + " is not JSON (not a sweep file?)");
            } catch (const Error& e) { throw Error(where + ": " + e.what()); }
            if (!j.is_object() || !j.contains("index") || !j["index"].is_number_unsigned() || !j.contains("points") ||
                !j["points"].is_number_unsigned() || !j.contains("grid_sha256") || !j["grid_sha256"].is_string() ||
                !j.contains("backend") || !j["backend"].is_string() || !j.contains("inputs_sha256") ||
                !j["inputs_sha256"].is_string())
                throw Error(where + " is not a sweep line (no index, points, grid_sha256, backend or inputs_sha256)");
            check_point_line(where, line, j);
            const auto index = j["index"].get<std::size_t>();
            const auto n = j["points"].get<std::size_t>();
            if (by_index.empty()) {
                points = n;
                grid = j["grid_sha256"].get<std::string>();
                backend = j["backend"].get<std::string>();
                inputs = j["inputs_sha256"].get<std::string>();
                first_file = name;
                if (points == 0 || points > kMaxPoints)
                    throw Error(where + ": a grid of " + std::to_string(n) + " points");
            } else if (n != points || j["grid_sha256"] != grid || j["backend"] != backend ||
                       j["inputs_sha256"] != inputs) {
                throw Error(where + " is from another sweep than " + first_file +
                            " (its grid, backend or inputs differ)");
            }
            if (index >= points) throw Error(where + ": point " + std::to_string(index) + " is outside the grid");
            const auto [it, inserted] = by_index.emplace(index, line);
            if (!inserted && without_times(it->second) != without_times(line))
                throw Error(where + ": point " + std::to_string(index) +
                            " appears twice with different results (shards of different sweeps?)");
        }
    }
    if (by_index.empty()) throw Error("sweep merge: the shards hold no points");
    if (by_index.size() != points) {
        std::size_t missing = 0;
        while (by_index.count(missing)) ++missing;
        throw Error("sweep merge: " + std::to_string(points - by_index.size()) + " of " + std::to_string(points) +
                    " points are missing (the first is point " + std::to_string(missing) +
                    "): a shard is missing or unfinished");
    }
    std::string text;
    for (const auto& [index, line] : by_index) text += line + "\n";
    return text;
}

}  // namespace revgraph::sweep
