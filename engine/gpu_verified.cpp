#include "engine/gpu_verified.hpp"

namespace revgraph {

GpuVerification parse_gpu_verified(const std::string& tag) {
    GpuVerification v;
    const std::size_t a = tag.find(';');
    const std::size_t b = a == std::string::npos ? std::string::npos : tag.find(';', a + 1);
    if (b == std::string::npos) {  // "unknown" (vcs_tag's fallback) or a line of another shape
        v.why = "no verdict was written into this build (" + tag + ")";
        return v;
    }
    const std::string names = tag.substr(0, a);
    for (std::size_t start = 0; start < names.size();) {
        const std::size_t comma = names.find(',', start);
        const std::size_t end = comma == std::string::npos ? names.size() : comma;
        if (end > start) v.backends.push_back(names.substr(start, end - start));
        start = end + 1;
    }
    v.report = tag.substr(a + 1, b - a - 1);
    const std::size_t c = tag.find(';', b + 1);
    v.why = tag.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1);
    if (c != std::string::npos) {
        const std::size_t d = tag.find(';', c + 1);
        v.device = tag.substr(c + 1, d == std::string::npos ? std::string::npos : d - c - 1);
        if (d != std::string::npos) v.gpu_arch = tag.substr(d + 1);
    }
    if (v.device.empty()) v.backends.clear();  // a verdict that names no GPU verifies none
    return v;
}

const GpuVerification& gpu_verification() {
    static const GpuVerification v = parse_gpu_verified(gpu_verified_tag());
    return v;
}

}  // namespace revgraph
