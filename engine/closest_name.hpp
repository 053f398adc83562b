#pragma once
// The known name nearest a mistyped one, for "did you mean ...?" in error messages.
#include <string>
#include <vector>

namespace revgraph {

// Levenshtein distance (insertions, deletions, substitutions, each costing 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The name of `names` closest to `word` when it is close enough to be a plausible typo (at most
// a third of the word's length away, and at least two edits allowed: a swapped pair of letters),
// else "". Ties go to the
// first in `names`, so the answer is the same on every run.
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace revgraph
