#pragma once
// The clocks every timing in revgraph reads: wall time on the monotonic clock, and the calling
// thread's CPU time (what a CPU backend's work costs, apart from time spent waiting).
#include <time.h>

#include <chrono>

namespace revgraph {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace revgraph
