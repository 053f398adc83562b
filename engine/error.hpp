#pragma once
// One error type for everything a user can get wrong: its message is a single line that
// the CLI prints as-is before exiting non-zero.
#include <stdexcept>
#include <string>

namespace revgraph {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace revgraph
