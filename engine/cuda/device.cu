#include "engine/cuda/device.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace revgraph::cuda {

bool compiled_in() { return true; }

int device_count() {
    int count = 0;
    // cudaErrorNoDevice / cudaErrorInsufficientDriver are the normal answers on CI machines.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

bool driver_present() {
    // The runtime reports a machine with no driver at all as "driver version is insufficient";
    // the driver's library (libcuda.so.1, which the runtime loads) tells the two cases apart.
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return false;
    dlclose(h);
    return true;
}

std::string describe_device(int ordinal) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (!driver_present()) return "no NVIDIA driver (libcuda.so.1 not found)";
        return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    }
    if (ordinal < 0 || ordinal >= count) return "no CUDA device " + std::to_string(ordinal);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();  // else the next launcher's error check would report it
        return "CUDA device " + std::to_string(ordinal);
    }
    return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

// What this binary has device code for, as nvcc lists its -gencode targets (__CUDA_ARCH_LIST__,
// 800,900 for -Dgpu_arch=80,90).
std::string missing_device_code(int ordinal) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        return "";
    }
    std::vector<int> built;
    for (const int a : {__CUDA_ARCH_LIST__}) built.push_back(a / 10);
    return device_code_gap(10 * major + minor, built, describe_device(ordinal));
}

}  // namespace revgraph::cuda
