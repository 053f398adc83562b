#pragma once
// Stream capture as a scope guard, over a small graph API (a template parameter, so the lifecycle
// is tested on the CPU with a fake that records every call: test/graphs/). CaptureGuard begins
// capturing a (non-default) stream; whatever happens next, the capture is ended: instantiate() ends
// it and turns the graph into an executable graph exactly once; the destructor ends a capture that
// is still open (an exception on the way) and throws the half-built graph away, so the stream is
// never left capturing and no graph is leaked.
//
// The API (graphs/cuda_api.hpp is the real one): types Stream, Graph, Exec (value-initialised = none)
// and Status, and static functions
//   bool ok(Status)                           Status begin_capture(Stream)
//   Status end_capture(Stream, Graph*)        ends the capture even when it was invalidated
//   Status count_nodes(Graph, size_t*)        Status instantiate(Exec*, Graph)
//   void destroy_graph(Graph) noexcept        void destroy_exec(Exec) noexcept
//   Status launch(Exec, Stream)               Status upload(Exec, Stream)
//   Status synchronize(Stream)                void clear_error() noexcept   (forget a sticky error)
//   [[noreturn]] void fail(Status, const char* call)   throws revgraph::Error naming the call
#include <cstddef>
#include <utility>

#include "engine/cuda_util/nvtx.hpp"
#include "engine/error.hpp"

namespace revgraph::graphs {

template <class Api>
void check(typename Api::Status s, const char* call) {
    if (!Api::ok(s)) Api::fail(s, call);
}

// An instantiated graph, owned. Launch and upload only: nothing here can change what it does.
template <class Api>
class BasicGraphExec {
public:
    using Exec = typename Api::Exec;
    using Stream = typename Api::Stream;

    BasicGraphExec() = default;
    BasicGraphExec(Exec exec, std::size_t nodes) : exec_(exec), nodes_(nodes) {}
    // What a capture that enqueued nothing gives (cuda-fused's normalise at widths other than 82,
    // whose kernels lift each row as they gather it): no executable graph, and a launch that does
    // nothing, rather than asking the driver to instantiate, upload and launch a graph of no nodes.
    static BasicGraphExec nothing() {
        BasicGraphExec g;
        g.nothing_ = true;
        return g;
    }
    ~BasicGraphExec() { free(); }
    BasicGraphExec(BasicGraphExec&& o) noexcept
        : exec_(std::exchange(o.exec_, Exec{})),
          nodes_(std::exchange(o.nodes_, 0)),
          nothing_(std::exchange(o.nothing_, false)) {}
    BasicGraphExec& operator=(BasicGraphExec&& o) noexcept {
        if (this != &o) {
            free();
            exec_ = std::exchange(o.exec_, Exec{});
            nodes_ = std::exchange(o.nodes_, 0);
            nothing_ = std::exchange(o.nothing_, false);
        }
        return *this;
    }
    BasicGraphExec(const BasicGraphExec&) = delete;
    BasicGraphExec& operator=(const BasicGraphExec&) = delete;

    void launch(Stream stream) const {
        if (nothing_) return;
        if (exec_ == Exec{}) throw Error("graphs: launch of a graph that was never captured");
        check<Api>(Api::launch(exec_, stream), "graph launch");
    }
    // Device-side setup done ahead of the first launch.
    void upload(Stream stream) const {
        if (exec_ != Exec{}) check<Api>(Api::upload(exec_, stream), "graph upload");
    }
    std::size_t nodes() const { return nodes_; }
    explicit operator bool() const { return exec_ != Exec{}; }

private:
    Exec exec_{};
    std::size_t nodes_ = 0;
    bool nothing_ = false;  // captured, and held no work

    void free() noexcept {
        if (exec_ != Exec{}) Api::destroy_exec(exec_);
        exec_ = Exec{};
    }
};

template <class Api>
class BasicCaptureGuard {
public:
    using Stream = typename Api::Stream;
    using Graph = typename Api::Graph;
    using Exec = typename Api::Exec;

    explicit BasicCaptureGuard(Stream stream) : stream_(stream) {
        if (stream == Stream{}) throw Error("graphs: capture needs a non-default stream");
        check<Api>(Api::begin_capture(stream_), "begin capture");
        open_ = true;
    }
    ~BasicCaptureGuard() {
        if (!open_) return;
        Graph graph{};
        (void)Api::end_capture(stream_, &graph);  // ends it even when the capture was invalidated
        if (graph != Graph{}) Api::destroy_graph(graph);
        Api::clear_error();  // the error that brought us here has been thrown already
    }
    BasicCaptureGuard(const BasicCaptureGuard&) = delete;
    BasicCaptureGuard& operator=(const BasicCaptureGuard&) = delete;

    BasicGraphExec<Api> instantiate() {
        if (!open_) throw Error("graphs: capture already ended");
        open_ = false;
        Graph graph{};
        const auto ended = Api::end_capture(stream_, &graph);
        if (!Api::ok(ended)) {
            if (graph != Graph{}) Api::destroy_graph(graph);
            Api::fail(ended, "end capture");
        }
        std::size_t nodes = 0;
        Exec exec{};
        auto s = Api::count_nodes(graph, &nodes);
        const bool empty = Api::ok(s) && nodes == 0;
        if (Api::ok(s) && !empty) s = Api::instantiate(&exec, graph);
        Api::destroy_graph(graph);  // the executable graph keeps what it needs
        check<Api>(s, "graph instantiate");
        return empty ? BasicGraphExec<Api>::nothing() : BasicGraphExec<Api>(exec, nodes);
    }

private:
    Stream stream_;
    bool open_ = false;
};

// Capture everything `body(stream)` enqueues on `stream` into one executable graph.
template <class Api, typename Body>
BasicGraphExec<Api> capture_with(typename Api::Stream stream, const char* name, Body&& body) {
    NVTX_RANGE(name);
    BasicCaptureGuard<Api> guard(stream);
    body(stream);
    return guard.instantiate();
}

}  // namespace revgraph::graphs
