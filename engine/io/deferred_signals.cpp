#include "engine/io/deferred_signals.hpp"

#include <signal.h>

#include <array>
#include <atomic>
#include <mutex>

namespace revgraph::io {

namespace {

constexpr std::array<int, 4> kDeferred = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::mutex guard_mutex;  // guards `alive` and `previous`; never taken in the handler
int alive = 0;
std::array<struct sigaction, kDeferred.size()> previous{};
// Written by the handler (a lock-free atomic: async-signal-safe), read when the last guard ends.
std::array<std::atomic<bool>, kDeferred.size()> pending{};

void record(int sig) {
    for (std::size_t i = 0; i < kDeferred.size(); ++i)
        if (kDeferred[i] == sig) pending[i].store(true);
}

}  // namespace

DeferredSignals::DeferredSignals() {
    std::lock_guard<std::mutex> lock(guard_mutex);
    if (alive++ > 0) return;
    struct sigaction wait {};
    wait.sa_handler = record;
    wait.sa_flags = SA_RESTART;  // an fsync or rename the signal lands in carries on
    sigfillset(&wait.sa_mask);
    for (std::size_t i = 0; i < kDeferred.size(); ++i) {
        pending[i].store(false);
        ::sigaction(kDeferred[i], &wait, &previous[i]);
    }
}

DeferredSignals::~DeferredSignals() {
    std::lock_guard<std::mutex> lock(guard_mutex);
    if (--alive > 0) return;
    for (std::size_t i = 0; i < kDeferred.size(); ++i) ::sigaction(kDeferred[i], &previous[i], nullptr);
    // Now, with the handlers that were in force: the default ends the process here, a caller's own
    // (Python's SIGINT) runs as it would have.
    for (std::size_t i = 0; i < kDeferred.size(); ++i)
        if (pending[i].exchange(false)) ::raise(kDeferred[i]);
}

}  // namespace revgraph::io
