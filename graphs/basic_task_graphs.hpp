#pragma once
// The whole life of one prepared task's graphs, over launchers the backend hands in (callables that
// enqueue work on a stream; graphs/ never sees what they launch) and a graph API
// (graphs/basic_capture.hpp; the CUDA one in graphs/task_graphs.hpp):
//   warm-up    every launcher run once, eagerly, before any capture (of a launcher a step, the first
//              and the last: the short last batch has shapes of its own; the CUDA backend hands in one
//              launcher for the whole epoch, which then runs once); then the caller's clear() puts
//              what the launches wrote back to its starting state
//   capture    one graph each, instantiated and uploaded:
//     reset      parameters from the seed's copy, momentum and gradients zeroed
//     normalize  raw train and query pixels lifted (timed, as docs/spec.md §8 asks)
//     order[e]   epoch e's start: the copy of its resident permutation into the order buffer the step
//                launches read
//     epoch      every step of an epoch, the short last batch included, reading that buffer: ONE
//                graph for all epochs, so capture time and graph memory do not grow with the epochs
//     predict    the query forward, scores and predictions
//   replay     reset(), normalize(), epoch(e) = order[e] then epoch, predict(): Backend::run's order
// Stream capture and graph instantiation happen here and nowhere else. The launchers are used only
// while the constructor runs; errors here say "graphs:", the backend words its own range checks.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cuda_util/nvtx.hpp"
#include "engine/error.hpp"
#include "graphs/basic_capture.hpp"

namespace revgraph::graphs {

template <class Stream>
struct BasicLaunchPlan {
    using Launcher = std::function<void(Stream)>;
    Launcher reset, normalize;
    std::vector<Launcher> epoch_start;  // per epoch: permutation -> order (may be empty: 0 epochs)
    std::vector<Launcher> steps;        // the epoch's, in order: one a batch, or one for them all; at least one
    Launcher predict;
};

template <class Api>
class BasicTaskGraphs {
public:
    using Stream = typename Api::Stream;
    using LaunchPlan = BasicLaunchPlan<Stream>;

    BasicTaskGraphs() = default;
    // Warm-up, clear(stream), capture, instantiate and upload; returns once the stream is idle.
    BasicTaskGraphs(Stream stream, const LaunchPlan& plan, const std::function<void(Stream)>& clear) {
        if (!plan.reset || !plan.normalize || !plan.predict || plan.steps.empty())
            throw Error("graphs: an incomplete launch plan");
        warm_up(stream, plan);
        clear(stream);
        check<Api>(Api::synchronize(stream), "stream synchronize");
        {
            NVTX_RANGE("capture");
            reset_ = capture_with<Api>(stream, "capture reset", plan.reset);
            normalize_ = capture_with<Api>(stream, "capture normalize", plan.normalize);
            for (const auto& start : plan.epoch_start)
                order_.push_back(capture_with<Api>(stream, "capture order", start));
            if (!order_.empty())
                epoch_ = capture_with<Api>(stream, "capture epoch", [&](Stream s) {
                    for (const auto& step : plan.steps) step(s);
                });
            predict_ = capture_with<Api>(stream, "capture predict", plan.predict);
        }
        reset_.upload(stream);
        normalize_.upload(stream);
        for (const auto& o : order_) o.upload(stream);
        epoch_.upload(stream);
        predict_.upload(stream);
        check<Api>(Api::synchronize(stream), "stream synchronize");
    }

    // Graph launches only: no sync, no allocation.
    void reset(Stream stream) const { reset_.launch(stream); }
    void normalize(Stream stream) const { normalize_.launch(stream); }
    void epoch(Stream stream, int e) const {  // order[e], then the epoch graph
        if (e < 0 || e >= captured_epochs())
            throw Error("graphs: no epoch " + std::to_string(e) + " (" + std::to_string(captured_epochs()) +
                        " captured)");
        order_[static_cast<std::size_t>(e)].launch(stream);
        epoch_.launch(stream);
    }
    void predict(Stream stream) const { predict_.launch(stream); }

    int captured_epochs() const { return static_cast<int>(order_.size()); }
    // Node counts per graph, for diagnostics.
    nlohmann::ordered_json nodes() const {
        nlohmann::ordered_json nodes;
        nodes["reset"] = reset_.nodes();
        nodes["normalize"] = normalize_.nodes();
        nodes["order"] = nlohmann::ordered_json::array();  // one per epoch
        for (const auto& o : order_) nodes["order"].push_back(o.nodes());
        nodes["epoch"] = epoch_.nodes();
        nodes["predict"] = predict_.nodes();
        return nodes;
    }

private:
    BasicGraphExec<Api> reset_, normalize_;
    std::vector<BasicGraphExec<Api>> order_;
    BasicGraphExec<Api> epoch_;
    BasicGraphExec<Api> predict_;

    // Every launcher once, eagerly, before any capture: CUDA loads modules lazily, and loading one
    // while the stream is capturing is not something to rely on; a launch that is refused is also
    // refused here, with a plain error, rather than mid-capture.
    static void warm_up(Stream stream, const LaunchPlan& plan) {
        NVTX_RANGE("warm-up");
        plan.reset(stream);
        plan.normalize(stream);
        if (!plan.epoch_start.empty()) plan.epoch_start.front()(stream);  // epochs may be 0
        // The first step before any other, as in the epoch graph: a later step's launches may take a
        // step as their predecessor on the stream (cuda-fused's rows kernel then gathers its rows
        // before it waits: TaskPlan::fused_step). One launcher for the whole epoch runs it all.
        plan.steps.front()(stream);
        if (plan.steps.size() > 1) plan.steps.back()(stream);  // the short last batch's shapes
        plan.predict(stream);
        check<Api>(Api::synchronize(stream), "stream synchronize");
    }
};

}  // namespace revgraph::graphs
