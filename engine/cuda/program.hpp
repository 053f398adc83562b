#pragma once
// The CUDA backend's launch plan as plain data, with no CUDA headers: which device buffers exist and
// how big they are, the batches of an epoch, and every operation of reset / normalise / one SGD step /
// predict in launch order. The GPU executes these programs (engine/cuda/executor.cpp) and a CPU
// interpreter (engine/cuda/emulator.cpp) runs the very same programs, so the order of operations,
// offsets, leading dimensions and transposes are tested on machines without a GPU, bit for bit
// against the float reference trainer.
//
// Conventions. Every 2-D array is row-major in memory: a core state is rows x 82 (left half = columns
// 0..40, right half = 41..81), the relu/branch/gradient scratch arrays are rows x 41, scores rows x 10,
// a branch weight 41x41 [out, in], head.weight 10x82 [out, in]. Matrix products are described the
// way cuBLASLt (column-major BLAS) sees them: a row-major R x C array with leading dimension L *is*
// a column-major C x R matrix with leading dimension L, its transpose. So the halves of the 82-wide
// state are used in place: the right half is the column-major 41 x rows matrix at offset 41, ld 82.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/config.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cuda {

// ---- batches -----------------------------------------------------------------------------------

// One SGD step's slice of the epoch order: rows first .. first+rows-1.
struct Batch {
    std::int64_t first = 0;
    int rows = 0;
    bool operator==(const Batch&) const = default;
};

// Consecutive slices of batch_size, the last one short when n % batch_size != 0 (SPEC §5).
std::vector<Batch> epoch_batches(std::int64_t n, int batch_size);

// ---- buffers -----------------------------------------------------------------------------------

enum class Buf : int {
    // parameters, gradients, momentum: one buffer each in model::Layout order; initial = the seed's
    params, grads, velocity, initial,
    // inputs resident on the device: raw pixels, lifted rows, labels, every epoch's permutation
    train_raw, query_raw, train_rows, query_rows, train_labels, permutations,
    // the epoch order the step kernels read (the epoch's permutation is copied here first)
    order,
    // one SGD step: the single retained core state and the per-step scratch
    state, dstate, act_left, act_right, branch, dtmp, scores, dscores, batch_labels,
    // the backward's per-branch operands of the weight gradients, one full-batch slot per branch:
    // relu of the branch's input and the gradient of its output, rows x 41 each
    act_stack, grad_stack,
    // prediction: Q-row core state and scratch, scores, predictions
    query_state, query_act_left, query_act_right, query_branch, query_scores, predictions,
    count
};
inline constexpr int kBufCount = static_cast<int>(Buf::count);

enum class Elem { f32, i32, i64 };
const char* buf_name(Buf b);
Elem buf_elem(Buf b);
std::size_t elem_bytes(Elem e);

// An element offset into one buffer.
struct Ref {
    Buf buf = Buf::count;
    std::size_t offset = 0;
};

// ---- matrix products ---------------------------------------------------------------------------

// Column-major BLAS: D (m x n, ld ldd) = alpha * op(A) op(B). op(A) is m x k: A is stored m x k
// (lda >= m) or, transposed, k x m (lda >= k); same for B. There is never a beta and never a bias
// epilogue: every product writes its output fresh, and additions happen in the small elementwise
// kernels that follow, in the reference's rounding order. With batch > 1 it is a strided batch:
// product i reads A + i*stride_a, B + i*stride_b and writes D + i*stride_d (elements).
struct GemmSpec {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    int lda = 0, ldb = 0, ldd = 0;
    float alpha = 1.0f;
    int batch = 1;
    std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;

    int a_rows() const { return trans_a ? k : m; }
    int a_cols() const { return trans_a ? m : k; }
    int b_rows() const { return trans_b ? n : k; }
    int b_cols() const { return trans_b ? k : n; }
    // Elements spanned from the first element of each operand (for bounds checks).
    std::size_t a_extent() const;
    std::size_t b_extent() const;
    std::size_t d_extent() const;
    std::string describe() const;  // "T N m=41 n=128 k=41 lda=41 ldb=41 ldd=41"
    void validate() const;         // leading dimensions >= rows, batch outputs apart; throws Error
};

// The six products of the model. Row-major meaning first; then what cuBLASLt is given, where
// "W'" is a row-major buffer read column-major (so W' = Wᵀ) and every output is the column-major
// view of the row-major result (D' = Dᵀ, ld = the row length).
// branch(rows x 41) = relu(x)(rows x 41) W(41x41)ᵀ        branch' = op_T(W' 41x41 ld 41) · act'(41 x rows, ld 41)
GemmSpec couple_gemm(int rows);
// dW_i(41x41) = alpha g_i(rows x 41)ᵀ relu(x_i)(rows x 41) for every branch i at once (a strided
// batch over the backward's slots; dW_i lands at grads + i*1681, weights.i's place in the Layout)
//                                                         dW_i' = alpha act_i'(41 x rows) · op_T(g_i' 41 x rows)
GemmSpec branch_grads_gemm(int rows, float alpha, int branches, std::int64_t slot_stride);
// dtmp(rows x 41) = alpha g(rows x 41, ld 82) W(41x41)     dtmp' = alpha W'(41x41 ld 41) · g'(41 x rows, ld 82)
GemmSpec input_grad_gemm(int rows, float alpha);
// scores(rows x 10) = state(rows x 82) H(10x82)ᵀ (the bias is added by the loss/argmax kernel)
//                                                         scores' = op_T(H' 82x10 ld 82) · state'(82 x rows, ld 82)
GemmSpec head_forward_gemm(int rows);
// dH(10x82) = dscores(rows x 10)ᵀ state(rows x 82)         dH' = state'(82 x rows, ld 82) · op_T(dscores' 10 x rows, ld 10)
GemmSpec head_weight_grad_gemm(int rows);
// dstate(rows x 82) = dscores(rows x 10) H(10x82)          dstate' = H'(82x10 ld 82) · dscores'(10 x rows, ld 10)
GemmSpec head_input_grad_gemm(int rows);

// ---- operations --------------------------------------------------------------------------------

struct GemmOp {  // a cuBLASLt matmul with a pinned algorithm
    GemmSpec spec;
    Ref a, b, d;
};
struct CopyOp {  // device-to-device copy of `count` elements
    Ref dst, src;
    std::size_t count = 0;
};
struct ZeroOp {
    Ref dst;
    std::size_t count = 0;
};
// SPEC §2 on the raw train and query pixels in one launch: rows of 82 = 81 lifted pixels and a 0.
struct LiftOp {
    Ref train_raw, train_rows;
    std::int64_t train_count = 0;
    Ref query_raw, query_rows;
    std::int64_t query_count = 0;
};
// state[r] = src_rows[order[first + r]] (or src_rows[r] when identity), act_right = relu(right half),
// labels[r] = src_labels[same] when with_labels. Gather and the first relu are one launch.
struct GatherOp {
    int rows = 0;
    bool identity = false;
    Ref order;
    std::int64_t first = 0;
    Ref src_rows, src_labels;
    Ref state, act_right, labels;
    bool with_labels = false;
};
// The coupling update of one half, in the reference's rounding: h = h + sign*(alpha*branch), then
// act = relu(h) for the branch that reads this half next. Backward extras, both on the gradient
// dhalf of this half (rows x 82 like the state): when `masked`, the mask-multiply of the other
// branch, dhalf += dtmp ⊙ [h > 0], on h *before* the update; when `copy_grad`, the finished dhalf
// is also written compactly to grad_copy (rows x 41) for the batched weight gradients.
struct CoupleOp {
    int rows = 0;
    Ref half, branch, act;
    float sign = 1.0f, alpha = 0.5f;
    bool masked = false;
    Ref dhalf, dtmp;
    bool copy_grad = false;
    Ref grad_copy;
};
// dhalf += dtmp ⊙ [half > 0], and the result to grad_copy when copy_grad.
struct MaskOp {
    int rows = 0;
    Ref dhalf, dtmp, half;
    bool copy_grad = false;
    Ref grad_copy;
};
// scores += head.bias, then the softmax/cross-entropy gradient of every row, the head-bias gradient
// as a fixed-order column sum of it, and act_left = relu(left half of the retained state) for the
// first reconstructing block.
struct LossOp {
    int rows = 0;
    Ref scores, bias, labels, dscores, dbias, state, act_left;
};
struct SgdOp {
    std::size_t count = 0;
    Ref params, velocity, grads;
    float lr = 0, momentum = 0, weight_decay = 0;
};
// scores += head.bias, then each row's argmax.
struct ArgmaxOp {
    std::int64_t rows = 0;
    Ref scores, bias, predictions;
};

// The fused path (engine/cuda/fused.hpp): an SGD step on batch rows first .. first+rows-1 of the
// order as two kernels. Part `rows`: every per-row operation of the step, leaving the final state,
// the score gradients and the backward's per-branch operands in the stacks (slot = full batch
// rows); part `grads`: every parameter's gradient from those, and SGD.
struct FusedStepOp {
    enum class Part { rows, grads };
    Part part = Part::rows;
    int rows = 0;
    std::int64_t first = 0;
    int slot = 0;
    int depth = 0;
    float alpha = 0, lr = 0, momentum = 0, weight_decay = 0;
    Ref order, train_rows, train_labels, params, velocity, grads;
    Ref final_state, dscores, act_stack, grad_stack;
};
// The fused path's prediction: every query row, in tiles of fused::kPredictTile rows, one block each.
struct FusedPredictOp {
    std::int64_t rows = 0;
    int depth = 0;
    float alpha = 0;
    Ref params, query_rows, scores, predictions;
};

using Op = std::variant<GemmOp, CopyOp, ZeroOp, LiftOp, GatherOp, CoupleOp, MaskOp, LossOp, SgdOp, ArgmaxOp,
                        FusedStepOp, FusedPredictOp>;
using Program = std::vector<Op>;

const char* op_name(const Op& op);
// Kernel launches and matmuls in a program (copies and zero-fills counted apart).
struct OpCounts {
    int gemms = 0, kernels = 0, copies = 0;
    int launches() const { return gemms + kernels + copies; }
};
OpCounts count_ops(const Program& p);

// Every buffer range an operation reads or writes, for bounds and type checks.
struct Access {
    Ref ref;
    std::size_t extent = 0;  // elements from ref.offset
    Elem elem = Elem::f32;
};
std::vector<Access> accesses(const Op& op, std::size_t gather_source_rows);

// ---- the task plan -----------------------------------------------------------------------------

// How a step and prediction are launched: cuBLASLt products between small kernels (`cuda`), or two
// fused kernels per step (`cuda-fused`). Reset, normalisation and the epoch's permutation copy are
// the same for both.
enum class Path { cublaslt, fused };
const char* path_name(Path p);

// The most bytes of int32 epoch permutations a GPU task keeps resident: 2 GiB, 107,374 epochs of
// MNIST-medium's 5,000 examples. TaskPlan refuses more, in one line, before any work.
constexpr std::uint64_t kMaxResidentPermutationBytes = std::uint64_t{1} << 31;

class TaskPlan {
public:
    TaskPlan(const TaskConfig& config, std::int64_t train_count, std::int64_t test_count, Path path = Path::cublaslt);

    Path path() const { return path_; }

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
    // The one core state kept from forward to backward: full_batch x 82 floats.
    std::size_t retained_core_bytes() const { return bytes(Buf::state); }

    Program reset() const;                // parameters from the seed's, momentum and gradients 0
    Program normalize() const;            // raw pixels -> lifted rows, train and query
    Program epoch_start(int e) const;     // permutation e -> order
    Program step(int b) const;            // one SGD step on batch b of the current order
    Program epoch(int e) const;           // epoch_start(e) then every step
    Program predict() const;              // Q-row forward, scores, argmax

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

    void core_forward(Program& p, int rows, Buf state, Buf act_left, Buf act_right, Buf branch) const;
};

}  // namespace revgraph::cuda
