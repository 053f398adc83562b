#include "engine/cuda/device.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <mutex>

namespace revgraph::cuda {

namespace {

// A child of fork() cannot use the CUDA its parent initialised: the driver answers it with
// "initialization error" and nothing more. Python's multiprocessing forks by default on Linux, so a
// process pool of GPU tasks meets exactly that; the child is told why instead, in words it can act
// on. Set once a device was counted (the driver is initialised then); copied into `forked` in a child.
std::atomic<bool> initialised{false}, forked{false};

void note_initialised() {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { forked = initialised.load(); }); });
    initialised = true;
}

}  // namespace

const char* const kForkedAfterInit =
    "CUDA was initialised before this process was forked, and a child of fork() cannot use it: start "
    "worker processes with the 'spawn' or 'forkserver' method (multiprocessing.get_context)";

bool compiled_in() { return true; }

int device_count() {
    if (forked) return 0;
    int count = 0;
    // cudaErrorNoDevice / cudaErrorInsufficientDriver are the normal answers on CI machines.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (count > 0) note_initialised();
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
    if (forked) return kForkedAfterInit;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (!driver_present()) return "no NVIDIA driver (libcuda.so.1 not found)";
        return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    }
    if (count > 0) note_initialised();
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
