// device_code_gap (engine/cuda/device.hpp): plain C++, in every build, so CI holds the rule.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"

namespace revgraph::cuda {

std::string device_code_gap(int device_arch, const std::vector<int>& built_archs, const std::string& device_words) {
    int highest = 0;
    std::string built, rebuild;
    for (const int a : built_archs) {
        if (a / 10 == device_arch / 10 && a <= device_arch) return "";  // its machine code runs
        highest = std::max(highest, a);
        // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on a literal + to_string here.
        built += built.empty() ? "sm_" : ", sm_";
        built += std::to_string(a);
        rebuild += ',';
        rebuild += std::to_string(a);
    }
    if (built_archs.empty() || device_arch >= highest) return "";  // the PTX, compiled at load
    if (device_arch < kOldestBuildableArch)
        return "this build has device code for " + built + ", not for " + device_words +
               ", which is older than any architecture this toolchain builds (sm_" +
               std::to_string(kOldestBuildableArch) + " is the oldest)";
    return "this build has device code for " + built + ", not for " + device_words +
           ": rebuild with -Dgpu_arch=" + std::to_string(device_arch) + rebuild;
}

}  // namespace revgraph::cuda
