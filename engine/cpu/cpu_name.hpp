#pragma once
#include <string>

namespace revgraph::cpu {
// The host processor's model name (from /proc/cpuinfo where there is one), for reports.
std::string cpu_name();
}  // namespace revgraph::cpu
