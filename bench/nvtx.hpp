#pragma once
// NVTX ranges around every benchmarked task and phase, so `nsys profile` timelines show which
// benchmark a kernel belongs to. Header-only NVTX v3 from the CUDA toolkit; nothing elsewhere.
#if defined(REVGRAPH_HAVE_CUDA) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define REVGRAPH_BENCH_NVTX 1
#endif

namespace revgraph::bench {

class NvtxRange {
public:
#ifdef REVGRAPH_BENCH_NVTX
    explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
    ~NvtxRange() { nvtxRangePop(); }
#else
    explicit NvtxRange(const char*) {}
#endif
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

inline constexpr bool kNvtxCompiledIn =
#ifdef REVGRAPH_BENCH_NVTX
    true;
#else
    false;
#endif

}  // namespace revgraph::bench
