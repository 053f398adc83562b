#pragma once
// One qualification end to end (docs/spec.md §9): the training set read and checked, the draws
// built and run, the predictions frozen, then scored; with a submission folder, every file of it
// (docs/results.md). What `revgraph qualify` and `revgraph.qualify(...)` call.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/io/mnist_official.hpp"
#include "engine/qualify/protocol.hpp"

namespace revgraph::qualify {

struct QualifyRequest {
    std::filesystem::path idx_dir;
    Protocol protocol;
    std::optional<std::filesystem::path> submission;  // the folder to write, if any
    // The report's file, if any: renamed right after the folder, a signal waiting for both (its
    // text: report.dump(2)).
    std::optional<std::filesystem::path> report_output;
    Progress progress;  // progress lines, if wanted; all come before the submission folder is committed
};

struct QualifyOutcome {
    nlohmann::ordered_json report;  // `revgraph qualify`'s JSON report (docs/results.md)
    Verdict verdict;
    bool official = false;
    std::string protocol_difference;       // how the run differs from the published protocol; "" for none
    std::vector<io::IdxFileCheck> checks;  // the two IDX files against the official ones
};

// Throws Error (one line) on bad input; the submission and the report file, if asked for, are
// complete or absent.
QualifyOutcome run_qualification(const QualifyRequest& request);

// The pieces of a submission, also used by verify to re-derive them.
// protocol.json without the run-time fields: what verify compares key by key.
nlohmann::ordered_json raw_source_json(const io::IdxFileCheck& check);
std::string readme_text(const nlohmann::ordered_json& protocol, const nlohmann::ordered_json& accuracy,
                        const std::vector<DrawRun>& runs, const std::string& folder_name);

}  // namespace revgraph::qualify
