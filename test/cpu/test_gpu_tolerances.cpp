// The GPU suite's tolerances, held against float32 itself: every check test/cuda/test_gpu.cpp
// makes of a GPU backend against the float64 reference (docs/spec.md §8's replay case, the PyTorch traces
// step by step, odd shapes, parameters past shared memory) is made here of the float32 CPU
// backends, with a 4x margin (each value within a quarter of the tolerance). float32 summed in the
// reference's order (cpu-reference) and in 16 partial sums (cpu, as a GPU reorders sums) passing
// with room to spare means that a GPU failing the same checks has a bug, not float32 rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/backends.hpp"
#include "engine/io/npz.hpp"
#include "engine/task_files.hpp"
#include "engine/task.hpp"
#include "engine/validate/gpu_replay.hpp"
#include "test/cuda/gpu_cases.hpp"

using namespace revgraph;
using gpu_cases::tolerance_ratio;

namespace {

constexpr double kMargin = 0.25;  // of the GPU tolerance
const char* const kCpuBackends[] = {"cpu-reference", "cpu"};

// The worst tolerance ratio seen, per backend, reported at the end of each case.
struct Worst {
    double ratio = 0;
    void see(double r) { ratio = std::max(ratio, r); }
};

// A whole run of `task` against the float64 reference: parameters, momentum and scores within a
// quarter of the GPU tolerance, the predictions where the reference's are clear.
void check_whole_run(PreparedTask& task, Worst& worst) {
    task.run();
    const TaskState s = task.backend().read_state();
    const auto ref = gpu_cases::reference_run(task);
    for (const auto& [got, want] : {std::pair{&s.parameters, &ref.parameters()},
                                    std::pair{&s.velocity, &ref.velocity()}, std::pair{&s.scores, &ref.scores()}}) {
        const double r = tolerance_ratio(*got, *want);
        worst.see(r);
        CHECK(r <= kMargin);
    }
    CHECK(gpu_cases::predictions_agree(s.predictions, ref));
}

}  // namespace

TEST_CASE("GPU tolerances: float32 CPU backends pass docs/spec.md §8's replay case within a quarter of the tolerance") {
    for (const std::string backend : kCpuBackends)
        for (int depth : {1, 2}) {
            CAPTURE(backend);
            CAPTURE(depth);
            const auto j = validate::gpu_replay_case(depth, backend, kMargin);
            INFO(j.dump(2));
            CHECK(j["passed"].get<bool>());
            CHECK(j["steps_compared"] == 6);
            CHECK(j["failed_checks"] == 0);
            CHECK(j["predictions_match_independent_eager"].get<bool>());
            CHECK(j["maximum_tolerance_excess"].get<double>() <= 0);
        }
}

TEST_CASE("GPU tolerances: float32 CPU backends follow the PyTorch traces within a quarter of the tolerance") {
    const std::string dir = gpu_cases::vectors_dir();
    const TaskInputs inputs = read_task_inputs(dir + "synthetic_19x7.npz");
    using gpu_cases::as_double;
    for (const std::string backend : kCpuBackends) {
        Worst worst;
        for (const gpu_cases::Trace& t : gpu_cases::kTorchTraces) {
            CAPTURE(backend);
            CAPTURE(t.file);
            const io::NpzArchive trace = io::read_npz(dir + t.file);
            const TaskConfig c = gpu_cases::trace_config(t);
            PreparedTask task(inputs, c, make_backend(backend));
            Backend& b = task.backend();
            gpu_cases::step_through_trace(b, c.epochs, [&](const TaskState& s, const std::string& k) {
                INFO(k);
                for (const auto& [got, name] : {std::pair{&s.gradients, ".grad"}, std::pair{&s.parameters, ".param"},
                                                std::pair{&s.velocity, ".velocity"}}) {
                    const double r = tolerance_ratio(*got, as_double(trace.at(k + name)));
                    worst.see(r);
                    CHECK(r <= kMargin);
                }
            });
            const TaskState s = b.read_state();
            const double r = tolerance_ratio(s.scores, as_double(trace.at("scores")));
            worst.see(r);
            CHECK(r <= kMargin);
            CHECK(s.predictions == trace.at("predictions").as<std::int64_t>());
        }
        MESSAGE(backend << ": worst |error| / GPU tolerance against the PyTorch traces: " << worst.ratio);
    }
}

TEST_CASE("GPU tolerances: float32 CPU backends match the float64 reference on the odd shapes and past shared memory") {
    for (const std::string backend : kCpuBackends) {
        Worst worst;
        for (const gpu_cases::OddCase& k : gpu_cases::kOddCases) {
            CAPTURE(backend);
            CAPTURE(k.depth);
            CAPTURE(k.n);
            CAPTURE(k.epochs);
            PreparedTask task(validate::synthetic_inputs(k.n, k.q, 99), gpu_cases::odd_config(k),
                              make_backend(backend));
            check_whole_run(task, worst);
        }
        PreparedTask deep(validate::synthetic_inputs(1000, 100, 3), gpu_cases::deep_wide_config(),
                          make_backend(backend));
        check_whole_run(deep, worst);
        MESSAGE(backend << ": worst |error| / GPU tolerance on the odd shapes and depth 40: " << worst.ratio);
    }
}

TEST_CASE("GPU tolerances: float32 CPU backends match the float64 reference at every width the GPU suite runs") {
    // test_gpu.cpp holds `cuda` (cuBLASLt's order) to the tolerance at these widths, depths and
    // batches, on the same inputs: float32 in the reference's order and in 16 partial sums must
    // pass them with the same margin.
    for (const std::string backend : kCpuBackends) {
        Worst worst;
        for (const gpu_cases::WidthCase& k : gpu_cases::width_cases()) {
            CAPTURE(backend);
            CAPTURE(k.width);
            CAPTURE(k.depth);
            CAPTURE(k.batch);
            PreparedTask task(validate::synthetic_inputs(k.batch + 5, 9, 47), gpu_cases::width_config(k),
                              make_backend(backend));
            check_whole_run(task, worst);
        }
        MESSAGE(backend << ": worst |error| / GPU tolerance at the GPU suite's widths: " << worst.ratio);
    }
}
