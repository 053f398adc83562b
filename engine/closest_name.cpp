#include "engine/closest_name.hpp"

#include <algorithm>

namespace revgraph {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    // One row of the dynamic-programming table at a time.
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
    const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
    std::string best;
    std::size_t best_distance = allowed + 1;
    for (const auto& name : names) {
        const std::size_t d = edit_distance(word, name);
        if (d < best_distance) best = name, best_distance = d;
    }
    return best;
}

}  // namespace revgraph
