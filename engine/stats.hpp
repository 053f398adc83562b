#pragma once
// The one median (and min/max summary) of repeated timings: RESULT.json's --repeat statistic,
// the benchmarks' counters and energy rounds, the GPU validation's replay times.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace revgraph {

// The middle value, the mean of the middle two for an even count; 0 for none.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Summary {
    double median = 0, min = 0, max = 0;
    std::size_t runs = 0;
};

inline Summary summarize(const std::vector<double>& v) {
    if (v.empty()) return {};
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return {median(v), *lo, *hi, v.size()};
}

}  // namespace revgraph
