#pragma once
// The graphs of one prepared task, captured once at prepare() and replayed by every timed run:
//   reset      parameters from the seed's copy, momentum and gradients zeroed
//   normalize  raw train and query pixels lifted (timed, as SPEC §8 asks)
//   order[e]   the device-to-device copy of epoch e's resident permutation into the order buffer the
//              step kernels read (one node)
//   epoch      every SGD step of an epoch, the short last batch included, reading that buffer: ONE
//              graph for all epochs, so capture time and graph memory do not grow with the epochs
//   predict    the Q-row forward, scores and predictions
// What goes into each graph is the backend's business (TaskRecorder's callbacks enqueue it); this
// file only orchestrates capture and replay.
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "graphs/capture.hpp"

namespace revgraph::graphs {

struct TaskRecorder {
    std::function<void(cudaStream_t)> reset, normalize, epoch, predict;
    std::function<void(cudaStream_t, int)> order;  // epoch e's permutation into the order buffer
    int epochs = 0;
};

struct TaskGraphs {
    GraphExec reset, normalize;
    std::vector<GraphExec> order;
    GraphExec epoch;
    GraphExec predict;

    static TaskGraphs capture(cudaStream_t stream, const TaskRecorder& recorder);
    void upload(cudaStream_t stream) const;
    // Launches only: reset, normalize, then order[e] and epoch for e = 0..epochs-1, predict. No sync,
    // no allocation. after_epoch(e), when given, is called on the host once epoch e is enqueued.
    void replay(cudaStream_t stream, int epochs, const std::function<void(int)>& after_epoch = nullptr) const;
    // One epoch: its permutation copy, then the epoch graph.
    void launch_epoch(cudaStream_t stream, int e) const;
    int captured_epochs() const { return static_cast<int>(order.size()); }
};

}  // namespace revgraph::graphs
