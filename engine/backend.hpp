#pragma once
// The one small interface every backend implements. PreparedTask drives it: prepare() does
// everything that may allocate or fail; run() is reset, normalise, every epoch, predict.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/error.hpp"
#include "engine/inputs.hpp"
#include "engine/model/layout.hpp"
#include "engine/rng/epoch_orders.hpp"

namespace revgraph {

// What prepare() hands a backend: checked inputs, config, the seed's initial parameters and
// the epoch permutations, drawn on the host as each epoch needs them (rng::EpochOrders), so
// that memory does not grow with the epoch count; the GPU backends draw them all at prepare.
struct PreparedInputs {
    const TaskInputs* inputs = nullptr;
    TaskConfig config;
    std::vector<float> initial_parameters;  // flat, model::Layout order
    rng::EpochOrders permutations;          // one per epoch
};

// A snapshot of a backend's state, copied to the host (outside any timed region).
struct TaskState {
    std::vector<float> parameters;
    std::vector<float> velocity;
    std::vector<float> gradients;           // of the most recent step
    std::vector<float> scores;              // (Q,10), after predict()
    std::vector<std::int64_t> predictions;  // (Q,)
};

// Whether two runs left the same bytes in everything a result hashes (parameters, velocity, scores,
// predictions; not the last step's gradients, which no output carries): the one test of a replay.
inline bool same_outputs(const TaskState& a, const TaskState& b) {
    return a.parameters == b.parameters && a.velocity == b.velocity && a.scores == b.scores &&
           a.predictions == b.predictions;
}

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;    // its row's reported name (engine/backends.hpp)
    virtual std::string device() const = 0;  // the processor it ran on, in words

    // Whether it computes the model at this width (docs/spec.md §2): the CPU and GPU backends at
    // every width TaskConfig allows (the GPU ones ask cuda::path_runs_width); a backend written for
    // rev88's 82 alone keeps this default. PreparedTask refuses the rest before prepare(), in one line.
    virtual bool runs_width(int width) const { return width == model::kFeatures; }

    virtual void prepare(const PreparedInputs& prepared) = 0;
    // The timed task: reset, normalise, `epochs` epochs, predict. Graph backends replay instead.
    // `after_epoch(e)` (optional) is called once epoch e's work is done (CPU) or enqueued (GPU);
    // it must be cheap, as it runs inside the timed region.
    using EpochHook = std::function<void(int)>;
    virtual void run(int epochs, const EpochHook& after_epoch = nullptr);
    // Phases, also used one by one by tests and benchmarks.
    virtual void reset() = 0;      // parameters from the seed's init, velocity and gradients zero
    virtual void normalize() = 0;  // raw train and query pixels to lifted rows, `width` wide
    virtual void epoch(int e) = 0;
    virtual void predict() = 0;
    // One SGD step (batch b of epoch e), for step-by-step comparison between backends.
    virtual void step(int e, int b) = 0;
    virtual void synchronize() {}
    // True where run() only enqueues the work (the GPU backends, on a stream of their own) and
    // synchronize() waits for it; false where run() does the work itself on the calling thread.
    virtual bool asynchronous() const { return false; }

    // Tasks that train in one launch together: backends of one kind whose launch_group() is the
    // same non-empty text (cuda-fused with clusters: K tasks, K clusters of ONE launch, which is
    // where a cluster earns its keep — alone it is slower than two kernels a step). The default, "",
    // runs alone. PreparedTask::run_together hands each such group, in list order, to its first
    // member's run_group(members), which runs every member's whole task (reset, normalise, its
    // config's epochs, predict) and throws, before enqueueing anything, for a member it cannot take.
    virtual std::string launch_group() const { return {}; }
    virtual void run_group(const std::vector<Backend*>& members);

    virtual TaskState read_state() = 0;
    // Bytes of core activations kept between forward and backward for one full batch,
    // counted from the backend's real buffers.
    virtual std::size_t retained_core_bytes() const = 0;
    virtual int retained_core_states() const { return 1; }
    // A device-side measurement of the last run(), where the backend has one (CUDA events).
    virtual std::optional<double> last_run_device_seconds() const { return std::nullopt; }
};

// The one-line refusal of a width `backend` does not run, "" where it runs it (PreparedTask throws it
// before prepare(); sweep and qualify before any work, through require_runs_width).
inline std::string width_refusal(const Backend& backend, int width) {
    if (backend.runs_width(width)) return "";
    return "backend: " + backend.name() + " runs width " + std::to_string(model::kFeatures) + " only, got width " +
           std::to_string(width) + ": use --backend cuda-fused, cpu or cpu-reference (they run every width)";
}

inline void Backend::run_group(const std::vector<Backend*>&) {
    throw Error("backend: " + name() + " trains no tasks together in one launch");
}

inline void Backend::run(int epochs, const EpochHook& after_epoch) {
    reset();
    normalize();
    for (int e = 0; e < epochs; ++e) {
        epoch(e);
        if (after_epoch) after_epoch(e);
    }
    predict();
}

}  // namespace revgraph
