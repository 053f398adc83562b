#pragma once
// How far a process's peak resident memory rises while some work runs (Linux: /proc/self), for the
// tests that hold memory to a bound (test/cpu/test_epoch_memory.cpp, test/io/test_bounded_memory.cpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace revgraph::test {

// One "VmRSS:"-style line of /proc/self/status, in KiB; -1 where it is missing.
inline std::int64_t status_kib(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::string(key).size()));
    return -1;
}

// Bytes the peak RSS rose above the RSS at the start while `work` ran. The peak mark is reset
// first ("5" to clear_refs, Linux 4.0+); a test fails where that, or reading the RSS, cannot be done.
template <typename F>
std::int64_t peak_rss_growth(F&& work) {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    REQUIRE(static_cast<bool>(clear));
    const std::int64_t before = status_kib("VmRSS:");
    REQUIRE(before > 0);
    work();
    return (status_kib("VmHWM:") - before) * 1024;
}

}  // namespace revgraph::test
