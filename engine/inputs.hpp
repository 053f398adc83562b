#pragma once
// The three inputs of a task (docs/spec.md §2), checked once at the door so no backend has to.
//
// TaskInputs is a view: three read-only spans and a shared owner that keeps their memory alive.
// Copies share the memory (a sweep's points and a PreparedTask cost no copy of the images), and
// memory that belongs to someone else — a Python caller's numpy arrays — is used in place, the
// owner being a reference to it. Nothing in the engine writes through these spans.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace revgraph {

struct TaskInputs {
    std::span<const float> train_images;         // (N,1,9,9) row-major, values in [0,1]
    std::span<const std::int64_t> train_labels;  // (N,) in 0..9
    std::span<const float> test_images;          // (Q,1,9,9)

    TaskInputs() = default;
    // Copies only, no moves: a copy shares the owner, and a moved-from view would keep spans it
    // no longer owns.
    TaskInputs(const TaskInputs&) = default;
    TaskInputs& operator=(const TaskInputs&) = default;
    // Owning: the vectors move into storage that every copy of these inputs shares.
    TaskInputs(std::vector<float> train_images, std::vector<std::int64_t> train_labels, std::vector<float> test_images);
    // Borrowing: the caller's memory, not copied; `owner` keeps it alive (and unchanged: the hashes
    // and the CPU backends read it) for as long as any copy of these inputs exists.
    static TaskInputs borrow(std::span<const float> train_images, std::span<const std::int64_t> train_labels,
                             std::span<const float> test_images, std::shared_ptr<const void> owner);

    std::int64_t train_count() const { return static_cast<std::int64_t>(train_labels.size()); }
    std::int64_t test_count() const { return static_cast<std::int64_t>(test_images.size() / 81); }

    // Throws revgraph::Error with a one-line reason: empty sets, size mismatches, NaN/inf or
    // out-of-range pixels, labels outside 0..9.
    void validate() const;

private:
    std::shared_ptr<const void> owner_;
};

// An input array as its holder describes it (an .npz member, a numpy array), before the engine
// reads its memory.
struct InputArray {
    std::string dtype;                // numpy's descriptor: "<f4", "<i8", "|u1", ">f4" ...
    std::vector<std::int64_t> shape;  // empty for a 0-d array
    bool c_contiguous = true;         // its memory in C order (an .npz member always is)
    bool aligned = true;              // its memory aligned to its dtype
};

// The one check of the three input arrays before their values (which TaskInputs::validate checks):
// images exactly float32 (<f4) (N, 1, 9, 9), labels exactly int64 (<i8) (N,) — never cast —, each
// C-contiguous and aligned, as many labels as train images. Throws Error "input: <why>", the
// message the command (after the file's name) and Python (as ValueError) both give.
void check_input_arrays(const InputArray& train_images, const InputArray& train_labels, const InputArray& test_images);

}  // namespace revgraph
