#pragma once
// An exported entry's CUDA text (test_export.py extracts it from the .py file into EXPORTED_TEXT) as
// host code, for host_check.cpp and host_device.cpp: the very text NVRTC compiles in the entry,
// read as NVRTC reads it (built with -D__CUDACC_RTC__) and as device code (__CUDA_ARCH__ settled to
// defined), so its device-only branches, the sums' 16-term blocks among them, run here as a GPU
// would run them. Its phases run through the engine's SequentialExec: each phase's items as a loop,
// forwards or backwards.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/cuda/sequential_exec.hpp"

// What the text needs of CUDA, on the host: qualifiers as nothing and the thread indices, which
// host_device.cpp sets where it calls the text's own kernels (a block of one thread: the text's
// BlockExec runs its items in turn; host_check.cpp calls none). Its prelude's std names call the C
// library's functions of the same meaning.
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__
namespace exported_cuda_shim {
struct Dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline Dim3 threadIdx, blockIdx, blockDim, gridDim;
inline void __syncthreads() {}
}  // namespace exported_cuda_shim

// The text defines these as device code sees them (an engine header included before, as host code).
#undef RG_HD
#undef RG_DEVICE_UNROLL
namespace exported {
using namespace exported_cuda_shim;
#include EXPORTED_TEXT
}  // namespace exported

namespace fa = exported::revgraph::cuda::fused_any;

// A block's phases on one thread: the engine's emulator's executor (engine/cuda/sequential_exec.hpp),
// every item of a phase in turn, last to first where `reverse`; reversed, issued items run late,
// after the next phase's items, so a phase that needs them before its barrier reads stale values.
using revgraph::cuda::fused::SequentialExec;
