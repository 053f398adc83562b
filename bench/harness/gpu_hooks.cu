// gpu_hooks.hpp with CUDA: the engine's L2 flush (engine/cuda/l2_flush.cu), and the PCI id.
#include "bench/harness/gpu_hooks.hpp"

#include <cuda_runtime.h>

#include "engine/cuda/l2_flush.hpp"

namespace revgraph::bench {

void flush_l2() { cuda::flush_l2(); }

std::string flush_l2_description() { return cuda::flush_l2_description(); }

std::string cuda_pci_bus_id(int ordinal) {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        return "";
    }
    return id;
}

void release_gpu_hooks() { cuda::release_l2_flush(); }

}  // namespace revgraph::bench
