#pragma once
// NVTX ranges, the one wrapper of the code base: NVTX_RANGE("name") opens a range that closes at the
// end of the enclosing scope (nvtx3::scoped_range, header-only NVTX3 from the CUDA toolkit). Nsight
// tools show them on the host timeline; they cost a few nanoseconds when no tool is attached. In a
// build without CUDA (or without the header) the ranges compile to nothing, so host code of any
// build may use them.
#if defined(__has_include)
#if (defined(REVGRAPH_HAVE_CUDA) || defined(__CUDACC__)) && __has_include(<nvtx3/nvtx3.hpp>)
#include <nvtx3/nvtx3.hpp>
#define REVGRAPH_NVTX 1
#endif
#endif

namespace revgraph::cuda {

#if defined(REVGRAPH_NVTX)
using NvtxRange = nvtx3::scoped_range;
inline constexpr bool kNvtxCompiledIn = true;
#else
struct NvtxRange {
    explicit NvtxRange(const char*) {}
};
inline constexpr bool kNvtxCompiledIn = false;
#endif

}  // namespace revgraph::cuda

#define REVGRAPH_NVTX_CAT2(a, b) a##b
#define REVGRAPH_NVTX_CAT(a, b) REVGRAPH_NVTX_CAT2(a, b)
#define NVTX_RANGE(name) const ::revgraph::cuda::NvtxRange REVGRAPH_NVTX_CAT(revgraph_nvtx_, __LINE__)(name)
