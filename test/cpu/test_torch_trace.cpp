// The reference engine against PyTorch: traces written by tools/torch_reference.py (plain
// autograd through a storing core, torch.optim.SGD semantics) record every gradient, parameter
// and momentum value after every step of the 19/7 task. See test/vectors/TORCH_VECTORS.md.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/data/draws.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/npz.hpp"
#include "engine/task_files.hpp"
#include "engine/rng/pcg64.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/task.hpp"
#include "test/cpu/support.hpp"

using namespace revgraph;
using revgraph::test::max_excess;

namespace {

std::string vector_path(const std::string& name) {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    return std::string(root ? root : ".") + "/test/vectors/" + name;
}

std::vector<double> as_double(const io::Array& a) {
    if (a.dtype == "<f8") return a.as<double>();
    const auto f = a.as<float>();
    return std::vector<double>(f.begin(), f.end());
}

template <typename T>
void follow_trace(const std::string& trace_name, int depth, std::uint64_t seed, double atol, double rtol,
                  int width = model::kFeatures) {
    const TaskInputs inputs = read_task_inputs(vector_path("synthetic_19x7.npz"));
    const io::NpzArchive trace = io::read_npz(vector_path(trace_name));
    TaskConfig config;
    config.depth = depth;
    config.width = width;
    config.seed = seed;
    config.batch_size = 8;
    const PreparedInputs p = prepare_inputs(inputs, config);

    // Same starting point and order as torch.
    const auto initial = as_double(trace.at("initial_params"));
    REQUIRE(initial.size() == p.initial_parameters.size());
    for (std::size_t i = 0; i < initial.size(); ++i) REQUIRE(double(p.initial_parameters[i]) == initial[i]);
    const auto perms = trace.at("permutations").as<std::int64_t>();
    for (int e = 0; e < 2; ++e)
        for (int i = 0; i < 19; ++i) REQUIRE(p.permutations[e][i] == perms[e * 19 + i]);

    cpu::Trainer<T> t(p);
    t.reset();
    t.normalize();
    int step = 0;
    for (int e = 0; e < 2; ++e)
        for (int b = 0; b < t.batches_per_epoch(); ++b, ++step) {
            t.step(e, b);
            const std::string k = "step" + std::to_string(step);
            CAPTURE(step);
            CHECK(max_excess(t.gradients(), as_double(trace.at(k + ".grad")), atol, rtol) <= 0);
            CHECK(max_excess(t.parameters(), as_double(trace.at(k + ".param")), atol, rtol) <= 0);
            CHECK(max_excess(t.velocity(), as_double(trace.at(k + ".velocity")), atol, rtol) <= 0);
        }
    CHECK(step == 6);
    t.predict();
    CHECK(max_excess(t.scores(), as_double(trace.at("scores")), atol, rtol) <= 0);
    CHECK(t.predictions() == trace.at("predictions").as<std::int64_t>());
}

}  // namespace

TEST_CASE("torch trace: float64 engine follows float64 PyTorch step by step, depth 1 and 2") {
    // Same math in a different summation order: agreement to ~1e-15 relative is expected.
    follow_trace<double>("torch_trace_d1_s781_f64.npz", 1, 781, 1e-13, 1e-10);
    follow_trace<double>("torch_trace_d2_s781_f64.npz", 2, 781, 1e-13, 1e-10);
}

TEST_CASE("torch trace: at width 90 (halves of 45) the engine follows PyTorch step by step, float64 and float32") {
    follow_trace<double>("torch_trace_d1_s781_w90_f64.npz", 1, 781, 1e-13, 1e-10, 90);
    follow_trace<float>("torch_trace_d1_s781_w90_f64.npz", 1, 781, 2e-5, 3e-3, 90);
}

// tools/torch_reference.py (float32, reconstructing backward, as the published learner) on the
// embedded default task at width 128: its initial parameters bit for bit, and after the whole
// task (80 SGD steps) its predictions, final parameters and momentum — on both CPU backends.
TEST_CASE(
    "torch at width 128: the embedded task's initial hashes, predictions and final state, cpu and cpu-reference") {
    const auto bytes = io::read_file(vector_path("torch_embedded_w128_f32.json"));
    const auto meta = nlohmann::json::parse(bytes.begin(), bytes.end());
    const io::NpzArchive torch_state = io::read_npz(vector_path("torch_embedded_w128_f32_state.npz"));
    const auto torch_predictions =
        io::read_npy(vector_path("torch_embedded_w128_f32_predictions.npy")).as<std::int64_t>();
    TaskConfig config;
    config.update_from_json(meta.at("config"));
    REQUIRE(config.width == 128);
    const data::TaskData d = data::embedded_default_task();
    for (const char* backend : {"cpu", "cpu-reference"}) {
        CAPTURE(backend);
        PreparedTask task(TaskInputs(d.train_images, d.train_labels, d.test_images), config, make_backend(backend));
        task.run();
        const TaskOutputs out = task.outputs();
        CHECK(nlohmann::json::parse(out.metadata["input_hashes"].dump()) == meta.at("input_hashes"));  // the same task
        CHECK(nlohmann::json::parse(out.metadata["epoch_permutation_sha256"].dump()) ==
              meta.at("epoch_permutation_sha256"));
        CHECK(nlohmann::json::parse(out.metadata["initial_parameter_sha256"].dump()) ==
              meta.at("initial_parameter_sha256"));
        CHECK(out.metadata["parameter_count"].get<std::int64_t>() == meta.at("parameter_count").get<std::int64_t>());
        CHECK(out.metadata["core_saved_bytes_per_example"] == 4 * 128);
        CHECK(out.state.predictions == torch_predictions);
        const model::Layout layout(config.depth, config.width);
        for (const auto& view : layout.views()) {
            CAPTURE(view.name);
            const std::vector<float> p(out.state.parameters.begin() + view.offset,
                                       out.state.parameters.begin() + view.offset + view.size());
            const std::vector<float> v(out.state.velocity.begin() + view.offset,
                                       out.state.velocity.begin() + view.offset + view.size());
            CHECK(max_excess(p, as_double(torch_state.at(view.name)), 2e-5, 3e-3) <= 0);
            CHECK(max_excess(v, as_double(torch_state.at("velocity." + view.name)), 2e-5, 3e-3) <= 0);
        }
    }
}

TEST_CASE("torch trace: float32 engine follows float32 PyTorch within the GPU tolerance") {
    follow_trace<float>("torch_trace_d2_s11_f32.npz", 2, 11, 2e-5, 3e-3);
}
