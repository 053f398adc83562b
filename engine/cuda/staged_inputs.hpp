#pragma once
// A task's inputs as the plan's input buffers hold them, checked and converted once on the host for
// both uploads: the backend's to the device and the emulator's to its host buffers, so the two start
// from the same bytes and refuse the same things (a permutation index out of range would make the
// step kernels read outside the training rows).
#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cuda/task_plan.hpp"

namespace revgraph::cuda {

struct StagedInputs {
    std::span<const float> initial, train_raw, query_raw;  // the caller's, not copied
    std::vector<std::int32_t> train_labels;                // (N,), 0..9
    std::vector<std::int32_t> permutations;                // epochs x N, each a permutation of 0..N-1's indices
};

// Throws Error (one line, "cuda: ...") where an input does not fit the plan's buffers.
StagedInputs stage_inputs(const TaskPlan& plan, const PreparedInputs& prepared);

}  // namespace revgraph::cuda
