#pragma once
// Small GPU helpers of the benchmark binary, compiled from gpu_hooks.cu where CUDA is on and
// from gpu_hooks_none.cpp otherwise, so the benchmarks need no CUDA headers.
#include <string>

namespace revgraph::bench {

// Writes a device buffer twice the L2 size of the current CUDA device and waits for it, so the
// next task starts with none of its data in L2. A no-op in a build without CUDA.
void flush_l2();
// What flush_l2() does in this build, in words (for the benchmark context).
std::string flush_l2_description();
// The PCI bus id of CUDA device `ordinal` ("" where there is none), so NVML reads the board
// the backend runs on even when CUDA_VISIBLE_DEVICES reorders devices.
std::string cuda_pci_bus_id(int ordinal);
// Frees flush_l2's buffer; call before exit while the CUDA context is still alive.
void release_gpu_hooks();

}  // namespace revgraph::bench
