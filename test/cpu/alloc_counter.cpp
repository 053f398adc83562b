// Replaces the global operator new/delete of the test executable with malloc/free plus a counter.
// Kept in its own file so that no other code sees both sides inlined together.
#include "test/cpu/alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_on{false};
std::atomic<long> g_count{0};
}  // namespace

namespace revgraph::test {
void count_allocations(bool on) {
    if (on) g_count = 0;
    g_on = on;
}
long allocations_counted() { return g_count.load(); }
}  // namespace revgraph::test

void* operator new(std::size_t size) {
    if (g_on.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
