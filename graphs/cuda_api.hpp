#pragma once
// The graph API of graphs/basic_capture.hpp on the CUDA runtime: each function is one runtime call,
// nothing else, so all of the lifecycle's decisions live in the templates the CPU tests exercise.
// Capture mode is thread-local: a forbidden call (a sync, an allocation) on this thread fails the
// capture instead of silently running outside it.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "engine/cuda_util/check.hpp"

namespace revgraph::graphs {

struct CudaGraphApi {
    using Stream = cudaStream_t;
    using Graph = cudaGraph_t;
    using Exec = cudaGraphExec_t;
    using Status = cudaError_t;

    static bool ok(Status s) { return s == cudaSuccess; }
    static Status begin_capture(Stream s) { return cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal); }
    static Status end_capture(Stream s, Graph* g) { return cudaStreamEndCapture(s, g); }
    static Status count_nodes(Graph g, std::size_t* n) { return cudaGraphGetNodes(g, nullptr, n); }
    static Status instantiate(Exec* e, Graph g) { return cudaGraphInstantiate(e, g, 0); }
    static void destroy_graph(Graph g) noexcept { (void)cudaGraphDestroy(g); }
    static void destroy_exec(Exec e) noexcept { (void)cudaGraphExecDestroy(e); }
    static Status launch(Exec e, Stream s) { return cudaGraphLaunch(e, s); }
    static Status upload(Exec e, Stream s) { return cudaGraphUpload(e, s); }
    static Status synchronize(Stream s) { return cudaStreamSynchronize(s); }
    static void clear_error() noexcept { (void)cudaGetLastError(); }
    [[noreturn]] static void fail(Status s, const char* call) {
        throw Error(std::string("cuda: ") + call + " failed: " + cudaGetErrorString(s));
    }
};

}  // namespace revgraph::graphs
