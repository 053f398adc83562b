#include "engine/cuda/l2_flush.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

namespace revgraph::cuda {
namespace {

void* g_buffer = nullptr;
std::size_t g_bytes = 0;
int g_device = -1;

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("flush_l2: ") + what + ": " + cudaGetErrorString(e));
}

std::size_t l2_bytes(int device) {
    int l2 = 0;
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
    return static_cast<std::size_t>(l2);
}

}  // namespace

void flush_l2() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    if (g_buffer && device != g_device) release_l2_flush();
    if (!g_buffer) {
        g_bytes = 2 * l2_bytes(device);
        if (g_bytes == 0) g_bytes = std::size_t(256) << 20;
        check(cudaMalloc(&g_buffer, g_bytes), "cudaMalloc");
        g_device = device;
    }
    // A different byte each time, so no layer can skip the write as redundant.
    static unsigned char value = 0;
    check(cudaMemsetAsync(g_buffer, ++value, g_bytes, nullptr), "cudaMemsetAsync");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

std::string flush_l2_description() {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no CUDA device";
    }
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return "L2 size unknown";
    }
    return "cudaMemsetAsync of " + std::to_string(2 * static_cast<long long>(l2) >> 20) + " MiB (2 x L2 of " +
           std::to_string(l2 >> 20) + " MiB) on device " + std::to_string(device) + " before every task, untimed";
}

void release_l2_flush() {
    if (g_buffer) (void)cudaFree(g_buffer);
    g_buffer = nullptr;
    g_bytes = 0;
    g_device = -1;
}

}  // namespace revgraph::cuda
