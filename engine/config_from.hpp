#pragma once
// A task's config as every front end builds it (the revgraph command, sweeps, Python's harness):
// the defaults, then a JSON file, then each "key=value" in order, the last one winning; checked
// once everything is in, so a later --set can repair a file's value, and the error names where
// the bad value came from ("--set depth=0: config: depth must be in 1..1024, got 0").
#include <optional>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/error.hpp"

namespace revgraph {

// A `sets` item that is not key=value: a usage mistake (the command exits 2 on it).
class SetSyntaxError : public Error {
public:
    using Error::Error;
};

// Throws Error (its message prefixed with the file's path or "--set key=value: "), or
// SetSyntaxError.
TaskConfig config_from(const std::optional<std::string>& file, const std::vector<std::string>& sets);

}  // namespace revgraph
