#pragma once
// The whole life of one prepared task's CUDA graphs, over the launch plan engine/cuda compiled
// (engine/cuda/executor.hpp):
//   warm-up    every kernel and pinned product launched once, eagerly, before any capture; then the
//              backend's clear() puts what the programs wrote back to zeros
//   capture    one graph each, instantiated and uploaded:
//     reset      parameters from the seed's copy, momentum and gradients zeroed
//     normalize  raw train and query pixels lifted (timed, as docs/spec.md §8 asks)
//     order[e]   the device-to-device copy of epoch e's resident permutation into the order buffer the
//                step kernels read (one node)
//     epoch      every SGD step of an epoch, the short last batch included, reading that buffer: ONE
//                graph for all epochs, so capture time and graph memory do not grow with the epochs
//     predict    the Q-row forward, scores and predictions
//   replay     reset(), normalize(), epoch(e) = order[e] then epoch, predict(): Backend::run's order
// Stream capture and graph instantiation happen here and nowhere else.
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cuda/executor.hpp"
#include "graphs/capture.hpp"

namespace revgraph::graphs {

// What engine/cuda provides: a task's compiled programs, owned by the caller, who keeps them alive
// as long as the graphs (the eager step() launches them).
struct LaunchPlan {
    const cuda::CompiledProgram* reset = nullptr;
    const cuda::CompiledProgram* normalize = nullptr;
    const std::vector<cuda::CompiledProgram>* epoch_start = nullptr;  // per epoch: permutation -> order
    const std::vector<cuda::CompiledProgram>* steps = nullptr;        // per batch of an epoch
    const cuda::CompiledProgram* predict = nullptr;
};

class TaskGraphs {
public:
    TaskGraphs() = default;
    // Warm-up, clear(stream), capture, instantiate and upload; returns once the stream is idle.
    TaskGraphs(cudaStream_t stream, const LaunchPlan& plan, const std::function<void(cudaStream_t)>& clear);

    // Graph launches only: no sync, no allocation.
    void reset(cudaStream_t stream) const;
    void normalize(cudaStream_t stream) const;
    void epoch(cudaStream_t stream, int e) const;  // order[e], then the epoch graph
    void predict(cudaStream_t stream) const;
    // Eager, for step-by-step comparison: epoch e's permutation copy, then batch b's launches.
    void step(cudaStream_t stream, int e, int b) const;

    int captured_epochs() const { return static_cast<int>(order_.size()); }
    // Throws Error unless epochs first .. first+count-1 were captured: the one range check.
    void require_epochs(int first, int count) const;
    // Node counts per graph, for diagnostics.
    nlohmann::ordered_json nodes() const;

private:
    LaunchPlan plan_;
    GraphExec reset_, normalize_;
    std::vector<GraphExec> order_;
    GraphExec epoch_;
    GraphExec predict_;

    void warm_up(cudaStream_t stream) const;
};

}  // namespace revgraph::graphs
