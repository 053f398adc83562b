#pragma once
// A sweep's file: one JSON object per line, one line per grid point, in grid order.
//
//   {"index":3,"points":12,"grid_sha256":"…","config":{...nine keys...},"backend":"cpu","inputs_sha256":"…",
//    "correct":4512,"total":5000,"accuracy":0.9024,"predictions_sha256":"…","scores_sha256":"…",
//    "state_vector_sha256":"…","final_parameter_sha256":{…},"final_velocity_sha256":{…},
//    "run_seconds":0.0043}
//
// "points" is the size of the whole grid (so a merge knows when every point is there),
// "grid_sha256" which grid it is (Grid::digest: a merge refuses shards of two grids),
// "inputs_sha256" names the task's data (inputs_digest), correct/total/accuracy appear where
// the query labels are known, the hashes are those of `revgraph run`'s RESULT.json, and
// "run_seconds" (the only field that differs between two runs of one point) is always last.
// Everything before "correct" is the line's head: known before the point runs, so that a
// resumed sweep can check byte for byte that a line it finds is the point it would write.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/config.hpp"
#include "engine/inputs.hpp"
#include "engine/task.hpp"

namespace revgraph::sweep {

// sha256 of "train_images=H,train_labels=H,test_images=H[,test_labels=H]", H each array's
// sha256 as in RESULT.json's input_hashes; test labels only where known.
std::string inputs_digest(const HashedInputs& inputs, const std::vector<std::int64_t>& test_labels);

// What a point's line says before its results: which point of which grid, run how, on what.
struct PointHead {
    std::size_t index = 0;
    std::size_t points = 0;     // the whole grid's size
    std::string grid_sha256;    // Grid::digest()
    TaskConfig config;          // the grid's point `index`
    std::string backend;        // the backend that runs it
    std::string inputs_sha256;  // inputs_digest()
};

// The head of a point's line: the JSON text up to (not including) the comma before "correct".
std::string line_head(const PointHead& head);

// The whole line, '\n' included: the head, then the results of `out` (a task's outputs()),
// correct/total/accuracy against `test_labels` unless they are empty, then run_seconds.
std::string format_line(const PointHead& head, const TaskOutputs& out, const std::vector<std::int64_t>& test_labels,
                        double run_seconds);

// The line without its ,"run_seconds":... field: what two runs of one point share.
std::string without_times(const std::string& line);

// A file's text as complete lines (without their '\n') and what follows the last '\n'.
struct Lines {
    std::vector<std::string> complete;
    std::string partial;
};
Lines split_lines(const std::string& text);

// Shards' files (name, content) into the file an unsharded sweep writes: every line once, in
// index order. Throws Error when a file is not a sweep file, ends in a partial line (its shard
// did not finish), two lines of one point differ (times aside), the files disagree about the
// grid, its size, the backend or the inputs, or a point is missing.
std::string merge_shards(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace revgraph::sweep
