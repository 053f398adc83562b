#pragma once
// `revgraph verify`: every claim of a submission folder re-derived from the MNIST IDX files — the
// hash chain protocol.json <- draw-manifest.json <- prediction-manifest.json <- accuracy.json, each
// draw's indices and input hashes, a fresh score of every predictions file against freshly drawn
// labels, the totals and the verdict; with retrain, every draw trained again and its predictions
// required byte-equal.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/qualify/protocol.hpp"

namespace revgraph::qualify {

struct VerifyRequest {
    std::filesystem::path submission, idx_dir;
    bool retrain = false;
    std::optional<std::string> backend;  // for retrain; default: the protocol's requested backend
    Progress progress;
    // Throws Error where the request itself is wrong (a backend without retrain steers nothing, a
    // backend name that none is);
    // verify_submission calls it first, front ends call it to tell a usage error.
    void check() const;
};

struct VerifyOutcome {
    // One line per failed claim: "FILE: KEY: what was claimed and what was found".
    std::vector<std::string> failures;
    int claims = 0;  // how many claims were checked
    bool holds() const { return failures.empty(); }
};

// Throws Error only where nothing can be checked (a wrong request, the IDX directory unreadable); everything wrong
// with the submission itself is a failure line.
VerifyOutcome verify_submission(const VerifyRequest& request);

}  // namespace revgraph::qualify
