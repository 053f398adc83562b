#pragma once
// The current time for reports: "2026-12-03T08:45:00Z" (UTC, whole seconds).
#include <string>

namespace revgraph {

std::string utc_timestamp();

}  // namespace revgraph
