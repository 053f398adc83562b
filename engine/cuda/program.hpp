#pragma once
// The CUDA backend's programs as plain data, with no CUDA headers: the operations of reset /
// normalise / one SGD step / predict in launch order (the task plan that makes them, with the
// buffers' sizes and the epoch's batches, is engine/cuda/task_plan.hpp). The GPU executes these programs
// (engine/cuda/executor.cpp) and a CPU interpreter (engine/cuda/emulator.cpp) runs the very same programs, so the order
// of operations, offsets, leading dimensions and transposes are tested on machines without a GPU, bit for bit against
// the float reference trainer. The interpreter sums each product in the reference's order; on a GPU cuBLASLt sums in an
// order of its own, so there the `cuda` path is held to the GPU tolerance against the float64 reference, not to the
// float32 reference's bits.
//
// Conventions, written for rev88's width 82 (half h = 41); at width W every 82 reads W and every 41
// reads h = W/2 (the plan's layout carries them into each operation and product). Every 2-D array is
// row-major in memory: a core state is rows x 82 (left half = columns 0..40, right half = 41..81), the
// relu/branch/gradient scratch arrays are rows x 41, scores rows x 10, a branch weight 41x41 [out, in],
// head.weight 10x82 [out, in]. Matrix products are described the
// way cuBLASLt (column-major BLAS) sees them: a row-major R x C array with leading dimension L *is*
// a column-major C x R matrix with leading dimension L, its transpose. So the halves of the 82-wide
// state are used in place: the right half is the column-major 41 x rows matrix at offset 41, ld 82.
// One exception: on the fused path at width 82 the final state, the score gradients and the stacks
// pass only between the step's two kernels, and are column-major with the full batch's rows a
// column (fused::column_major), so the grads kernel stages them column by column.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/cuda/buffers.hpp"
#include "engine/cuda/gemm_spec.hpp"
#include "engine/cuda/ops/argmax.hpp"
#include "engine/cuda/ops/copy.hpp"
#include "engine/cuda/ops/couple.hpp"
#include "engine/cuda/ops/fused_any_predict.hpp"
#include "engine/cuda/ops/fused_any_step.hpp"
#include "engine/cuda/ops/fused_epochs.hpp"
#include "engine/cuda/ops/fused_predict.hpp"
#include "engine/cuda/ops/fused_step.hpp"
#include "engine/cuda/ops/gather.hpp"
#include "engine/cuda/ops/gemm.hpp"
#include "engine/cuda/ops/lift.hpp"
#include "engine/cuda/ops/loss.hpp"
#include "engine/cuda/ops/mask.hpp"
#include "engine/cuda/ops/sgd.hpp"
#include "engine/cuda/ops/sgd_gather.hpp"
#include "engine/cuda/ops/zero.hpp"

namespace revgraph::cuda {

// ---- operations --------------------------------------------------------------------------------

// Every operation of a program, each in its own file under engine/cuda/ops/ (its struct, accesses,
// per-element body and launcher; docs/adding-an-op.md). Executor and emulator dispatch over this
// variant with std::visit, so an operation added here and not handled there fails to compile.
using Op = std::variant<GemmOp, CopyOp, ZeroOp, LiftOp, GatherOp, CoupleOp, MaskOp, LossOp, SgdOp, SgdGatherOp,
                        ArgmaxOp, FusedStepOp, FusedPredictOp, FusedAnyStepOp, FusedAnyPredictOp, FusedEpochsOp>;
using Program = std::vector<Op>;

const char* op_name(const Op& op);

// Where each operation of a program runs on the GPU: on the program's stream (chain), or forked to
// the second stream (beside: GemmOp::beside), and where that stream rejoins (join, in front of
// operation `op`, or at the program's end where `op` is its size). The executor follows it; a pure
// function, so the schedule is tested without a GPU. Expects a program TaskPlan::check accepts.
struct LaneStep {
    enum class Kind { chain, beside, join };
    Kind kind;
    std::size_t op;
};
std::vector<LaneStep> lane_schedule(const Program& p);
// Kernel launches and matmuls in a program (copies and zero-fills counted apart).
struct OpCounts {
    int gemms = 0, kernels = 0, copies = 0;
    int launches() const { return gemms + kernels + copies; }
};
OpCounts count_ops(const Program& p);

// Every buffer range an operation reads or writes, for bounds and type checks. gather_source_rows:
// the rows of the array a gather (or the fused step) reads through an order.
std::vector<Access> accesses(const Op& op, std::size_t gather_source_rows);

}  // namespace revgraph::cuda
