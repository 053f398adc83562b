#pragma once
namespace revgraph {
// The git commit this build came from, "<sha>-dirty" when its sources had uncommitted changes,
// "unknown" outside a checkout; for every report.
const char* git_commit();
const char* version();
}  // namespace revgraph
