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
        g.epoch.push_back(graphs::capture(stream, "capture epoch", [&](cudaStream_t s) { r.epoch(s, e); }));
    g.predict = graphs::capture(stream, "capture predict", r.predict);
    return g;
}

void TaskGraphs::upload(cudaStream_t stream) const {
    reset.upload(stream);
    normalize.upload(stream);
    for (const auto& e : epoch) e.upload(stream);
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
        NVTX_RANGE("epoch");
        epoch[static_cast<std::size_t>(e)].launch(stream);
        if (after_epoch) after_epoch(e);
    }
    NVTX_RANGE("predict");
    predict.launch(stream);
}

}  // namespace revgraph::graphs
