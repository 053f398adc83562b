// cuda-fused's step in every summation order the rule admits (engine/model/sum_order.hpp: 1, 2, 4, 8
// lanes), on the CPU emulator against cpu::Trainer<float> at the same lane count, bit for bit and
// step by step: the 82-wide kernels (engine/cuda/fused.hpp) and the any-width ones
// (engine/cuda/fused_any/, also the exported race entry's). The engine runs fused::kSumLanes; the
// other orders are what the kernel lab checks and times on a GPU to choose among
// (bench/labs/kernel_lab.cpp), so they must already be right here.
// The reference's own lane counts are held against hand-written sums and float64 by
// test/model/test_sum_order.cpp; what this adds is that the kernels' phases follow the same rule at
// every site (couples, scores across the two halves, the softmax's row sum, dstate, the branch
// rows, and the grads kernel's row sums across its staging chunks and in their short tails).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/cuda/fused.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/model/layout.hpp"
#include "engine/task.hpp"
#include "engine/validate/gpu_replay.hpp"
#include "test/cuda/step_by_step.hpp"

using namespace revgraph;
using namespace revgraph::cuda;
using revgraph::cuda::testing::run_step_by_step;

namespace {

// A whole task at `lanes`: the emulator's fused programs against the float32 trainer at the same
// lanes. Returns the trainer's parameters at the end, so a caller can see the orders differ.
std::vector<float> check_lanes(const TaskConfig& c, const PreparedInputs& prepared, int n, int q, int lanes,
                               std::size_t shared_bytes, bool reverse) {
    const TaskPlan plan(c, n, q, Path::fused);
    Emulator emu(plan, shared_bytes);
    emu.set_sum_lanes(lanes);
    emu.set_reverse_order(reverse);
    emu.upload(prepared);
    cpu::Trainer<float> ref(prepared, lanes);
    CHECK(run_step_by_step(emu, plan, ref) == c.epochs * static_cast<int>(plan.batches().size()));
    return ref.parameters();
}

// A block's shared memory for its scratch and none of the parameters: the smallest model checked
// with it, rev88's, has 7,554 of them (30 KB); the widest scratch, width 128's predict block, is 8 KB.
constexpr std::size_t kScratchOnly = 20 * 1024;

// The task of `inputs` in every order, parameters staged in shared memory and (items last to first)
// read from global memory, each against the trainer in that order; and each order's bits other than
// index order's (the order is not ignored).
void check_every_order(const TaskConfig& c, const TaskInputs& inputs, int n, int q) {
    const PreparedTask task(inputs, c, make_backend("cpu"));
    CHECK(model::Layout(c.depth, c.width).total() * sizeof(float) > kScratchOnly);
    std::vector<float> index_order;
    for (int lanes : model::kSumLaneCounts)
        for (bool reverse : {false, true}) {
            CAPTURE(lanes);
            CAPTURE(reverse);
            const std::vector<float> params =
                check_lanes(c, task.prepared(), n, q, lanes, reverse ? kScratchOnly : kEmulatedSharedBytes, reverse);
            if (lanes == 1)
                index_order = params;
            else
                CHECK(params != index_order);
        }
}

}  // namespace

TEST_CASE("fused emulator: every sum order gives the float32 trainer's bits at the same lane count") {
    struct Shape {
        int batch, n, q;
        const char* why;
    };
    // A row sum of n rows runs blocks of 32, then groups of max(4, L), then a tail of fewer than
    // that (engine/cuda/ordered_sum.hpp's ordered_sum4_n). 300 rows at 128: batches 128, 128, 44
    // (44 = 32 + 12: a tail of 0 or, at 8 lanes, 4); batch 200: staging chunks of 128 and 72 (the
    // lanes carried across a chunk); batch 37: every step a short rows block, tails of 1 (5 at 8
    // lanes), a last batch of 9; batch 135 on 277 rows: a second chunk of 7 (a tail of 3, 7 at 8
    // lanes) and a last batch of 7, shorter than any group.
    for (const Shape& s : {Shape{128, 300, 150, "rev88"}, Shape{200, 450, 70, "two chunks"},
                           Shape{37, 120, 33, "odd batch"}, Shape{135, 277, 20, "chunk tails"}}) {
        TaskConfig c;  // rev88's model: depth 2, width 82
        c.batch_size = s.batch;
        c.learning_rate = s.batch == 37 ? 0.05 : c.learning_rate;
        c.weight_decay = s.batch == 200 ? 1e-3 : 0.0;  // both of sgd_update's paths
        CAPTURE(s.why);
        check_every_order(c, validate::synthetic_inputs(s.n, s.q, 41), s.n, s.q);
    }
}

TEST_CASE("fused emulator: the any-width kernels in every sum order") {
    // Widths 90 and 128 (halves 45 and 64: sums of 45 terms end in a short round of the lanes at
    // every count but 1, of 64 at none), a batch of 37 (row sums of 37 and 9 rows) and of 135 (of
    // 135 and 7, fewer than 8).
    struct Shape {
        int width, batch, n, q;
    };
    for (const Shape& s : {Shape{90, 37, 120, 33}, Shape{128, 135, 277, 20}}) {
        TaskConfig c;
        c.width = s.width;
        c.batch_size = s.batch;
        c.learning_rate = 0.05;
        CAPTURE(s.width);
        check_every_order(c, validate::synthetic_inputs(s.n, s.q, 47), s.n, s.q);
    }
}

TEST_CASE("fused emulator: deeper and shallower cores in 4 lanes") {
    for (int depth : {1, 3}) {
        CAPTURE(depth);
        TaskConfig c;
        c.depth = depth;
        const TaskInputs inputs = validate::synthetic_inputs(260, 40, 43);
        const PreparedTask task(inputs, c, make_backend("cpu"));
        check_lanes(c, task.prepared(), 260, 40, 4, kEmulatedSharedBytes, false);
    }
}

TEST_CASE("fused emulator: a lane count outside the rule is refused; cuda's plan runs the engine's only") {
    TaskConfig c;
    const TaskPlan plan(c, 300, 150, Path::fused);
    Emulator emu(plan);
    for (int bad : {0, 3, 16})
        CHECK_THROWS_WITH_AS(emu.set_sum_lanes(bad), "emulator: sum lanes must be 1, 2, 4 or 8", Error);
    CHECK_THROWS_AS(model::with_sum_lanes(3, [](auto) {}), std::invalid_argument);

    // cuda's operations and cuBLASLt's products sum in the engine's order only: the plan takes it and
    // refuses every other.
    for (int width : {82, 90}) {
        TaskConfig w;
        w.width = width;
        const TaskPlan cublaslt(w, 40, 10, Path::cublaslt);
        Emulator other(cublaslt);
        for (int lanes : model::kSumLaneCounts) {
            CAPTURE(width);
            CAPTURE(lanes);
            if (lanes == fused::kSumLanes)
                CHECK_NOTHROW(other.set_sum_lanes(lanes));
            else
                CHECK_THROWS_WITH_AS(other.set_sum_lanes(lanes),
                                     "emulator: other sum orders than the engine's run on the fused kernels only",
                                     Error);
        }
    }
}
