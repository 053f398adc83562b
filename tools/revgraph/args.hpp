#pragma once
// A small, strict command-line parser: `--name value` or `--name=value`, repeatable options,
// flags, and one-line errors for anything unknown or missing.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace revgraph::cli {

class Args {
public:
    // `options` take a value; `flags` do not. Throws UsageError on anything else.
    Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
         const std::set<std::string>& flags);

    std::optional<std::string> get(const std::string& name) const;  // the last occurrence
    std::vector<std::string> all(const std::string& name) const;    // every occurrence, in order
    bool flag(const std::string& name) const { return flags_.count(name) != 0; }
    const std::vector<std::string>& positional() const { return positional_; }

private:
    std::map<std::string, std::vector<std::string>> values_;
    std::set<std::string> flags_;
    std::vector<std::string> positional_;
};

struct UsageError {
    std::string message;
};

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min, std::int64_t max);
double parse_double(const std::string& option, const std::string& text);

}  // namespace revgraph::cli
