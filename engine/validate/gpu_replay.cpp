#include "engine/validate/gpu_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#if defined(REVGRAPH_HAVE_CUDA)
#include "engine/cuda/cuda_backend.hpp"
#endif
#include "engine/cuda/device.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/io/sha256.hpp"
#include "engine/stats.hpp"
#include "engine/runtime_options.hpp"
#include "engine/task.hpp"

namespace revgraph::validate {
namespace {

using json = nlohmann::ordered_json;

// Counts checks; one check = one named tensor (or the scores) compared value by value.
struct Tally {
    double scale = 1;  // of the GPU tolerance: < 1 holds a backend to a margin inside it
    int checks = 0;
    int failed = 0;
    double max_abs = 0;
    double max_excess = -std::numeric_limits<double>::infinity();
    json failures = json::array();

    template <typename W>
    bool close(const std::string& what, const float* got, const W* want, std::size_t n) {
        ++checks;
        double worst_excess = -std::numeric_limits<double>::infinity();
        std::size_t worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double a = got[i], b = static_cast<double>(want[i]);
            const double err = std::fabs(a - b);
            const double excess = std::isfinite(a) ? err - scale * (kGpuAtol + kGpuRtol * std::fabs(b)) : INFINITY;
            max_abs = std::max(max_abs, err);
            if (excess > worst_excess) worst_excess = excess, worst = i;
        }
        max_excess = std::max(max_excess, worst_excess);
        if (worst_excess <= 0) return true;
        ++failed;
        if (failures.size() < 12)
            failures.push_back({{"check", what}, {"index", worst}, {"got", got[worst]}, {"want", double(want[worst])}});
        return false;
    }
    bool equal(const std::string& what, bool same) {
        ++checks;
        if (same) return true;
        ++failed;
        if (failures.size() < 12) failures.push_back({{"check", what}});
        return false;
    }
};

json backend_diagnostics(Backend& backend) {
#if defined(REVGRAPH_HAVE_CUDA)
    if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend)) return cuda->diagnostics();
#endif
    return json{{"backend", backend.name()}};
}

constexpr const char* kRev88Synthetic =
    "synthetic_inputs(10000, 10000, 2026091400): tools/make_synthetic.py --train 10000 --query 10000 --seed "
    "2026091400, byte for byte";

json timing(const std::vector<double>& ms) {
    if (ms.empty()) return json{{"runs", 0}};
    const Summary s = summarize(ms);
    return json{{"median", s.median}, {"min", s.min}, {"max", s.max}, {"runs", s.runs}};
}

}  // namespace

TaskInputs synthetic_inputs(std::int64_t train_count, std::int64_t test_count, std::uint64_t seed) {
    auto t = data::synthetic_task(train_count, test_count, seed);
    return TaskInputs{std::move(t.train_images), std::move(t.train_labels), std::move(t.test_images)};
}

TaskConfig gpu_replay_config(int depth) {
    TaskConfig c;
    c.depth = depth;
    c.seed = 781;
    c.epochs = 2;
    c.batch_size = 8;
    return c;
}

json gpu_replay_case(int depth, const std::string& backend_name, double tolerance_scale) {
    const TaskConfig config = gpu_replay_config(depth);
    PreparedTask task(synthetic_inputs(19, 7, config.seed), config, make_backend(backend_name));
    Backend& gpu = task.backend();
    cpu::Trainer<double> ref(task.prepared());
    // Informational, not a pass/fail check: how many values are the very bits of the float32
    // reference (cuda-fused is built to give exactly those; cuBLASLt sums in its own order).
    cpu::Trainer<float> ref32(task.prepared());
    std::size_t values = 0, bit_equal = 0;
    const auto count_equal = [&](const std::vector<float>& got, const std::vector<float>& want) {
        for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) bit_equal += got[i] == want[i] ? 1 : 0;
        values += got.size();
    };
    const model::Layout& layout = task.layout();

    Tally tally;
    tally.scale = tolerance_scale;
    // 1. Eager steps, each against the float64 reference.
    gpu.reset();
    gpu.normalize();
    ref.reset();
    ref.normalize();
    ref32.reset();
    ref32.normalize();
    json batch_sizes = json::array();
    for (int b = 0; b < ref.batches_per_epoch(); ++b) batch_sizes.push_back(ref.batch_rows(b));
    int steps = 0;
    for (int e = 0; e < config.epochs; ++e)
        for (int b = 0; b < ref.batches_per_epoch(); ++b) {
            gpu.step(e, b);
            ref.step(e, b);
            ref32.step(e, b);
            const TaskState s = gpu.read_state();
            count_equal(s.gradients, ref32.gradients());
            count_equal(s.parameters, ref32.parameters());
            count_equal(s.velocity, ref32.velocity());
            const std::string at = "epoch " + std::to_string(e) + " batch " + std::to_string(b) + " ";
            for (const auto& v : layout.views()) {
                tally.close(at + "gradient " + v.name, s.gradients.data() + v.offset, ref.gradients().data() + v.offset,
                            v.size());
                tally.close(at + "parameter " + v.name, s.parameters.data() + v.offset,
                            ref.parameters().data() + v.offset, v.size());
                tally.close(at + "momentum " + v.name, s.velocity.data() + v.offset, ref.velocity().data() + v.offset,
                            v.size());
            }
            ++steps;
        }
    gpu.predict();
    ref.predict();
    const TaskState eager = gpu.read_state();

    // 2. The captured full run (reset, normalise, epochs, predict as graphs) against the reference.
    task.run();
    const double device_seconds = task.last_run_seconds();
    const TaskState graph = gpu.read_state();
    tally.close("graph run scores", graph.scores.data(), ref.scores().data(), graph.scores.size());
    tally.close("graph run parameters", graph.parameters.data(), ref.parameters().data(), graph.parameters.size());
    tally.close("graph run momentum", graph.velocity.data(), ref.velocity().data(), graph.velocity.size());
    const bool predictions_match = graph.predictions == ref.predictions();
    tally.equal("graph run predictions", predictions_match);
    const bool eager_equals_graph = same_outputs(eager, graph);
    tally.equal("eager steps equal the graph replay byte for byte", eager_equals_graph);

    // 3. A second complete replay: byte-identical.
    task.run();
    const TaskState again = gpu.read_state();
    const bool repeatable = same_outputs(graph, again);
    tally.equal("second replay byte-identical", repeatable);

    const int last_rows = ref.batch_rows(ref.batches_per_epoch() - 1);
    json j;
    j["depth"] = depth;
    j["config"] = config.to_json();
    j["passed"] = tally.failed == 0 && steps == config.epochs * ref.batches_per_epoch();
    j["backend"] = gpu.name();
    j["epochs"] = config.epochs;
    j["batch_sizes"] = batch_sizes;
    j["steps_compared"] = steps;
    j["checks"] = tally.checks;
    j["failed_checks"] = tally.failed;
    j["maximum_abs_error"] = tally.max_abs;
    j["maximum_tolerance_excess"] = tally.max_excess;
    j["tolerance_scale"] = tolerance_scale;
    j["complete_replay_byte_repeatable"] = repeatable;
    j["predictions_match_independent_eager"] = predictions_match;
    j["eager_steps_equal_graph_replay"] = eager_equals_graph;
    j["saved_core_activation_storages"] = gpu.retained_core_states();
    j["saved_core_activation_bytes"] = gpu.retained_core_bytes();  // the full-batch buffer
    j["last_batch_core_activation_bytes"] = static_cast<std::size_t>(last_rows) * model::kFeatures * sizeof(float);
    j["saved_parameter_references"] = layout.branch_count();
    j["run_device_seconds"] = device_seconds;
    j["failures"] = tally.failures;
    j["reference"] = "cpu::Trainer<double>: the reference engine in float64 (reconstructing backward, SGD)";
    j["steps_bit_equal_to_float32_reference"] = {{"values", values}, {"equal", bit_equal}};
    return j;
}

json gpu_repeatability(const TaskInputs& inputs, const TaskConfig& config, int replays,
                       const std::string& backend_name) {
    ReplayOptions replay;
    replay.replays = replays;
    return gpu_repeatability(inputs, config, replay, backend_name);
}

json gpu_repeatability(const TaskInputs& inputs, const TaskConfig& config, const ReplayOptions& replay,
                       const std::string& backend_name) {
    if (replay.replays < 1) throw Error("validate: replays must be >= 1");
    if (replay.cold_replays < 0) throw Error("validate: cold replays must be >= 0");
    if (replay.cold_replays > 0 && !replay.before_cold)
        throw Error("validate: cold replays need what to do before each (an L2 flush)");
    PreparedTask task(inputs, config, make_backend(backend_name));
    Backend& gpu = task.backend();
    std::vector<double> ms, cold_ms;
    task.run();
    ms.push_back(task.last_run_seconds() * 1e3);
    const TaskOutputs first = task.outputs();
    int identical = 1;
    for (int i = 1; i < replay.replays; ++i) {
        task.run();
        ms.push_back(task.last_run_seconds() * 1e3);
        identical += same_outputs(first.state, gpu.read_state()) ? 1 : 0;
    }
    for (int i = 0; i < replay.cold_replays; ++i) {
        replay.before_cold();  // untimed: the run's own events (or clock) start after it
        task.run();
        cold_ms.push_back(task.last_run_seconds() * 1e3);
        identical += same_outputs(first.state, gpu.read_state()) ? 1 : 0;
    }
    const int total = replay.replays + replay.cold_replays;
    json j;
    j["passed"] = identical == total;
    j["backend"] = gpu.name();
    j["device"] = gpu.device();
    j["config"] = config.to_json();
    j["train_count"] = inputs.train_count();
    j["test_count"] = inputs.test_count();
    j["input_hashes"] = first.metadata["input_hashes"];
    j["replays"] = replay.replays;
    j["cold_replays"] = replay.cold_replays;
    j["byte_identical_replays"] = identical;
    j["state_vector_sha256"] = first.metadata["state_vector_sha256"];
    j["final_velocity_sha256"] = io::sha256_hex(first.state.velocity);
    j["predictions_sha256"] = first.metadata["predictions_sha256"];
    j["scores_sha256"] = first.metadata["scores_sha256"];
    j["preparation_seconds"] = task.preparation_seconds();
    j["task_ms"] = timing(ms);
    if (replay.cold_replays > 0) j["task_ms_cold"] = timing(cold_ms);
    j["retained_core_states"] = gpu.retained_core_states();
    j["core_saved_bytes_per_example"] = first.metadata["core_saved_bytes_per_example"];
    j["diagnostics"] = backend_diagnostics(gpu);
    return j;
}

json gpu_validation(int replays, const std::string& backend_name) {
    GpuValidationOptions o;
    o.backend = backend_name;
    o.replay.replays = replays;
    return gpu_validation(o);
}

json gpu_validation(const GpuValidationOptions& options) {
    const std::string& backend_name = options.backend;
    if (cuda::device_count() == 0)
        return json{{"passed", nullptr}, {"run", false}, {"reason", cuda::describe_device()}};
    json out;
    out["passed"] = false;
    out["run"] = true;
    out["device"] = cuda::describe_device(Runtime::options().device);
    out["backend"] = backend_name;
    out["checks"] = 0;
    out["maximum_abs_error"] = 0.0;
    out["tolerance"] = {{"atol", kGpuAtol}, {"rtol", kGpuRtol}};
    bool passed = true;
    int checks = 0;
    double max_abs = 0;
    json cases = json::array();
    for (int depth : {1, 2}) {
        try {
            json c = gpu_replay_case(depth, backend_name);
            checks += c["checks"].get<int>();
            max_abs = std::max(max_abs, c["maximum_abs_error"].get<double>());
            passed = passed && c["passed"].get<bool>();
            cases.push_back(std::move(c));
        } catch (const std::exception& e) {
            passed = false;
            cases.push_back({{"depth", depth}, {"passed", false}, {"error", e.what()}});
        }
    }
    out["checks"] = checks;
    out["maximum_abs_error"] = max_abs;
    out["cases"] = cases;
    try {
        const TaskConfig config = options.config ? *options.config : TaskConfig{};  // rev88: the defaults
        const TaskInputs inputs = options.inputs ? *options.inputs : synthetic_inputs(10000, 10000, 2026091400);
        json r = gpu_repeatability(inputs, config, options.replay, backend_name);
        r["inputs"] = options.inputs ? options.inputs_source : std::string(kRev88Synthetic);
        passed = passed && r["passed"].get<bool>();
        out["replay_repeatability"] = std::move(r);
    } catch (const std::exception& e) {
        passed = false;
        out["replay_repeatability"] = {{"passed", false}, {"error", e.what()}};
    }
    // The workspace is fixed once the GPU is initialised: a different one must be refused.
    RuntimeOptions other = Runtime::options();
    other.cublaslt_workspace_bytes += std::size_t(1) << 20;
    bool late_rejected = false;
    try {
        Runtime::configure(other);
    } catch (const Error&) { late_rejected = true; }
    out["late_cuda_initialization_rejected"] = late_rejected;
    passed = passed && late_rejected;
    out["passed"] = passed;
    out["scope"] =
        "Depth 1 and 2 (seed 781, 19 train / 7 query synthetic images, 2 epochs, batch 8): after every eager step "
        "every gradient, parameter and momentum value versus the float64 reference trainer, one check per named "
        "tensor and quantity; the captured full run's scores, parameters and momentum close, predictions equal, "
        "bytes equal to the eager steps; a second complete replay byte-identical. Then replays of rev88 (or the "
        "config given: replay_repeatability.config) on "
        "replay_repeatability.inputs (10,000/10,000 synthetic images, PCG64 seed 2026091400, unless a task "
        "archive was given), every replay byte-identical, timed back to back (task_ms) and, where asked, each "
        "after an L2 flush (task_ms_cold).";
    return out;
}

}  // namespace revgraph::validate
