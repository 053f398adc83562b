#pragma once
// The task plan: which device buffers a task has and how big, the batches of an epoch, and the
// programs (engine/cuda/program.hpp: operations in launch order) of reset, normalise, each epoch,
// each SGD step and predict, for either path (`cuda`'s cuBLASLt products, `cuda-fused`'s kernels).
// Plain data, no CUDA headers: the GPU executes the programs (executor.cpp), the emulator runs the
// same ones on the CPU (emulator.cpp). Defined in task_plan.cpp (check(), which holds a program to
// the plan's buffers, in program.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/config.hpp"
#include "engine/cuda/buffers.hpp"
#include "engine/cuda/program.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda {

// ---- batches -----------------------------------------------------------------------------------

// One SGD step's slice of the epoch order: rows first .. first+rows-1.
struct Batch {
    std::int64_t first = 0;
    int rows = 0;
    bool operator==(const Batch&) const = default;
};

// Consecutive slices of batch_size, the last one short when n % batch_size != 0 (docs/spec.md §5).
std::vector<Batch> epoch_batches(std::int64_t n, int batch_size);

// ---- the task plan -----------------------------------------------------------------------------

// How a step and prediction are launched: cuBLASLt products between small kernels (`cuda`), or two
// fused kernels per step (`cuda-fused`). Reset, normalisation and the epoch's permutation copy are
// the same for both.
enum class Path { cublaslt, fused };
const char* path_name(Path p);
// Whether a path's programs contain matrix products, i.e. need the cuBLASLt library, a handle and
// its workspace. The fused path has none: its backend never loads cuBLASLt (test_plan checks this
// against every program of both paths).
bool path_uses_cublaslt(Path p);
// Whether a path runs a width (docs/spec.md §2), the backends' runs_width: both run every width
// TaskConfig allows — the fused path at 82 on its tuned kernels (engine/cuda/fused.hpp) and elsewhere
// on engine/cuda/fused_any/, the cuBLASLt path with its products and operations at the plan's half
// width (rev88's 41 is their default). The one place a path would refuse a width.
bool path_runs_width(Path p, int width);

// The most bytes of int32 epoch permutations a GPU task keeps resident: 2 GiB, 107,374 epochs of
// MNIST-medium's 5,000 examples. TaskPlan refuses more, in one line, before any work.
constexpr std::uint64_t kMaxResidentPermutationBytes = std::uint64_t{1} << 31;

class TaskPlan {
public:
    // cluster_blocks: 0, or on the fused path at width 82 the blocks of the thread-block cluster
    // that runs each epoch's steps in one launch (FusedEpochsOp; 1..16, sm_90+); the steps' bits are
    // the same either way. Refused in one line elsewhere.
    TaskPlan(const TaskConfig& config, std::int64_t train_count, std::int64_t test_count, Path path = Path::cublaslt,
             int cluster_blocks = 0);

    Path path() const { return path_; }
    // The fused path at a width other than 82: its programs are the any-width step's
    // (FusedAnyStepOp, FusedAnyPredictOp), which lift the raw pixels as they gather them, so
    // normalize() is empty and the lifted-row buffers are not allocated.
    bool any_width() const { return path_ == Path::fused && layout_.width() != model::kFeatures; }

    int cluster_blocks() const { return cluster_blocks_; }
    // Why this plan's path or width has no cluster launch (FusedEpochsOp), or null: the one rule, for
    // the constructor's cluster_blocks and for a whole task's launch (cluster_tasks.hpp).
    const char* cluster_problem() const;

    const TaskConfig& config() const { return config_; }
    const model::Layout& layout() const { return layout_; }
    std::int64_t train_count() const { return n_; }
    std::int64_t test_count() const { return q_; }
    int full_batch() const { return full_batch_; }
    const std::vector<Batch>& batches() const { return batches_; }
    // The distinct row counts a product sees (full batch, the short last batch, Q), ascending.
    std::vector<int> distinct_rows() const;

    // Elements of a buffer; 0 for the scratch the chosen path never touches.
    std::size_t elements(Buf b) const;
    std::size_t bytes(Buf b) const { return elements(b) * elem_bytes(buf_elem(b)); }
    // The one core state kept from forward to backward: full_batch x width floats.
    std::size_t retained_core_bytes() const { return bytes(Buf::state); }

    Program reset() const;             // parameters from the seed's, momentum and gradients 0
    Program normalize() const;         // raw pixels -> lifted rows, train and query
    Program epoch_start(int e) const;  // permutation e -> order
    Program step(int b) const;         // one SGD step on batch b of the current order
    // Every step (cuda's with each SGD and the next gather one launch, SgdGatherOp), or with
    // cluster_blocks one FusedEpochsOp: what the epoch graph captures.
    Program epoch_body() const;
    Program epoch(int e) const;  // epoch_start(e) then epoch_body()
    Program predict() const;     // Q-row forward, scores, argmax

    // Throws Error when an operation reaches outside its buffer or uses the wrong element type.
    void check(const Program& p) const;

private:
    TaskConfig config_;
    model::Layout layout_;
    std::int64_t n_, q_;
    int full_batch_;
    std::vector<Batch> batches_;
    float alpha_;
    Path path_;
    int cluster_blocks_;

    void core_forward(Program& p, int rows, Buf state, Buf act_left, Buf act_right, Buf branch) const;
    // step()'s two paths, and the cuBLASLt step's phases after the forward.
    Program fused_step(const Batch& batch, bool follows_step) const;
    Program fused_any_step(const Batch& batch) const;
    Program cublaslt_step(const Batch& batch) const;
    void head_and_loss(Program& p, int rows) const;
    void reconstructing_backward(Program& p, int rows) const;
    void weight_grads_and_sgd(Program& p, int rows) const;
    Ref act_slot(int i) const;   // branch i's relu input in the activation stack
    Ref grad_slot(int i) const;  // branch i's output gradient in the gradient stack
};

}  // namespace revgraph::cuda
