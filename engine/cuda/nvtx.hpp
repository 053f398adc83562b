#pragma once
// NVTX ranges (NVTX3, header-only from the CUDA toolkit): NVTX_RANGE("name") opens a range that
// closes at the end of the enclosing scope. Nsight Systems shows them on the host timeline; they
// cost a few nanoseconds when no tool is attached.
#include <nvtx3/nvToolsExt.h>

namespace revgraph::cuda {

class NvtxRange {
public:
    explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
    ~NvtxRange() { nvtxRangePop(); }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace revgraph::cuda

#define REVGRAPH_NVTX_CAT2(a, b) a##b
#define REVGRAPH_NVTX_CAT(a, b) REVGRAPH_NVTX_CAT2(a, b)
#define NVTX_RANGE(name) const ::revgraph::cuda::NvtxRange REVGRAPH_NVTX_CAT(revgraph_nvtx_, __LINE__)(name)
