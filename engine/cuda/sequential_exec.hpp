#pragma once
// How the CPU runs a GPU block's phases: the emulator (engine/cuda/emulator.cpp), the kernel
// tests and the exported entry's host build (test/export/exported_on_host.hpp) all run phase code
// through this one executor, so each of them holds the code to the same ordering rules. Host-only:
// the device runs phases through the kernels' own BlockExec.
#include <functional>
#include <type_traits>
#include <vector>

namespace revgraph::cuda::fused {

// How the emulator runs a phase: every item in a loop, forwards or backwards. The items of a phase
// must be independent (a GPU runs them at once); run both ways, an item that reads what another item
// of its phase writes sees the old value one way and the new one the other, and the bits differ.
// issue(): a phase's items without its end (a GPU block's threads issue copies and go on, and the
// next phase's barrier waits for them). Forwards they run at once; reversed, as late as a GPU may
// finish them, after the next phase's own items: an item of that phase that needs them (a barrier
// missing between the two, a phase() written as issue()) then reads what was there before (NaN, in
// the emulator's poisoned shared memory) and the bits differ.
// wait_for_prior_grid(): where a GPU kernel launched early waits for its predecessor, and
// launch_dependents(): where it lets its successor be scheduled; one CPU process runs everything in
// order, so for the emulator these are nothing.
// Every issue() of a kernel's block must be followed by a phase() of the same block, as today's two
// are (a kernel that ended on issue() would leave its items here, for the next block's first phase).
struct SequentialExec {
    bool reverse = false;
    mutable std::vector<std::function<void()>> issued{};  // reversed: run at the next phase's end

    template <class F>
    void issue(int count, F&& item) const {
        if (reverse)
            issued.push_back([this, count, item = std::decay_t<F>(item)] { loop(count, item); });
        else
            loop(count, item);
    }
    template <class F>
    void phase(int count, F&& item) const {
        loop(count, item);
        std::vector<std::function<void()>> late;
        late.swap(issued);
        for (const auto& f : late) f();
    }
    void wait_for_prior_grid() const {}
    void launch_dependents() const {}

private:
    template <class F>
    void loop(int count, const F& item) const {
        if (reverse)
            for (int i = count - 1; i >= 0; --i) item(i);
        else
            for (int i = 0; i < count; ++i) item(i);
    }
};

}  // namespace revgraph::cuda::fused
