#include "graphs/task_graphs.hpp"

#include <string>

#include "engine/cuda/check.cuh"
#include "engine/error.hpp"

namespace revgraph::graphs {

TaskGraphs::TaskGraphs(cudaStream_t stream, const LaunchPlan& plan, const std::function<void(cudaStream_t)>& clear)
    : plan_(plan) {
    if (!plan.reset || !plan.normalize || !plan.epoch_start || !plan.steps || !plan.predict || plan.steps->empty())
        throw Error("graphs: an incomplete launch plan");
    warm_up(stream);
    clear(stream);
    cudaCheck(cudaStreamSynchronize(stream));
    {
        NVTX_RANGE("capture");
        reset_ = capture(stream, "capture reset", [&](cudaStream_t s) { plan.reset->launch(s); });
        normalize_ = capture(stream, "capture normalize", [&](cudaStream_t s) { plan.normalize->launch(s); });
        for (const auto& start : *plan.epoch_start)
            order_.push_back(capture(stream, "capture order", [&](cudaStream_t s) { start.launch(s); }));
        if (!order_.empty())
            epoch_ = capture(stream, "capture epoch", [&](cudaStream_t s) {
                for (const auto& step : *plan.steps) step.launch(s);
            });
        predict_ = capture(stream, "capture predict", [&](cudaStream_t s) { plan.predict->launch(s); });
    }
    reset_.upload(stream);
    normalize_.upload(stream);
    for (const auto& o : order_) o.upload(stream);
    epoch_.upload(stream);
    predict_.upload(stream);
    cudaCheck(cudaStreamSynchronize(stream));
}

// Every kernel and every pinned product launched once, eagerly, before any capture: CUDA loads
// modules lazily, and loading one while the stream is capturing is not something to rely on; a
// launch that is refused is also refused here, with a plain error, rather than mid-capture.
void TaskGraphs::warm_up(cudaStream_t stream) const {
    NVTX_RANGE("warm-up");
    plan_.reset->launch(stream);
    plan_.normalize->launch(stream);
    if (!plan_.epoch_start->empty()) plan_.epoch_start->front().launch(stream);  // epochs may be 0
    plan_.steps->front().launch(stream);
    if (plan_.steps->size() > 1) plan_.steps->back().launch(stream);  // the short last batch's shapes
    plan_.predict->launch(stream);
    cudaCheck(cudaStreamSynchronize(stream));
}

void TaskGraphs::require_epochs(int first, int count) const {
    if (first >= 0 && count >= 0 && first + count <= captured_epochs()) return;
    const std::string captured = " (" + std::to_string(captured_epochs()) + " captured)";
    if (count < 0) throw Error("cuda: " + std::to_string(count) + " epochs asked");
    if (count == 1) throw Error("cuda: no epoch " + std::to_string(first) + captured);
    throw Error("cuda: epochs " + std::to_string(first) + " to " + std::to_string(first + count - 1) + " asked" +
                captured);
}

void TaskGraphs::reset(cudaStream_t stream) const { reset_.launch(stream); }
void TaskGraphs::normalize(cudaStream_t stream) const { normalize_.launch(stream); }
void TaskGraphs::predict(cudaStream_t stream) const { predict_.launch(stream); }

void TaskGraphs::epoch(cudaStream_t stream, int e) const {
    require_epochs(e, 1);
    order_[static_cast<std::size_t>(e)].launch(stream);
    epoch_.launch(stream);
}

void TaskGraphs::step(cudaStream_t stream, int e, int b) const {
    require_epochs(e, 1);
    if (b < 0 || b >= static_cast<int>(plan_.steps->size())) throw Error("cuda: no batch " + std::to_string(b));
    (*plan_.epoch_start)[static_cast<std::size_t>(e)].launch(stream);
    (*plan_.steps)[static_cast<std::size_t>(b)].launch(stream);
}

nlohmann::ordered_json TaskGraphs::nodes() const {
    nlohmann::ordered_json nodes;
    nodes["reset"] = reset_.nodes();
    nodes["normalize"] = normalize_.nodes();
    nodes["order"] = nlohmann::ordered_json::array();  // one copy node per epoch
    for (const auto& o : order_) nodes["order"].push_back(o.nodes());
    nodes["epoch"] = epoch_.nodes();
    nodes["predict"] = predict_.nodes();
    return nodes;
}

}  // namespace revgraph::graphs
