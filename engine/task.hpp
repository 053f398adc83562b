#pragma once
// PreparedTask: the task of docs/spec.md as an object. prepare (the constructor) checks the inputs, hashes
// them, draws the epoch permutations and the initial parameters, and hands everything to the
// backend, which allocates and uploads. run() is the timed part and nothing else. outputs()
// copies the results back and computes the hashes and metadata of docs/spec.md §7, with the version,
// commit and time (created_utc) of the build that made them.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.hpp"
#include "engine/config.hpp"
#include "engine/inputs.hpp"
#include "engine/model/layout.hpp"

namespace revgraph {

struct TaskOutputs {
    TaskState state;
    nlohmann::ordered_json metadata;
};

// Query rows whose ten scores are not all finite: a run that diverged (too large a learning rate,
// say) scores NaN, and its predictions for those rows mean nothing. outputs() records the count
// (non_finite_score_rows); divergence_warning is the one line the command and Python give for it,
// "" for none.
std::int64_t non_finite_score_rows(const std::vector<float>& scores);
std::string divergence_warning(std::int64_t non_finite_rows, std::int64_t query_rows);

// Inputs checked and hashed once for many tasks (a sweep's points): hashing takes longer than a
// small task's run. The hashes are computed here from the inputs themselves, so a task built from
// this reports exactly what it would have computed on its own.
class HashedInputs {
public:
    explicit HashedInputs(TaskInputs inputs);  // validates, then hashes
    const TaskInputs& inputs() const { return inputs_; }
    const nlohmann::ordered_json& hashes() const { return hashes_; }  // RESULT.json's input_hashes

private:
    TaskInputs inputs_;
    nlohmann::ordered_json hashes_;
};

class PreparedTask {
public:
    PreparedTask(TaskInputs inputs, const TaskConfig& config, std::unique_ptr<Backend> backend);
    // The same task from inputs already checked and hashed (their memory shared; the hashes reused).
    PreparedTask(const HashedInputs& inputs, const TaskConfig& config, std::unique_ptr<Backend> backend);
    // Pinned: prepared() and the backends point at this object's inputs.
    PreparedTask(const PreparedTask&) = delete;
    PreparedTask& operator=(const PreparedTask&) = delete;

    // Reset from the seed, normalise, train every epoch, predict. Byte-identical every call.
    // after_epoch may throw to stop the run there (Python's Ctrl-C): the backend then waits for what
    // it enqueued, the exception goes on, and the next run() starts from the seed as ever.
    void run(const Backend::EpochHook& after_epoch = nullptr);
    // run() of every task at once, for throughput: the asynchronous (GPU) tasks are all enqueued,
    // each on its own stream, before any is waited for, so their graphs overlap on the device;
    // the others run on up to `threads` worker threads (0: usable_cpus(), one per CPU this process
    // may use). Each task's results are byte-identical to its own run(), and its last_run_seconds()
    // is its own time (device time, or its thread's wall time). Tasks whose backends share a launch
    // group (Backend::launch_group: cuda-fused with clusters) train in one launch, its time each
    // one's (a member's result is still byte-identical to its own run()). Returns the wall time from
    // the first launch to the last task done. A task may appear once; after an error no further
    // task starts, and the first error is rethrown once all stopped. after_epoch, as run()'s, is
    // called by whichever thread ran the epoch (so it must be thread-safe) for every task that runs
    // alone; a launch group's members are not stopped.
    static double run_together(const std::vector<PreparedTask*>& tasks, unsigned threads = 0,
                               const Backend::EpochHook& after_epoch = nullptr);
    // Results of the latest run(), with docs/spec.md §7's metadata: RESULT.json as the command and
    // Python give it, assembled here only. `run_seconds`: the times of the runs the result stands
    // for, in order (the command's --repeat N); empty: the latest run alone. training_prediction_seconds
    // is that run's time ("single run") or, for several, their median ("median"); run_seconds lists them.
    TaskOutputs outputs(const std::vector<double>& run_seconds = {});

    Backend& backend() { return *backend_; }
    const TaskConfig& config() const { return config_; }
    const model::Layout& layout() const { return layout_; }
    const TaskInputs& inputs() const { return inputs_; }
    // What the backend was handed: inputs, config, initial parameters, permutations. Reference
    // trainers built from it follow exactly the same task.
    const PreparedInputs& prepared() const { return prepared_; }
    const rng::EpochOrders& permutations() const { return prepared_.permutations; }
    const std::vector<float>& initial_parameters() const { return prepared_.initial_parameters; }
    double preparation_seconds() const { return preparation_seconds_; }
    double last_run_seconds() const { return last_run_seconds_; }
    int run_count() const { return run_count_; }
    // How many tasks the latest run trained in one launch group, this one included (run_together with
    // Backend::launch_group); 1 for a task that ran alone. Its last_run_seconds() is the group's.
    int last_run_group_size() const { return last_run_group_size_; }

private:
    PreparedTask(TaskInputs inputs, const nlohmann::ordered_json* known_hashes, const TaskConfig& config,
                 std::unique_ptr<Backend> backend);
    // One task's run(), or a launch group's: its first member's Backend::run_group.
    static void run_unit(const std::vector<PreparedTask*>& unit, const Backend::EpochHook& after_epoch);
    TaskInputs inputs_;
    TaskConfig config_;
    model::Layout layout_;
    std::unique_ptr<Backend> backend_;
    PreparedInputs prepared_;
    nlohmann::ordered_json input_hashes_;
    double preparation_seconds_ = 0;
    double last_run_seconds_ = 0;
    int run_count_ = 0;
    int last_run_group_size_ = 1;
};

// What prepare() derives from the seed before any backend sees the task: the initial
// parameters (torch init) and every epoch's permutation (numpy PCG64). `inputs` must outlive
// the result, which points at it.
PreparedInputs prepare_inputs(const TaskInputs& inputs, const TaskConfig& config);

// sha256 of each named parameter's float32 bytes, in name order.
nlohmann::ordered_json parameter_hashes(const model::Layout& layout, const std::vector<float>& flat);

}  // namespace revgraph
