#include "engine/sweep/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace revgraph::sweep {
namespace {

// Points per second of this call's own points (skipped ones took no time), and the time the
// rest will take at that rate; "?" until a point has run.
std::string rate_and_eta(const Progress& p, const char* unit) {
    char buf[96];
    if (p.ran == 0 || p.seconds <= 0) {
        std::snprintf(buf, sizeof buf, "? %s  ETA ?", unit);
        return buf;
    }
    const double rate = double(p.ran) / p.seconds;
    std::snprintf(buf, sizeof buf, "%.1f %s  ETA %s", rate, unit,
                  human_duration(double(p.total - p.done) / rate).c_str());
    return buf;
}

}  // namespace

std::string human_duration(double seconds) {
    char buf[32];
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long s = std::lround(seconds);
    if (s < 60)
        std::snprintf(buf, sizeof buf, "%lds", s);
    else if (s < 3600)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    return buf;
}

std::string progress_bar(const Progress& p, int width) {
    const int filled =
        p.total == 0 ? width : std::clamp(static_cast<int>(double(p.done) / double(p.total) * width), 0, width);
    std::string bar(static_cast<std::size_t>(width) + 2, '.');
    bar.front() = '[';
    bar.back() = ']';
    bar.replace(1, static_cast<std::size_t>(filled), static_cast<std::size_t>(filled), '#');
    char buf[64];
    std::snprintf(buf, sizeof buf, " %zu/%zu points  ", p.done, p.total);
    return bar + buf + rate_and_eta(p, "points/s");
}

std::string progress_line(const Progress& p) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "sweep: %zu/%zu points, ", p.done, p.total);
    std::string text = buf + rate_and_eta(p, "points/s");
    // "3.1 points/s  ETA 12s" → "3.1 points/s, ETA 12s" on a plain line
    if (const auto at = text.find("  ETA"); at != std::string::npos) text.replace(at, 2, ", ");
    return text;
}

}  // namespace revgraph::sweep
