// graphs/' lifecycle on the CPU, over a fake graph API that records every call
// (test/graphs/fake_graph_api.hpp): captures end and free their graph whatever happens, the task's
// graphs are warmed up, captured and replayed in Backend::run's order, and each replay launches
// exactly the graphs it names. The CUDA instance runs on a device in test_graphs_gpu.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/error.hpp"
#include "graphs/basic_capture.hpp"
#include "graphs/basic_task_graphs.hpp"
#include "test/graphs/fake_graph_api.hpp"

using namespace revgraph;
using graphs::test::FakeGraphApi;
using Strings = std::vector<std::string>;
using GraphExec = graphs::BasicGraphExec<FakeGraphApi>;
using TaskGraphs = graphs::BasicTaskGraphs<FakeGraphApi>;

namespace {

constexpr int kStream = 7;
auto& world() { return FakeGraphApi::w; }
void fresh_world() { FakeGraphApi::w = {}; }

// A plan of named launchers: each enqueues its name (one node).
TaskGraphs::LaunchPlan named_plan(int epochs, int steps) {
    const auto named = [](std::string what) { return [what](int s) { FakeGraphApi::enqueue(s, what); }; };
    TaskGraphs::LaunchPlan p;
    p.reset = named("reset");
    p.normalize = named("normalize");
    for (int e = 0; e < epochs; ++e) p.epoch_start.push_back(named("order" + std::to_string(e)));
    for (int b = 0; b < steps; ++b) p.steps.push_back(named("step" + std::to_string(b)));
    p.predict = named("predict");
    return p;
}

void clear_marker(int s) { FakeGraphApi::enqueue(s, "clear"); }

}  // namespace

TEST_CASE("capture: the graph holds what the body enqueued, and only the executable graph stays") {
    fresh_world();
    {
        const GraphExec g = graphs::capture_with<FakeGraphApi>(kStream, "t", [](int s) {
            FakeGraphApi::enqueue(s, "a");
            FakeGraphApi::enqueue(s, "b");
        });
        CHECK(g.nodes() == 2);
        CHECK(world().capturing.empty());
        CHECK(world().graphs.empty());  // destroyed once instantiated
        CHECK(world().execs.size() == 1);
        CHECK(world().ran.empty());  // captured, not run
        g.launch(kStream);
        g.launch(kStream);
        CHECK(world().ran == Strings{"a", "b", "a", "b"});
    }
    CHECK(world().execs.empty());  // freed with its owner
}

TEST_CASE("capture: a body that enqueues nothing gives no executable graph, and its launch does nothing") {
    fresh_world();
    {
        const GraphExec g = graphs::capture_with<FakeGraphApi>(kStream, "t", [](int) {});
        CHECK(g.nodes() == 0);
        CHECK(world().capturing.empty());
        CHECK(world().graphs.empty());
        CHECK(world().execs.empty());  // nothing instantiated
        g.upload(kStream);
        g.launch(kStream);
        CHECK(world().ran.empty());
        GraphExec first = graphs::capture_with<FakeGraphApi>(kStream, "t", [](int) {});
        GraphExec moved = std::move(first);
        moved.launch(kStream);  // the empty capture's no-op travels with a move
        CHECK(world().ran.empty());
    }
    CHECK_THROWS_WITH(GraphExec().launch(kStream), "graphs: launch of a graph that was never captured");
}

TEST_CASE("capture: an exception in the body ends the capture and frees the half-built graph") {
    fresh_world();
    CHECK_THROWS_WITH(graphs::capture_with<FakeGraphApi>(kStream, "t",
                                                         [](int s) {
                                                             FakeGraphApi::enqueue(s, "a");
                                                             throw Error("launch refused");
                                                         }),
                      "launch refused");
    CHECK(world().capturing.empty());
    CHECK(world().graphs.empty());
    CHECK(world().execs.empty());
    CHECK(world().cleared_errors == 1);
    // The stream is usable again: a new capture succeeds.
    CHECK(graphs::capture_with<FakeGraphApi>(kStream, "t", [](int s) { FakeGraphApi::enqueue(s, "b"); }).nodes() == 1);
}

TEST_CASE("capture: a forbidden call invalidates the capture; ending it fails and nothing is left") {
    fresh_world();
    CHECK_THROWS(graphs::capture_with<FakeGraphApi>(kStream, "t", [](int s) { FakeGraphApi::forbidden(s); }));
    CHECK(world().capturing.empty());
    CHECK(world().invalidated.empty());
    CHECK(world().graphs.empty());
    CHECK(world().execs.empty());
}

TEST_CASE("capture: failures of end, node count and instantiate free the graph and throw") {
    for (const char* call : {"end", "nodes", "instantiate"}) {
        CAPTURE(call);
        fresh_world();
        world().fail = {call};
        CHECK_THROWS_AS(graphs::capture_with<FakeGraphApi>(kStream, "t", [](int s) { FakeGraphApi::enqueue(s, "a"); }),
                        Error);
        CHECK(world().capturing.empty());
        CHECK(world().graphs.empty());
        CHECK(world().execs.empty());
    }
}

TEST_CASE("capture: refused on the default stream, a failed begin leaves nothing open, one instantiate only") {
    fresh_world();
    CHECK_THROWS_WITH(graphs::BasicCaptureGuard<FakeGraphApi>(0), "graphs: capture needs a non-default stream");
    world().fail = {"begin"};
    CHECK_THROWS(graphs::BasicCaptureGuard<FakeGraphApi>(kStream));
    CHECK(world().cleared_errors == 0);  // the guard never opened, so its destructor did nothing
    world().fail.clear();
    graphs::BasicCaptureGuard<FakeGraphApi> guard(kStream);
    (void)guard.instantiate();
    CHECK_THROWS_WITH(guard.instantiate(), "graphs: capture already ended");
}

TEST_CASE("graph exec: moves hand over ownership, an empty one refuses to launch") {
    fresh_world();
    GraphExec a = graphs::capture_with<FakeGraphApi>(kStream, "t", [](int s) { FakeGraphApi::enqueue(s, "a"); });
    GraphExec b = std::move(a);
    CHECK_FALSE(static_cast<bool>(a));
    CHECK(static_cast<bool>(b));
    CHECK(world().execs.size() == 1);
    CHECK_THROWS_WITH(a.launch(kStream), "graphs: launch of a graph that was never captured");
    a.upload(kStream);  // nothing to upload: no call
    b = GraphExec();
    CHECK(world().execs.empty());
}

TEST_CASE("task graphs: warm-up runs each launcher once before any capture, then clear, then capture") {
    fresh_world();
    const TaskGraphs g(kStream, named_plan(3, 4), clear_marker);
    // Warm-up: reset, normalize, the first epoch's start, the first and the last step, predict.
    CHECK(world().ran == Strings{"reset", "normalize", "order0", "step0", "step3", "predict", "clear"});
    CHECK(g.captured_epochs() == 3);
    const nlohmann::ordered_json expected = {
        {"reset", 1}, {"normalize", 1}, {"order", {1, 1, 1}}, {"epoch", 4}, {"predict", 1}};
    CHECK(g.nodes() == expected);
    CHECK(world().graphs.empty());
    CHECK(world().execs.size() == 7);  // reset, normalize, 3 orders, epoch, predict
    for (const auto& entry : world().execs) {
        const auto exec =
            entry.first;  // a plain variable: CAPTURE's lambda cannot take a structured binding (clang 14)
        CAPTURE(exec);
        CHECK(world().uploads[exec] == 1);
        CHECK(world().launches[exec] == 0);
    }
}

TEST_CASE("task graphs: replays launch in Backend::run's order, each graph exactly as often as asked") {
    fresh_world();
    {
        const TaskGraphs g(kStream, named_plan(2, 3), clear_marker);
        world().ran.clear();
        g.reset(kStream);
        g.normalize(kStream);
        g.epoch(kStream, 1);
        g.epoch(kStream, 0);
        g.epoch(kStream, 1);
        g.predict(kStream);
        CHECK(world().ran == Strings{"reset", "normalize", "order1", "step0", "step1", "step2", "order0", "step0",
                                     "step1", "step2", "order1", "step0", "step1", "step2", "predict"});
        // Launch counts by what each graph holds: 1 reset, 1 normalize, order0 once, order1 twice,
        // the one epoch graph three times, predict once.
        std::map<std::string, int> by_first;
        for (const auto& [exec, nodes] : world().execs) by_first[nodes.front()] = world().launches[exec];
        CHECK(by_first ==
              std::map<std::string, int>{
                  {"reset", 1}, {"normalize", 1}, {"order0", 1}, {"order1", 2}, {"step0", 3}, {"predict", 1}});
        CHECK_THROWS_WITH(g.epoch(kStream, 2), "graphs: no epoch 2 (2 captured)");
        CHECK_THROWS_WITH(g.epoch(kStream, -1), "graphs: no epoch -1 (2 captured)");
    }
    CHECK(world().execs.empty());
}

TEST_CASE("task graphs: zero epochs capture no epoch graph; a single step is warmed up once") {
    fresh_world();
    const TaskGraphs g(kStream, named_plan(0, 1), clear_marker);
    CHECK(world().ran == Strings{"reset", "normalize", "step0", "predict", "clear"});
    CHECK(g.captured_epochs() == 0);
    CHECK(g.nodes()["epoch"] == 0);
    CHECK_THROWS_WITH(g.epoch(kStream, 0), "graphs: no epoch 0 (0 captured)");
}

TEST_CASE("task graphs: a launcher that fails mid-capture leaves no capture, graph or executable graph") {
    fresh_world();
    TaskGraphs::LaunchPlan p = named_plan(2, 2);
    p.steps[1] = [](int s) {
        FakeGraphApi::enqueue(s, "step1");
        FakeGraphApi::forbidden(s);  // fine eagerly (warm-up), refused while capturing the epoch
    };
    CHECK_THROWS_WITH(TaskGraphs(kStream, p, clear_marker), "fake: operation not permitted when stream is capturing");
    CHECK(world().capturing.empty());
    CHECK(world().graphs.empty());
    CHECK(world().execs.empty());  // the graphs captured before it were freed too
}

TEST_CASE("task graphs: an incomplete plan is refused before anything runs") {
    fresh_world();
    TaskGraphs::LaunchPlan p = named_plan(1, 1);
    p.steps.clear();
    CHECK_THROWS_WITH(TaskGraphs(kStream, p, clear_marker), "graphs: an incomplete launch plan");
    p = named_plan(1, 1);
    p.predict = nullptr;
    CHECK_THROWS_WITH(TaskGraphs(kStream, p, clear_marker), "graphs: an incomplete launch plan");
    CHECK(world().ran.empty());
}
