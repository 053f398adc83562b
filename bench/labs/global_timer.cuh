#pragma once
// The GPU's global timer in nanoseconds (%globaltimer), read on the device: the labs stamp block
// entries and exits with it beside clock64(), to turn their cycle counts into time.
namespace revgraph::bench {

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

}  // namespace revgraph::bench
