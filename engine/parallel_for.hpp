#pragma once
// fn(0), ..., fn(n - 1) on up to `threads` threads, the caller's included: each index once, taken in
// order by whichever worker is free. For work whose results do not depend on which thread computes
// them (a draw, a member's deflate, a sweep point), so the bytes are the same on any number of
// threads. Where fewer threads can be started, fewer do the work. Every index runs even when one
// throws; then the error of the lowest index that failed is rethrown, once all have stopped.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace revgraph {

template <typename Fn>
void parallel_for(std::size_t n, unsigned threads, const Fn& fn) {
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors(n);
    const auto work = [&] {
        for (std::size_t k = next++; k < n; k = next++) {
            try {
                fn(k);
            } catch (...) { errors[k] = std::current_exception(); }
        }
    };
    {
        std::vector<std::jthread> pool;  // joined on the way out, also when one fails to start
        for (std::size_t w = 1; w < std::min<std::size_t>(threads, n); ++w) {
            try {
                pool.emplace_back(work);
            } catch (const std::system_error&) {
                break;  // fewer threads: the same results, later
            }
        }
        work();
    }
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

// CPUs this process may run on (its affinity mask, which Slurm and taskset narrow), at least 1:
// the threads a parallel_for over CPU work should use.
unsigned usable_cpus();

}  // namespace revgraph
