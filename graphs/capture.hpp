#pragma once
// Stream capture on the CUDA runtime: graphs/basic_capture.hpp's guard and owned executable graph
// over graphs/cuda_api.hpp.
#include <cuda_runtime.h>

#include <utility>

#include "graphs/basic_capture.hpp"
#include "graphs/cuda_api.hpp"

namespace revgraph::graphs {

using GraphExec = BasicGraphExec<CudaGraphApi>;
using CaptureGuard = BasicCaptureGuard<CudaGraphApi>;

// Capture everything `body(stream)` enqueues on `stream` into one executable graph.
template <typename Body>
GraphExec capture(cudaStream_t stream, const char* name, Body&& body) {
    return capture_with<CudaGraphApi>(stream, name, std::forward<Body>(body));
}

}  // namespace revgraph::graphs
