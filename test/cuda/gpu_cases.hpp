#pragma once
// What the GPU suite holds a GPU backend to, in one place: the tolerance checks against the
// float64 reference and the task shapes they are made on. test_gpu.cpp runs them on a GPU;
// test/cpu/test_gpu_tolerances.cpp runs the very same checks on the float32 CPU backends with a
// margin, in every CI run, so that a GPU failing them points at a GPU bug, not at float32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/config.hpp"
#include "engine/io/npy.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/model/layout.hpp"
#include "engine/task.hpp"
#include "engine/validate/gpu_replay.hpp"

namespace revgraph::gpu_cases {

// The reference trainer (float64 by default) through the whole task a prepared task describes.
template <typename T = double>
cpu::Trainer<T> reference_run(const PreparedTask& task) {
    cpu::Trainer<T> ref(task.prepared());
    ref.reset();
    ref.normalize();
    for (int e = 0; e < task.prepared().config.epochs; ++e) ref.epoch(e);
    ref.predict();
    return ref;
}

// A GPU backend and the float32 reference trainer of one prepared task, both reset and normalised:
// ready to take the same steps side by side.
inline void start_side_by_side(Backend& gpu, cpu::Trainer<float>& ref) {
    gpu.reset();
    gpu.normalize();
    ref.reset();
    ref.normalize();
}

// The same bits (memcmp): NaN equals a NaN of the same bits, where == would call any two unequal.
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

inline bool all_finite(const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// The largest |got - want| / (atol + rtol |want|) under the GPU tolerance: <= 1 passes; a NaN,
// an infinity or a size mismatch gives infinity.
inline double tolerance_ratio(const std::vector<float>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return INFINITY;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double r = std::fabs(got[i] - want[i]) / (validate::kGpuAtol + validate::kGpuRtol * std::fabs(want[i]));
        if (!(r <= worst)) worst = std::isnan(r) ? INFINITY : r;
    }
    return worst;
}

// Every value within `scale` times the GPU tolerance of the float64 one.
inline bool within_tolerance(const std::vector<float>& got, const std::vector<double>& want, double scale = 1) {
    return tolerance_ratio(got, want) <= scale;
}

// Predictions equal the float64 reference's, except where its scores for the two classes in
// question are within the GPU tolerance of each other: a near-tie float32 may resolve either way.
template <typename Ref>
bool predictions_agree(const std::vector<std::int64_t>& got, const Ref& ref) {
    const auto& want = ref.predictions();
    const auto& scores = ref.scores();
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] == want[i]) continue;
        if (got[i] < 0 || got[i] >= model::kClasses) return false;
        const double a = scores[i * model::kClasses + static_cast<std::size_t>(got[i])];
        const double b = scores[i * model::kClasses + static_cast<std::size_t>(want[i])];
        if (!(std::fabs(a - b) <= 2 * (validate::kGpuAtol + validate::kGpuRtol * std::fabs(b)))) return false;
    }
    return true;
}

// The committed PyTorch traces (test/vectors/TORCH_VECTORS.md) on the 19/7 task, batch 8.
struct Trace {
    const char* file;
    int depth;
    std::uint64_t seed;
};
// Where the traces are, and their arrays as float64 (a float32 trace widened).
inline std::string vectors_dir() {
    const char* root = std::getenv("REVGRAPH_SOURCE_ROOT");
    return std::string(root ? root : ".") + "/test/vectors/";
}
inline std::vector<double> as_double(const io::Array& a) {
    if (a.dtype == "<f8") return a.as<double>();
    const auto f = a.as<float>();
    return std::vector<double>(f.begin(), f.end());
}
// A trace's task: its depth and seed, batch 8, rev88 otherwise.
// From reset, every step of the trace's two epochs of 3 batches; after each, check(state, "stepK").
template <typename Check>
void step_through_trace(Backend& b, int epochs, Check check) {
    b.reset();
    b.normalize();
    int step = 0;
    for (int e = 0; e < epochs; ++e)
        for (int batch = 0; batch < 3; ++batch, ++step) {
            b.step(e, batch);
            check(b.read_state(), "step" + std::to_string(step));
        }
    b.predict();
}
inline const std::vector<Trace> kTorchTraces = {{"torch_trace_d1_s781_f64.npz", 1, 781},
                                                {"torch_trace_d2_s781_f64.npz", 2, 781},
                                                {"torch_trace_d2_s11_f32.npz", 2, 11}};

inline TaskConfig trace_config(const Trace& t) {
    TaskConfig c;
    c.depth = t.depth;
    c.seed = t.seed;
    c.batch_size = 8;
    return c;
}

// Odd shapes and settings, each run whole and compared after the run (synthetic inputs, seed 99).
struct OddCase {
    int depth, n, q, batch, epochs;
    double weight_decay, momentum;
};
inline const std::vector<OddCase> kOddCases = {{3, 5, 3, 8, 1, 0.0, 0.9},
                                               {1, 9, 4, 8, 2, 1e-3, 0.9},
                                               {2, 19, 7, 8, 0, 0.0, 0.9},
                                               {2, 40, 11, 16, 3, 0.0, 0.0},
                                               {2, 1, 1, 1, 2, 0.0, 0.9}};
inline TaskConfig odd_config(const OddCase& k) {
    TaskConfig c = validate::gpu_replay_config(k.depth);
    c.batch_size = k.batch;
    c.epochs = k.epochs;
    c.weight_decay = k.weight_decay;
    c.momentum = k.momentum;
    return c;
}

// Parameters past any block's shared memory: depth 40 (80 branches x 1681 floats = 538 KB), batch
// 1024 (256-row blocks staged 128 rows at a time), on 1000 / 100 synthetic images (seed 3).
inline TaskConfig deep_wide_config() {
    TaskConfig c;
    c.depth = 40;
    c.batch_size = 1024;
    return c;
}

// The GPU backends at widths other than 82: these widths at depths 1, 2, 4, 8 and batches 8, 128,
// 512, on batch + 5 synthetic rows (a short last batch), one epoch — up to a budget of the CPU
// reference's work, h² x depth x rows <= 64² x 8 x 517 (all of width 128; width 1024 at batch 8 to
// depth 4), since the reference runs on the CPU and gpu-check gives the whole GPU suite 75 s
// (tools/gpu_check/plan.py): 63 shapes, ~1.6 G multiply-adds a reference pass.
struct WidthCase {
    int width, depth, batch;
};
inline std::vector<WidthCase> width_cases() {
    std::vector<WidthCase> cases;
    for (const int width : {84, 90, 128, 192, 256, 512, 1024})
        for (const int depth : {1, 2, 4, 8})
            for (const int batch : {8, 128, 512}) {
                const std::int64_t h = width / 2, work = h * h * depth * (batch + 5);
                if (work <= std::int64_t{64} * 64 * 8 * 517) cases.push_back({width, depth, batch});
            }
    return cases;
}
inline TaskConfig width_config(const WidthCase& k) {
    TaskConfig c = validate::gpu_replay_config(k.depth);
    c.width = k.width;
    c.batch_size = k.batch;
    c.epochs = 1;
    c.learning_rate = 0.05;  // deep and wide at rev88's 0.1 may diverge, and NaNs test nothing
    return c;
}

}  // namespace revgraph::gpu_cases
