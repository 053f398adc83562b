// The reference engine against PyTorch: traces written by tools/torch_reference.py (plain
// autograd through a storing core, torch.optim.SGD semantics) record every gradient, parameter
// and momentum value after every step of the 19/7 task. See test/vectors/TORCH_VECTORS.md.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/cpu/trainer.hpp"
#include "engine/io/npz.hpp"
#include "engine/io/task_files.hpp"
#include "engine/rng/pcg64.hpp"
#include "engine/rng/torch_init.hpp"
#include "engine/task.hpp"

using namespace revgraph;

namespace {

std::string vector_path(const std::string& name) {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    return std::string(root ? root : ".") + "/test/vectors/" + name;
}

template <typename T>
double max_excess(const std::vector<T>& got, const std::vector<double>& want, double atol, double rtol) {
    REQUIRE(got.size() == want.size());
    double worst = -INFINITY;
    for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(double(got[i]) - want[i]) - (atol + rtol * std::fabs(want[i])));
    return worst;
}

std::vector<double> as_double(const io::Array& a) {
    if (a.dtype == "<f8") return a.as<double>();
    const auto f = a.as<float>();
    return std::vector<double>(f.begin(), f.end());
}

template <typename T>
void follow_trace(const std::string& trace_name, int depth, std::uint64_t seed, double atol, double rtol) {
    const TaskInputs inputs = io::read_task_inputs(vector_path("synthetic_19x7.npz"));
    const io::NpzArchive trace = io::read_npz(vector_path(trace_name));
    TaskConfig config;
    config.depth = depth;
    config.seed = seed;
    config.batch_size = 8;
    const PreparedInputs p = prepare_inputs(inputs, config);

    // Same starting point and order as torch.
    const auto initial = as_double(trace.at("initial_params"));
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

TEST_CASE("torch trace: float32 engine follows float32 PyTorch within the GPU tolerance") {
    follow_trace<float>("torch_trace_d2_s11_f32.npz", 2, 11, 2e-5, 3e-3);
}
