// graphs/ on a real device (skipped, exit 77, without one; test/cuda/gpu_main.cpp): the CUDA graph
// API under the same lifecycle the CPU tests hold to a fake. The launchers enqueue host functions
// (cudaLaunchHostFunc, which stream capture records as host nodes), so what the device ran, and in
// which order, is read back as a log on the host.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "engine/cuda_util/check.hpp"
#include "engine/cuda_util/handles.hpp"
#include "engine/error.hpp"
#include "graphs/capture.hpp"
#include "graphs/task_graphs.hpp"

using namespace revgraph;
using Strings = std::vector<std::string>;
using revgraph::cuda::Stream;

namespace {

struct Entry {
    Strings* log;
    std::string what;
};

// A launcher that appends `what` to `log` when the device reaches it.
graphs::LaunchPlan::Launcher logging(Strings& log, std::vector<std::unique_ptr<Entry>>& keep, std::string what) {
    keep.push_back(std::make_unique<Entry>(Entry{&log, std::move(what)}));
    Entry* e = keep.back().get();
    return [e](cudaStream_t s) {
        cudaCheck(cudaLaunchHostFunc(
            s, [](void* p) { static_cast<Entry*>(p)->log->push_back(static_cast<Entry*>(p)->what); }, e));
    };
}

bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaCheck(cudaStreamIsCapturing(s, &status));
    return status != cudaStreamCaptureStatusNone;
}

}  // namespace

TEST_CASE("cuda graphs: warm-up, capture and replays run the launchers in Backend::run's order") {
    Stream stream;
    Strings log;
    std::vector<std::unique_ptr<Entry>> keep;
    graphs::LaunchPlan plan;
    plan.reset = logging(log, keep, "reset");
    plan.normalize = logging(log, keep, "normalize");
    for (int e = 0; e < 2; ++e) plan.epoch_start.push_back(logging(log, keep, "order" + std::to_string(e)));
    for (int b = 0; b < 3; ++b) plan.steps.push_back(logging(log, keep, "step" + std::to_string(b)));
    plan.predict = logging(log, keep, "predict");
    const graphs::TaskGraphs g(stream.s, plan, [](cudaStream_t) {});
    CHECK(log == Strings{"reset", "normalize", "order0", "step0", "step2", "predict"});
    const nlohmann::ordered_json nodes = {
        {"reset", 1}, {"normalize", 1}, {"order", {1, 1}}, {"epoch", 3}, {"predict", 1}};
    CHECK(g.nodes() == nodes);
    log.clear();
    g.reset(stream.s);
    g.normalize(stream.s);
    g.epoch(stream.s, 1);
    g.epoch(stream.s, 1);
    g.predict(stream.s);
    cudaCheck(cudaStreamSynchronize(stream.s));
    CHECK(log == Strings{"reset", "normalize", "order1", "step0", "step1", "step2", "order1", "step0", "step1", "step2",
                         "predict"});
}

TEST_CASE("cuda graphs: a forbidden call mid-capture ends the capture; the stream captures again afterwards") {
    Stream stream;
    CHECK_THROWS_AS(graphs::capture(stream.s, "t", [](cudaStream_t s) { cudaCheck(cudaStreamSynchronize(s)); }), Error);
    CHECK_FALSE(capturing(stream.s));
    CHECK(cudaGetLastError() == cudaSuccess);  // the sticky error was cleared
    Strings log;
    std::vector<std::unique_ptr<Entry>> keep;
    const auto launcher = logging(log, keep, "again");
    const graphs::GraphExec exec = graphs::capture(stream.s, "t", launcher);
    CHECK(exec.nodes() == 1);
    exec.launch(stream.s);
    exec.launch(stream.s);
    cudaCheck(cudaStreamSynchronize(stream.s));
    CHECK(log == Strings{"again", "again"});
}

TEST_CASE("cuda graphs: a capture of nothing (cuda-fused's normalise at widths other than 82) launches nothing") {
    Stream stream;
    const graphs::GraphExec exec = graphs::capture(stream.s, "t", [](cudaStream_t) {});
    CHECK(exec.nodes() == 0);
    CHECK_FALSE(capturing(stream.s));
    exec.upload(stream.s);
    exec.launch(stream.s);
    cudaCheck(cudaStreamSynchronize(stream.s));
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("cuda graphs: an exception thrown by the body ends the capture too") {
    Stream stream;
    CHECK_THROWS_WITH(graphs::capture(stream.s, "t", [](cudaStream_t) { throw Error("refused"); }), "refused");
    CHECK_FALSE(capturing(stream.s));
    CHECK_THROWS_WITH(graphs::CaptureGuard(nullptr), "graphs: capture needs a non-default stream");
}
