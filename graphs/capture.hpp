#pragma once
// Stream capture as a scope guard. CaptureGuard begins capturing a (non-default) stream; whatever
// happens next, the capture is ended: instantiate() ends it and turns the graph into an executable
// graph exactly once; the destructor ends a capture that is still open (an exception on the way)
// and throws the half-built graph away, so the stream is never left capturing. Capture mode is
// thread-local: a forbidden call (a sync, an allocation) on this thread fails the capture instead
// of silently running outside it.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "engine/cuda/nvtx.hpp"

namespace revgraph::graphs {

// An instantiated graph, owned. Launch and upload only: nothing here can change what it does.
class GraphExec {
public:
    GraphExec() = default;
    GraphExec(cudaGraphExec_t exec, std::size_t nodes) : exec_(exec), nodes_(nodes) {}
    ~GraphExec();
    GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)), nodes_(std::exchange(o.nodes_, 0)) {}
    GraphExec& operator=(GraphExec&& o) noexcept;
    GraphExec(const GraphExec&) = delete;
    GraphExec& operator=(const GraphExec&) = delete;

    void launch(cudaStream_t stream) const;
    void upload(cudaStream_t stream) const;  // device-side setup done ahead of the first launch
    std::size_t nodes() const { return nodes_; }
    explicit operator bool() const { return exec_ != nullptr; }

private:
    cudaGraphExec_t exec_ = nullptr;
    std::size_t nodes_ = 0;
};

class CaptureGuard {
public:
    explicit CaptureGuard(cudaStream_t stream);
    ~CaptureGuard();
    CaptureGuard(const CaptureGuard&) = delete;
    CaptureGuard& operator=(const CaptureGuard&) = delete;

    GraphExec instantiate();

private:
    cudaStream_t stream_;
    bool open_ = false;
};

// Capture everything `body(stream)` enqueues on `stream` into one executable graph.
template <typename Body>
GraphExec capture(cudaStream_t stream, const char* name, Body&& body) {
    NVTX_RANGE(name);
    CaptureGuard guard(stream);
    body(stream);
    return guard.instantiate();
}

}  // namespace revgraph::graphs
