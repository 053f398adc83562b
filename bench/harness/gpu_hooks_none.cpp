// gpu_hooks.hpp in a build without CUDA: nothing to flush, no device to name.
#include "bench/harness/gpu_hooks.hpp"

namespace revgraph::bench {

void flush_l2() {}
std::string flush_l2_description() { return "no-op: this build has no CUDA"; }
std::string cuda_pci_bus_id(int) { return ""; }
void release_gpu_hooks() {}

}  // namespace revgraph::bench
