// A full training run of the reference engine (docs/spec.md §5) against a straightforward
// double-precision loop written here from the formulas of docs/spec.md, step by step.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/reference_backend.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/error.hpp"
#include "engine/rng/pcg64.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/task.hpp"
#include "test/cpu/support.hpp"

using namespace revgraph;
using revgraph::test::max_excess;
using revgraph::test::synthetic_inputs;

namespace {

TaskConfig smoke_config() {
    TaskConfig c;  // docs/spec.md §8's API/CLI smoke: depth 2, seed 11, 2 epochs, batch 8
    c.batch_size = 8;
    return c;
}

// The independent loop: storing backward in double, SGD written out.
struct DoubleLoop {
    const PreparedInputs& p;
    cpu::Reference<double> ref;
    std::vector<double> params, velocity, grads;
    explicit DoubleLoop(const PreparedInputs& prepared)
        : p(prepared),
          ref(prepared.config.depth, prepared.config.alpha, prepared.config.width),
          params(prepared.initial_parameters.begin(), prepared.initial_parameters.end()),
          velocity(params.size(), 0.0) {}
    void step(int e, int b) {
        const int n = static_cast<int>(p.inputs->train_count()), bs = p.config.batch_size;
        const int rows = std::min(bs, n - b * bs);
        std::vector<double> x;
        std::vector<std::int64_t> labels;
        for (int r = 0; r < rows; ++r) {
            const auto src = p.permutations[e][b * bs + r];
            for (int i = 0; i < 81; ++i) x.push_back(4.0 * double(p.inputs->train_images[src * 81 + i]) - 0.5);
            x.resize(x.size() + static_cast<std::size_t>(p.config.width - 81), 0.0);  // the appended zeros
            labels.push_back(p.inputs->train_labels[src]);
        }
        grads = cpu::batch_gradients(ref, params, x, labels, cpu::BackwardMode::storing).params;
        for (std::size_t i = 0; i < params.size(); ++i) {
            const double d = grads[i] + p.config.weight_decay * params[i];
            velocity[i] = p.config.momentum * velocity[i] + d;
            params[i] -= p.config.learning_rate * velocity[i];
        }
    }
};

}  // namespace

TEST_CASE("training: 19 examples with batch 8 give batches of 8, 8, 3") {
    const auto in = synthetic_inputs(19, 7, 5);
    const auto p = prepare_inputs(in, smoke_config());
    cpu::Trainer<float> t(p);
    CHECK(t.batches_per_epoch() == 3);
    CHECK(t.batch_rows(0) == 8);
    CHECK(t.batch_rows(1) == 8);
    CHECK(t.batch_rows(2) == 3);
}

TEST_CASE_TEMPLATE("training: every step matches an independent double-precision loop", T, float, double) {
    const double atol = sizeof(T) == 8 ? 1e-12 : 2e-5, rtol = sizeof(T) == 8 ? 1e-9 : 3e-3;
    for (const auto& shape : {std::pair{1, 82}, std::pair{2, 82}, std::pair{1, 128}, std::pair{2, 96}}) {
        // Plain variables, not a structured binding: clang 14 cannot capture one in CAPTURE.
        const int depth = shape.first, width = shape.second;
        CAPTURE(depth);
        CAPTURE(width);
        auto c = smoke_config();
        c.depth = depth;
        c.width = width;
        c.weight_decay = depth == 1 ? 1e-3 : 0.0;  // weight decay exercised too
        const auto in = synthetic_inputs(19, 7, 5);
        const auto p = prepare_inputs(in, c);
        cpu::Trainer<T> t(p);
        DoubleLoop ref(p);
        t.reset();
        t.normalize();
        int checks = 0;
        for (int e = 0; e < c.epochs; ++e)
            for (int b = 0; b < t.batches_per_epoch(); ++b) {
                t.step(e, b);
                ref.step(e, b);
                CAPTURE(e);
                CAPTURE(b);
                CHECK(max_excess(t.gradients(), ref.grads, atol, rtol) <= 0);
                CHECK(max_excess(t.parameters(), ref.params, atol, rtol) <= 0);
                CHECK(max_excess(t.velocity(), ref.velocity, atol, rtol) <= 0);
                checks += 3;
            }
        CHECK(checks == 18);
        CHECK(t.parameters().size() == model::Layout(depth, width).total());
        // Training moved the parameters: the comparison above is not of two initial states.
        double moved = 0;
        for (std::size_t i = 0; i < ref.params.size(); ++i)
            moved = std::max(moved, std::fabs(ref.params[i] - p.initial_parameters[i]));
        CHECK(moved > 1e-3);
    }
}

TEST_CASE("training: the task API replays byte-identically and matches the trainer") {
    const auto in = synthetic_inputs(19, 7, 5);
    PreparedTask task(in, smoke_config(), std::make_unique<cpu::ReferenceBackend>());
    task.run();
    const auto first = task.outputs();
    task.run();
    const auto second = task.outputs();
    revgraph::test::check_byte_identical(first, second);
    CHECK(second.metadata["run_count"] == 2);
    CHECK(first.metadata["core_saved_bytes_per_example"] == 328);
    CHECK(first.metadata["parameter_count"] == 7554);
    // The seed report's published seeds: permutations and init of seed 11 for 19 examples.
    CHECK(first.metadata["epoch_permutation_sha256"][0] ==
          "b239ea133199776c85c1b5d0d50d72c764c25ab003d72d4eb8fc1b02f30e1760");
    CHECK(first.metadata["initial_parameter_sha256"]["head.bias"] ==
          "5ce9e9fee433d39fa1edf54bebdd7bf9e6686a86a38b65c7862577d8faf1379d");

    // Same result as driving the trainer directly.
    cpu::Trainer<float> t(prepare_inputs(in, smoke_config()));
    t.reset();
    t.normalize();
    for (int e = 0; e < 2; ++e) t.epoch(e);
    t.predict();
    CHECK(t.parameters() == first.state.parameters);
    CHECK(t.predictions() == first.state.predictions);
}

namespace {
// A backend that keeps the interface's default runs_width (rev88's 82 alone), as the GPU backends
// do, and records whether prepare() was reached.
struct Rev88Only final : Backend {
    bool* prepared;
    explicit Rev88Only(bool* p) : prepared(p) {}
    std::string name() const override { return "rev88-only"; }
    std::string device() const override { return "test"; }
    void prepare(const PreparedInputs&) override { *prepared = true; }
    void reset() override {}
    void normalize() override {}
    void epoch(int) override {}
    void predict() override {}
    void step(int, int) override {}
    TaskState read_state() override { return {}; }
    std::size_t retained_core_bytes() const override { return 0; }
};
}  // namespace

TEST_CASE("task: a backend that runs width 82 alone refuses another in one line, before prepare()") {
    const auto in = synthetic_inputs(19, 7, 5);
    TaskConfig c = smoke_config();
    bool prepared = false;
    CHECK_NOTHROW(PreparedTask(in, c, std::make_unique<Rev88Only>(&prepared)));
    CHECK(prepared);
    c.width = 128;
    prepared = false;
    CHECK_THROWS_WITH_AS(PreparedTask(in, c, std::make_unique<Rev88Only>(&prepared)),
                         "backend: rev88-only runs width 82 only, got width 128: use --backend cuda-fused, cpu or "
                         "cpu-reference (they run every width)",
                         Error);
    CHECK_FALSE(prepared);
    // The CPU backends run it (and the GPU backends: auto picks among them on a GPU, test/cuda/test_gpu.cpp).
    CHECK(make_backend("cpu")->runs_width(128));
    CHECK(make_backend("cpu-reference")->runs_width(1024));
}
