#include "engine/cpu/cpu_name.hpp"

#include <fstream>

namespace revgraph::cpu {

std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return "cpu: " + line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "cpu";
}

}  // namespace revgraph::cpu
