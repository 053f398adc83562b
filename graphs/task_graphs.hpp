#pragma once
// The graphs of one prepared task, captured once at prepare() and replayed by every timed run:
//   reset      parameters from the seed's copy, momentum and gradients zeroed
//   normalize  raw train and query pixels lifted (timed, as SPEC §8 asks)
//   epoch[e]   the device-to-device copy of epoch e's resident permutation into the order buffer the
//              step kernels read, then every SGD step of the epoch, the short last batch included
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
    std::function<void(cudaStream_t)> reset, normalize, predict;
    std::function<void(cudaStream_t, int)> epoch;
    int epochs = 0;
};

struct TaskGraphs {
    GraphExec reset, normalize;
    std::vector<GraphExec> epoch;
    GraphExec predict;

    static TaskGraphs capture(cudaStream_t stream, const TaskRecorder& recorder);
    void upload(cudaStream_t stream) const;
    // Launches only: reset, normalize, epochs 0..epochs-1, predict. No sync, no allocation.
    // after_epoch(e), when given, is called on the host once epoch e's graph is enqueued.
    void replay(cudaStream_t stream, int epochs, const std::function<void(int)>& after_epoch = nullptr) const;
    int captured_epochs() const { return static_cast<int>(epoch.size()); }
};

}  // namespace revgraph::graphs
