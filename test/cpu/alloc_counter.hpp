#pragma once
// Counts global operator new calls while armed (alloc_counter.cpp replaces operator new for the
// test executable), to check that a backend's run() allocates nothing.
namespace revgraph::test {
void count_allocations(bool on);
long allocations_counted();
}  // namespace revgraph::test
