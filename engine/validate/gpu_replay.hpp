#pragma once
// docs/spec.md §8's GPU block, for any GPU backend behind the Backend interface (default "cuda"):
//  - gpu_replay_case: depth 1 or 2, seed 781, 19 train / 7 query synthetic images, 2 epochs,
//    batch 8. After every eager step, every gradient, parameter and momentum value against the
//    float64 reference trainer (atol 2e-5 / rtol 3e-3), one check per named tensor and quantity;
//    then the captured full run: scores close and predictions equal to the reference, equal bytes
//    to the eager steps, and a second complete replay byte-identical.
//  - gpu_repeatability: N complete replays of one prepared task, every one byte-identical
//    (parameters, momentum, scores, predictions), with the device time of each.
//  - gpu_validation: both cases plus N replays of rev88 on 10k/10k synthetic images, shaped like
//    the seed report's `numerical_validation` section.
// Compiled in every build; every function needs a usable GPU, and gpu_validation answers
// {"passed": null, "run": false, "reason": ...} without one (or without CUDA in the build).
#include <cstdint>
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
// Both replay cases, and `replays` replays of rev88 on 10,000 / 10,000 synthetic images.
nlohmann::ordered_json gpu_validation(int replays = 100, const std::string& backend = "cuda");

}  // namespace revgraph::validate
