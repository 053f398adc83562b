#pragma once
// Owning handles for a CUDA stream and a CUDA event: created checked, released once, never copied.
// The stream synchronises before it is destroyed, so nothing queued on it outlives the buffers a
// backend frees next.
#include <cuda_runtime.h>

#include "engine/cuda_util/check.hpp"

namespace revgraph::cuda {

struct Stream {
    cudaStream_t s = nullptr;
    Stream() { cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
    ~Stream() {
        if (s != nullptr) {
            (void)cudaStreamSynchronize(s);
            (void)cudaStreamDestroy(s);
        }
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
};

struct Event {
    cudaEvent_t e = nullptr;
    explicit Event(unsigned int flags = cudaEventDefault) { cudaCheck(cudaEventCreateWithFlags(&e, flags)); }
    ~Event() {
        if (e != nullptr) (void)cudaEventDestroy(e);
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
};

}  // namespace revgraph::cuda
