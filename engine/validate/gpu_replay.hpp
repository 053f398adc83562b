#pragma once
// docs/spec.md §8's GPU block, for any GPU backend behind the Backend interface (default "cuda"):
//  - gpu_replay_case: depth 1 or 2, seed 781, 19 train / 7 query synthetic images, 2 epochs,
//    batch 8. After every eager step, every gradient, parameter and momentum value against the
//    float64 reference trainer (atol 2e-5 / rtol 3e-3), one check per named tensor and quantity;
//    then the captured full run: scores close and predictions equal to the reference, equal bytes
//    to the eager steps, and a second complete replay byte-identical.
//  - gpu_repeatability: N complete replays of one prepared task, every one byte-identical
//    (parameters, momentum, scores, predictions), with the device time of each.
//  - gpu_validation: both cases plus N replays of rev88 on 10k/10k synthetic images (or a task
//    archive's inputs: tools/gpu-check times every contender on one file), shaped like the seed
//    report's `numerical_validation` section; optionally more replays each after a caller's L2
//    flush, timed apart (the group's GPU board times both ways).
// Compiled in every build; every function needs a usable GPU, and gpu_validation answers
// {"passed": null, "run": false, "reason": ...} without one (or without CUDA in the build).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config.hpp"
#include "engine/inputs.hpp"

namespace revgraph::validate {

inline constexpr double kGpuAtol = 2e-5;
inline constexpr double kGpuRtol = 3e-3;

// data::synthetic_task's images and train labels (its query labels dropped: a learner never sees them).
TaskInputs synthetic_inputs(std::int64_t train_count, std::int64_t test_count, std::uint64_t seed);

// docs/spec.md §8's small replay configuration at `depth`: seed 781, 2 epochs, batch 8, rev88 otherwise.
TaskConfig gpu_replay_config(int depth);

// `tolerance_scale` < 1 holds the backend to that fraction of the tolerance (the CPU suite runs the
// float32 CPU backends through this case with a margin); any backend name make_backend takes.
nlohmann::ordered_json gpu_replay_case(int depth, const std::string& backend = "cuda", double tolerance_scale = 1);
nlohmann::ordered_json gpu_repeatability(const TaskInputs& inputs, const TaskConfig& config, int replays,
                                         const std::string& backend = "cuda");

// How the replays of one prepared task are run and timed.
struct ReplayOptions {
    int replays = 100;  // back to back, each timed as PreparedTask times a run (CUDA events on a GPU)
    // Then this many more, each after before_cold() (untimed; the GPU programs pass an L2 flush),
    // timed apart as task_ms_cold: a task that finds none of its data in L2, as one task per
    // process would. Every one must give the same bytes as the first replay.
    int cold_replays = 0;
    std::function<void()> before_cold;
};
// As above, plus the inputs' sha256 (`input_hashes`, the keys of RESULT.json's), so a report can
// show that every contender timed the very same bytes. Throws Error on replays < 1, cold_replays < 0,
// or cold replays without before_cold.
nlohmann::ordered_json gpu_repeatability(const TaskInputs& inputs, const TaskConfig& config,
                                         const ReplayOptions& replay, const std::string& backend = "cuda");

struct GpuValidationOptions {
    std::string backend = "cuda";
    ReplayOptions replay;
    // rev88's task for the replays; none: synthetic_inputs(10000, 10000, 2026091400), which is
    // tools/make_synthetic.py --train 10000 --query 10000 --seed 2026091400 byte for byte.
    std::optional<TaskInputs> inputs;
    std::string inputs_source;  // what `inputs` is, in words (a file name), for the report
    // The replays' config (gpu_validation --config/--set: a frontier entry's shape); none: rev88.
    std::optional<TaskConfig> config;
};
// Both replay cases, and the replays of rev88 (or opts.config) on 10,000 / 10,000 synthetic images (or
// opts.inputs).
nlohmann::ordered_json gpu_validation(const GpuValidationOptions& options);
nlohmann::ordered_json gpu_validation(int replays = 100, const std::string& backend = "cuda");

}  // namespace revgraph::validate
