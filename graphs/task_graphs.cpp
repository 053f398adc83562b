#include "graphs/task_graphs.hpp"

#include <string>

#include "engine/error.hpp"

namespace revgraph::graphs {

TaskGraphs TaskGraphs::capture(cudaStream_t stream, const TaskRecorder& r) {
    NVTX_RANGE("capture");
    TaskGraphs g;
    g.reset = graphs::capture(stream, "capture reset", r.reset);
    g.normalize = graphs::capture(stream, "capture normalize", r.normalize);
    for (int e = 0; e < r.epochs; ++e)
        g.order.push_back(graphs::capture(stream, "capture order", [&](cudaStream_t s) { r.order(s, e); }));
    if (r.epochs > 0) g.epoch = graphs::capture(stream, "capture epoch", r.epoch);
    g.predict = graphs::capture(stream, "capture predict", r.predict);
    return g;
}

void TaskGraphs::upload(cudaStream_t stream) const {
    reset.upload(stream);
    normalize.upload(stream);
    for (const auto& o : order) o.upload(stream);
    epoch.upload(stream);
    predict.upload(stream);
}

void TaskGraphs::replay(cudaStream_t stream, int epochs, const std::function<void(int)>& after_epoch) const {
    if (epochs < 0 || epochs > captured_epochs())
        throw Error("graphs: " + std::to_string(epochs) + " epochs asked, " + std::to_string(captured_epochs()) +
                    " captured");
    {
        NVTX_RANGE("reset");
        reset.launch(stream);
    }
    {
        NVTX_RANGE("normalize");
        normalize.launch(stream);
    }
    for (int e = 0; e < epochs; ++e) {
        launch_epoch(stream, e);
        if (after_epoch) after_epoch(e);
    }
    NVTX_RANGE("predict");
    predict.launch(stream);
}

void TaskGraphs::launch_epoch(cudaStream_t stream, int e) const {
    if (e < 0 || e >= captured_epochs()) throw Error("graphs: no epoch " + std::to_string(e));
    NVTX_RANGE("epoch");
    order[static_cast<std::size_t>(e)].launch(stream);
    epoch.launch(stream);
}

}  // namespace revgraph::graphs
