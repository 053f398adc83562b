#pragma once
// cudaCheck / cublasCheck: every runtime and cuBLASLt call goes through one of these, so a
// failure becomes a revgraph::Error naming the call site instead of a silent wrong answer.
// In engine/cuda_util/ (not engine/cuda/) because graphs/ needs it too, and graphs/ must not reach
// into the backend it serves: engine/cuda -> graphs -> engine/cuda_util, never back.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "engine/error.hpp"

namespace revgraph::cuda {

// The runtime keeps a failed call's error as the thread's "last error" until read: cleared here,
// else the next kernel launch's cudaGetLastError() (ops/*.hpp's launchers) would report this
// error as its own after a caller caught it (a failed cudaMalloc, then the next task's first launch).
// A sticky error (the context lost) stays whatever is read; every later call reports it anyway.
[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
    (void)cudaGetLastError();
    throw Error(std::string("cuda: ") + what + " failed: " + cudaGetErrorString(e) + " (" + file + ":" +
                std::to_string(line) + ")");
}
[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
    throw Error(std::string("cublasLt: ") + what + " failed with status " + std::to_string(static_cast<int>(s)) + " (" +
                file + ":" + std::to_string(line) + ")");
}

}  // namespace revgraph::cuda

#define cudaCheck(call)                                                                                           \
    do {                                                                                                          \
        const cudaError_t revgraph_err_ = (call);                                                                 \
        if (revgraph_err_ != cudaSuccess) ::revgraph::cuda::throw_cuda(revgraph_err_, #call, __FILE__, __LINE__); \
    } while (0)

#define cublasCheck(call)                                                            \
    do {                                                                             \
        const cublasStatus_t revgraph_st_ = (call);                                  \
        if (revgraph_st_ != CUBLAS_STATUS_SUCCESS)                                   \
            ::revgraph::cuda::throw_cublas(revgraph_st_, #call, __FILE__, __LINE__); \
    } while (0)
