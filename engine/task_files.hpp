#pragma once
// The files of a task: the input archive (exactly three arrays, nothing else, so no query label
// can reach the learner), predictions, the final state, and the result JSON. The task layer's file
// formats over io/'s readers and writers (io/ knows nothing of tasks).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.hpp"
#include "engine/inputs.hpp"
#include "engine/io/npz.hpp"
#include "engine/model/layout.hpp"

namespace revgraph {

// Reads DRAW.npz: train_images (N,1,9,9) <f4, train_labels (N,) <i8, test_images (Q,1,9,9) <f4.
// Any other array, a missing one, a wrong dtype or shape, or bad values throw a one-line Error.
TaskInputs read_task_inputs(const std::filesystem::path& path);
TaskInputs task_inputs_from_archive(const io::NpzArchive& archive, const std::string& source);
io::NpzArchive task_inputs_archive(const TaskInputs& inputs);

// Query labels for reporting accuracy (Q,) <i8, read apart from the inputs.
std::vector<std::int64_t> read_labels(const std::filesystem::path& path, std::int64_t expected_count);

// The final state: every parameter by name, each momentum as velocity.<name> (float32).
io::NpzArchive state_archive(const model::Layout& layout, const TaskState& state);

// Predictions as int64 (Q,).
io::Array predictions_array(const std::vector<std::int64_t>& predictions);

// Query scores as float32 (Q, 10), the bytes scores_sha256 hashes.
io::Array scores_array(const std::vector<float>& scores);

// "<stem>.predictions.npy" beside RESULT.json.
std::filesystem::path predictions_path_for(const std::filesystem::path& result_json);

}  // namespace revgraph
