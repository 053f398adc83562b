// The GPU backends' launch plans at widths other than rev88's 82, run by the CPU emulator against the
// float32 reference trainer (cpu::Trainer<float>) bit for bit, step by step: cuda-fused at every
// width (engine/cuda/fused_any/'s phases, as the device runs them) and cuda (its operations and
// products at the plan's half width, each product summed in the reference's order), with their
// buffers, refusals and the widths each path runs. Small sets and one or two epochs keep it quick; test_fused_any.cpp
// holds the phases alone to the same bits over more launch shapes.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/cuda/fused_any_shape.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/error.hpp"
#include "engine/task.hpp"
#include "test/cuda/step_by_step.hpp"

using namespace revgraph;
using namespace revgraph::cuda;
using revgraph::cuda::testing::run_step_by_step;

namespace {

struct Case {
    int width, depth, batch, n, q, epochs;
};

TaskConfig config_of(const Case& k) {
    TaskConfig c;
    c.width = k.width;
    c.depth = k.depth;
    c.batch_size = k.batch;
    c.epochs = k.epochs;
    c.weight_decay = k.depth == 2 ? 1e-3 : 0.0;  // both of sgd_update's paths
    return c;
}

// The task's own inputs (prepare_inputs: torch's initialisation, numpy's permutations) on a
// synthetic draw; the emulator and the trainer run it side by side, then the whole-epoch programs
// (what the graphs capture) must give the same bits again.
void check_path(Path path, const Case& k, std::size_t shared = kEmulatedSharedBytes, bool reverse = false) {
    CAPTURE(path_name(path));
    CAPTURE(k.width);
    CAPTURE(k.depth);
    CAPTURE(k.batch);
    CAPTURE(shared);
    CAPTURE(reverse);
    const TaskConfig c = config_of(k);
    const data::TaskData task = data::synthetic_task(k.n, k.q, 4700 + static_cast<unsigned>(k.width + k.depth));
    const TaskInputs inputs(task.train_images, task.train_labels, task.test_images);
    const PreparedInputs prepared = prepare_inputs(inputs, c);
    const TaskPlan plan(c, k.n, k.q, path);
    Emulator emu(plan, shared);
    emu.set_reverse_order(reverse);
    emu.upload(prepared);
    cpu::Trainer<float> ref(prepared);
    CHECK(run_step_by_step(emu, plan, ref) == c.epochs * static_cast<int>(plan.batches().size()));

    Emulator again(plan, shared);
    again.upload(prepared);
    again.execute(plan.reset());
    again.execute(plan.normalize());
    for (int e = 0; e < c.epochs; ++e) again.execute(plan.epoch(e));
    again.execute(plan.predict());
    CHECK(again.f32(Buf::params) == emu.f32(Buf::params));
    CHECK(again.f32(Buf::velocity) == emu.f32(Buf::velocity));
    CHECK(again.f32(Buf::query_scores) == emu.f32(Buf::query_scores));
    CHECK(again.i64(Buf::predictions) == emu.i64(Buf::predictions));
}

}  // namespace

TEST_CASE("fused plan at any width: the float32 trainer's bits, depths 1/2/4, batches 8/128/512") {
    // Every batch size leaves a short last batch (n = batch + 5). The widest shapes stop at a budget
    // (width x depth x batch of 256 x 4 x 512) so that the test stays quick: width 1024 at depth 4
    // runs batches 8 and 128, at depth 1 all three.
    for (const int width : {84, 90, 128, 192, 256, 512, 1024})
        for (const int depth : {1, 2, 4})
            for (const int batch : {8, 128, 512})
                if (width * depth * batch <= 256 * 4 * 512)
                    check_path(Path::fused, {width, depth, batch, batch + 5, 9, batch == 8 ? 2 : 1});
}

TEST_CASE("cuda plan at any width: the float32 trainer's bits, depths 1/2/4, batches 8/128/512") {
    // The emulator sums each product in the reference's order, so the plan's offsets, leading
    // dimensions, strides and transposes at width 2h give the trainer's very bits (on a GPU,
    // cuBLASLt sums in its own order: the GPU suite holds it to the tolerance instead). Its budget is
    // a quarter of the fused path's (128 x 2 x 512): the interpreted products are the slower part.
    for (const int width : {84, 90, 128, 192, 256, 512, 1024})
        for (const int depth : {1, 2, 4})
            for (const int batch : {8, 128, 512})
                if (width * depth * batch <= 128 * 2 * 512)
                    check_path(Path::cublaslt, {width, depth, batch, batch + 5, 9, batch == 8 ? 2 : 1});
}

TEST_CASE("cuda plan at any width: the products and buffers follow the half width") {
    TaskConfig c;
    c.width = 128;
    const TaskPlan plan(c, 1000, 300, Path::cublaslt);
    CHECK(plan.elements(Buf::state) == std::size_t{128} * 128);
    CHECK(plan.elements(Buf::branch) == std::size_t{128} * 64);
    CHECK(plan.elements(Buf::train_rows) == std::size_t{1000} * 128);
    CHECK(plan.elements(Buf::act_stack) == std::size_t{4} * 128 * 64);
    CHECK(count_ops(plan.step(0)).launches() == count_ops(TaskPlan(TaskConfig{}, 1000, 300).step(0)).launches());
    for (const Op& op : plan.step(0))
        if (const auto* g = std::get_if<GemmOp>(&op)) {
            CAPTURE(g->spec.describe());
            CHECK((g->spec.m == 64 || g->spec.m == 128 || g->spec.m == model::kClasses));
        }
}

TEST_CASE("both plans at other widths: batch 2048, and a batch larger than the training set") {
    // The any-width kernels' largest batch the issue asks for (2048 rows: 1024 rows blocks, sums of
    // 2048 terms in the grads kernel), one short last batch; and a batch past n (one step of n rows).
    for (const Path path : {Path::fused, Path::cublaslt}) {
        check_path(path, {84, 1, 2048, 2053, 7, 1});
        check_path(path, {128, 2, 2048, 100, 7, 2});
    }
}

TEST_CASE("fused plan at any width: parameters in global memory, and every phase's items last to first") {
    // A limit that holds the widest block's scratch and none of the parameters: no block stages them
    // (engine/cuda/fused_any_shape.hpp); reversed items and blocks: a phase whose items depended on
    // each other (a race on a GPU) changes bits.
    const std::size_t scratch_only = fused_any::predict_scratch_floats(128, fused_any::kPredictRows) * sizeof(float);
    for (const int width : {84, 128, 256}) {
        check_path(Path::fused, {width, 2, 8, 21, 9, 2}, scratch_only);
        check_path(Path::fused, {width, 2, 8, 21, 9, 2}, kEmulatedSharedBytes, true);
    }
    check_path(Path::fused, {1024, 4, 8, 10, 3, 1}, kEmulatedSharedBytes, true);  // never staged: 8 MB of weights
}

TEST_CASE("fused plan at any width: a predict block takes the rows its device's limit holds") {
    // 16 query rows at width 1024 need 65,600 bytes; a Turing block may have 65,536 (sm_75's opt-in):
    // 15 rows a block there, the same bits (rows a block are a launch shape).
    CHECK(fused_any::predict_rows(512, 65536) == 15);
    CHECK(fused_any::predict_rows(512, 65600) == fused_any::kPredictRows);
    CHECK(fused_any::predict_rows(41, 232448) == fused_any::kPredictRows);
    CHECK(fused_any::predict_rows(512, 100) == 1);            // then refused, below
    check_path(Path::fused, {1024, 1, 8, 10, 31, 1}, 65536);  // 31 query rows: blocks of 15, 15 and 1
    // A block whose scratch alone passes the limit: refused in one line, as the device's launcher does.
    TaskConfig c;
    c.width = 1024;
    c.depth = 1;
    const data::TaskData task = data::synthetic_task(10, 3, 4701);
    const TaskPlan plan(c, 10, 3, Path::fused);
    Emulator emu(plan, 1000);
    emu.upload(prepare_inputs(TaskInputs(task.train_images, task.train_labels, task.test_images), c));
    CHECK_THROWS_WITH_AS(
        emu.execute(plan.step(0)),
        "cuda-fused: a block at width 1024 needs 16648 bytes of shared memory, over this device's 1000", Error);
}

TEST_CASE("fused plan at any width: two kernels a step, one to predict, no normalise and no lifted rows") {
    for (const int width : {84, 128, 1024}) {
        CAPTURE(width);
        TaskConfig c;
        c.width = width;
        c.depth = 2;
        const TaskPlan plan(c, 1000, 300, Path::fused);
        CHECK(plan.any_width());
        for (int b : {0, 7}) {
            const Program s = plan.step(b);
            CHECK(count_ops(s).kernels == 2);
            CHECK(count_ops(s).launches() == 2);
            CHECK(std::holds_alternative<FusedAnyStepOp>(s.front()));
        }
        CHECK(plan.normalize().empty());
        CHECK(count_ops(plan.predict()).launches() == 1);
        CHECK(std::holds_alternative<FusedAnyPredictOp>(plan.predict().front()));
        CHECK(plan.elements(Buf::train_rows) == 0);
        CHECK(plan.elements(Buf::query_rows) == 0);
        CHECK(plan.elements(Buf::act_stack) == std::size_t{4} * 128 * (width / 2));
        CHECK(plan.elements(Buf::params) == model::Layout(2, width).total());
        CHECK(plan.retained_core_bytes() == std::size_t{128} * width * 4);
    }
    TaskConfig rev88;
    CHECK_FALSE(TaskPlan(rev88, 1000, 300, Path::fused).any_width());  // 82 keeps its tuned kernels
    CHECK(std::holds_alternative<FusedStepOp>(TaskPlan(rev88, 1000, 300, Path::fused).step(0).front()));
}

TEST_CASE("plan: the widths each path runs, and the shapes the any-width kernels refuse") {
    for (const int width : {82, 84, 128, 1024}) {
        CHECK(path_runs_width(Path::fused, width));
        CHECK(path_runs_width(Path::cublaslt, width));
        CHECK(make_emulated_backend("cuda-fused")->runs_width(width));
        CHECK(make_emulated_backend("cuda")->runs_width(width));
    }
    TaskConfig c;
    // The largest shape at batch 2048 just fits the kernels' 32-bit indices; one more row does not.
    c.width = 1024;
    c.depth = 1024;
    c.epochs = 1;
    c.batch_size = 2048;
    CHECK_NOTHROW(TaskPlan(c, 5000, 10, Path::fused));
    c.batch_size = 2049;
    CHECK_THROWS_WITH_AS(TaskPlan(c, 5000, 10, Path::fused),
                         "cuda-fused: depth 1024, width 1024 and batch 2049 need 2148532224 stacked floats, past the "
                         "kernels' 32-bit indices (2147483647); use a smaller batch or depth, or the cpu backend",
                         Error);
}

TEST_CASE("emulated cuda-fused and cuda at width 128 write cpu-reference's outputs, through PreparedTask") {
    const data::TaskData task = data::synthetic_task(300, 50, 77);
    const TaskInputs inputs(task.train_images, task.train_labels, task.test_images);
    TaskConfig c;
    c.width = 128;
    c.epochs = 1;
    PreparedTask reference(TaskInputs(inputs), c, make_backend("cpu-reference"));
    reference.run();
    for (const char* backend : {"cuda-fused", "cuda"}) {
        CAPTURE(backend);
        PreparedTask emulated(TaskInputs(inputs), c, make_emulated_backend(backend));
        emulated.run();
        const TaskOutputs a = emulated.outputs(), b = reference.outputs();
        CHECK(a.state.predictions == b.state.predictions);
        CHECK(a.state.scores == b.state.scores);
        CHECK(a.state.parameters == b.state.parameters);
        for (const char* hash : {"predictions_sha256", "state_vector_sha256", "scores_sha256"}) {
            CAPTURE(hash);
            CHECK(a.metadata.at(hash) == b.metadata.at(hash));
        }
    }
}

TEST_CASE("fused plan: no kernel writes the order, pixels or labels a step reads before its wait") {
    // A fused rows kernel launched early (Programmatic Dependent Launch) reads the order, the rows
    // (raw pixels at any width, the lifted rows at 82) and the labels before it waits for the kernel
    // in front (fused_any/step.hpp always, fused.hpp where a step follows a step): right only while
    // no kernel of an epoch writes them — the order's per-epoch copy is a copy, which no early
    // launch overlaps, and the rows are lifted once, before the first epoch. The emulator cannot see
    // a launch start early, so this holds the rule itself: every kernel of every epoch program, run
    // alone, leaves those buffers as they were (and no kernel at all writes the raw inputs).
    for (const int width : {82, 128}) {
        CAPTURE(width);
        const Case k{width, 2, 8, 21, 5, 2};
        const TaskConfig c = config_of(k);
        const data::TaskData task = data::synthetic_task(k.n, k.q, 4711);
        const TaskInputs inputs(task.train_images, task.train_labels, task.test_images);
        const PreparedInputs prepared = prepare_inputs(inputs, c);
        const TaskPlan plan(c, k.n, k.q, Path::fused);
        Emulator emu(plan);
        emu.upload(prepared);
        std::vector<std::pair<Program, bool>> programs{{plan.reset(), false}, {plan.normalize(), false}};
        for (int e = 0; e < c.epochs; ++e) programs.emplace_back(plan.epoch(e), true);
        programs.emplace_back(plan.predict(), false);
        int epoch_kernels = 0;
        for (const auto& [program, epoch] : programs)
            for (const Op& op : program) {
                CAPTURE(op_name(op));
                const auto order = emu.i32(Buf::order);
                const auto raw = emu.f32(Buf::train_raw);
                const auto rows = emu.f32(Buf::train_rows);
                const auto labels = emu.i32(Buf::train_labels);
                emu.execute(Program{op});
                if (std::holds_alternative<CopyOp>(op)) continue;  // a copy: no kernel launched early follows it
                CHECK(emu.f32(Buf::train_raw) == raw);
                CHECK(emu.i32(Buf::train_labels) == labels);
                if (!epoch) continue;
                ++epoch_kernels;
                CHECK(emu.i32(Buf::order) == order);
                CHECK(emu.f32(Buf::train_rows) == rows);
            }
        CHECK(epoch_kernels == 2 * c.epochs * static_cast<int>(plan.batches().size()));  // two kernels a step
    }
}
