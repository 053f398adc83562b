#pragma once
// Lists in messages, written once: "cpu, cpu-reference or cuda".
#include <cstddef>
#include <string>
#include <vector>

namespace revgraph {

inline std::string one_of(const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

}  // namespace revgraph
