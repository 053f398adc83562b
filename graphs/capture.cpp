#include "graphs/capture.hpp"

#include "engine/cuda/check.cuh"
#include "engine/error.hpp"

namespace revgraph::graphs {

GraphExec::~GraphExec() {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
}

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
    if (this != &o) {
        if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
        exec_ = std::exchange(o.exec_, nullptr);
        nodes_ = std::exchange(o.nodes_, 0);
    }
    return *this;
}

void GraphExec::launch(cudaStream_t stream) const {
    if (exec_ == nullptr) throw Error("graphs: launch of a graph that was never captured");
    cudaCheck(cudaGraphLaunch(exec_, stream));
}

void GraphExec::upload(cudaStream_t stream) const {
    if (exec_ != nullptr) cudaCheck(cudaGraphUpload(exec_, stream));
}

CaptureGuard::CaptureGuard(cudaStream_t stream) : stream_(stream) {
    if (stream == nullptr) throw Error("graphs: capture needs a non-default stream");
    cudaCheck(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    open_ = true;
}

CaptureGuard::~CaptureGuard() {
    if (!open_) return;
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_, &graph);  // ends it even when the capture was invalidated
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // the error that brought us here has been thrown already
}

GraphExec CaptureGuard::instantiate() {
    if (!open_) throw Error("graphs: capture already ended");
    open_ = false;
    cudaGraph_t graph = nullptr;
    cudaCheck(cudaStreamEndCapture(stream_, &graph));
    std::size_t nodes = 0;
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);  // the executable graph keeps what it needs
    cudaCheck(e);
    return GraphExec(exec, nodes);
}

}  // namespace revgraph::graphs
