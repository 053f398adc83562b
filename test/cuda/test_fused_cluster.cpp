// cuda-fused's whole epochs as one launch of a thread-block cluster (engine/cuda/fused_cluster.hpp)
// on the CPU emulator: the cluster's ranks take the rows and grads units of every step in turn, and
// after each epoch the parameters, momentum and gradients must be cpu::Trainer<float>'s bits, at
// cluster sizes that divide a step's units and that do not, in order and last to first, staged and
// not, in the engine's sum order and another, at 1, 2 and 4 thread groups a block and 2 and 4 rows
// a rows unit; the predictions after the last epoch too. And that a group copies a step's
// parameters once, at its first rows unit, its later units reading that copy. What a GPU adds (the
// cluster barrier's ordering of global memory, the named barriers) the GPU suite (test_gpu.cpp) and
// the kernel lab (bench/labs/kernel_lab.cpp) check on a device: the same bits from the kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/backends.hpp"
#include "engine/cpu/trainer.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/cuda/fused_cluster.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/model/layout.hpp"
#include "engine/runtime_options.hpp"
#include "engine/task.hpp"
#include "engine/validate/gpu_replay.hpp"

using namespace revgraph;
using namespace revgraph::cuda;

namespace {

struct Case {
    int cluster_blocks, lanes;
    bool reverse;
    std::size_t shared_bytes;
    int groups = fused::kClusterGroups;
    int rows_per_unit = fused::kRowsPerBlock;
};

// The task epoch by epoch (the plan's epoch programs: the order's copy, then one cluster launch), or
// all epochs in one launch from the resident permutations (the kernel lab's), against the trainer
// at the same lanes.
void check_cluster(const TaskConfig& c, const TaskInputs& inputs, const Case& k, bool one_launch) {
    const int n = static_cast<int>(inputs.train_count()), q = static_cast<int>(inputs.test_count());
    const PreparedTask task(inputs, c, make_backend("cpu"));
    const TaskPlan plan(c, n, q, Path::fused, k.cluster_blocks);
    REQUIRE(plan.epoch_body().size() == 1);
    REQUIRE(std::holds_alternative<FusedEpochsOp>(plan.epoch_body().front()));
    Emulator emu(plan, k.shared_bytes);
    emu.set_sum_lanes(k.lanes);
    emu.set_reverse_order(k.reverse);
    emu.set_cluster_groups(k.groups);
    emu.set_launch_shape(k.rows_per_unit, fused::kPredictTile);
    emu.upload(task.prepared());
    cpu::Trainer<float> ref(task.prepared(), k.lanes);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    ref.reset();
    ref.normalize();
    if (one_launch) {
        emu.fused_epochs(0, c.epochs, k.cluster_blocks);
        for (int e = 0; e < c.epochs; ++e) ref.epoch(e);
    }
    for (int e = 0; !one_launch && e < c.epochs; ++e) {
        CAPTURE(e);
        emu.execute(plan.epoch(e));
        ref.epoch(e);
        REQUIRE(emu.f32(Buf::params) == ref.parameters());
    }
    CHECK(emu.f32(Buf::grads) == ref.gradients());
    CHECK(emu.f32(Buf::params) == ref.parameters());
    CHECK(emu.f32(Buf::velocity) == ref.velocity());
    emu.execute(plan.predict());
    ref.predict();
    CHECK(emu.i64(Buf::predictions) == ref.predictions());
}

}  // namespace

TEST_CASE("fused emulator: whole epochs on a cluster give the float32 trainer's bits") {
    // rev88's model; 300 rows at batch 128: steps of 128, 128 and 44 rows (64, 64 and 22 rows units,
    // 66 grads units). Clusters of 16 (the default: 2 groups, so 2 and 3 units a group), 5 (a step's
    // units not a multiple), 1 (one block runs everything), one and four groups a block, and 2 in 4
    // lanes.
    TaskConfig c;
    c.epochs = 3;
    const TaskInputs inputs = validate::synthetic_inputs(300, 70, 53);
    for (const Case& k : {Case{fused::kClusterBlocks, fused::kSumLanes, false, kEmulatedSharedBytes},
                          Case{5, fused::kSumLanes, true, kEmulatedSharedBytes}, Case{1, fused::kSumLanes, false, 0, 1},
                          Case{3, fused::kSumLanes, true, kEmulatedSharedBytes, 4},
                          Case{16, fused::kSumLanes, false, 0, 1}, Case{2, 4, true, kEmulatedSharedBytes}})
        for (bool one_launch : {false, true}) {
            CAPTURE(k.cluster_blocks);
            CAPTURE(k.lanes);
            CAPTURE(k.reverse);
            CAPTURE(k.groups);
            CAPTURE(one_launch);
            check_cluster(c, inputs, k, one_launch);
        }
}

TEST_CASE("fused emulator: a cluster's epochs at other batches, depths and rows a unit") {
    // Batch 37 on 120 rows (a last step of 9) with rows units of 4 rows; depth 1 (34 grads units)
    // and 3 (98), batch 200 (two staging chunks a grads unit) with weight decay; depth 8 (the
    // parameters, 58 KB, past a group's half of the block: read from global memory).
    struct Shape {
        int depth, batch, n, rows_per_unit;
        double weight_decay;
    };
    for (const Shape& s : {Shape{2, 37, 120, 4, 0.0}, Shape{1, 128, 260, 2, 0.0}, Shape{3, 200, 450, 2, 1e-3},
                           Shape{8, 64, 130, 2, 0.0}}) {
        TaskConfig c;
        c.depth = s.depth;
        c.batch_size = s.batch;
        c.weight_decay = s.weight_decay;
        c.learning_rate = s.depth == 8 ? 0.02 : c.learning_rate;
        CAPTURE(s.depth);
        CAPTURE(s.batch);
        Case k{7, fused::kSumLanes, false, kEmulatedSharedBytes};
        k.rows_per_unit = s.rows_per_unit;
        check_cluster(c, validate::synthetic_inputs(s.n, 30, 59), k, true);
    }
    // The groups' share of the block decides the staging, as on the device.
    CHECK(fused::cluster_weights_fit(2, static_cast<int>(model::Layout(2).total()), 2, kEmulatedSharedBytes));
    CHECK_FALSE(fused::cluster_weights_fit(2, static_cast<int>(model::Layout(8).total()), 2, kEmulatedSharedBytes));
    CHECK(fused::cluster_weights_fit(2, static_cast<int>(model::Layout(8).total()), 1, kEmulatedSharedBytes));
}

TEST_CASE("fused emulator: a cluster group copies a step's parameters once, at its first rows unit") {
    // rev88 on 300 rows at batch 128 (steps of 64, 64 and 22 rows units): at 16 blocks of 2 groups a
    // group runs 2 rows units of the first two steps, at 4 blocks of 2 groups 8 of them, so its later
    // units read the copy its first made. Kept, that is the trainer's bits (the cases above); poisoned
    // (the emulator's check mode), a later unit reads NaN where a copy of its own would have read the
    // parameters, and so does the task. Rows units of 8 rows at 16 blocks of 1 group (16, 16 and 6
    // units a step) give no group a later unit, so poisoning changes nothing there.
    TaskConfig c;
    c.epochs = 1;
    const TaskInputs inputs = validate::synthetic_inputs(300, 70, 53);
    const PreparedTask task(inputs, c, make_backend("cpu"));
    const auto trained = [&](int blocks, int groups, int rows_per_unit, bool poison) {
        const TaskPlan plan(c, 300, 70, Path::fused, blocks);
        Emulator emu(plan);
        emu.set_cluster_groups(groups);
        emu.set_launch_shape(rows_per_unit, fused::kPredictTile);
        emu.set_poison_kept(poison);
        emu.upload(task.prepared());
        emu.execute(plan.reset());
        emu.execute(plan.normalize());
        emu.execute(plan.epoch(0));
        return emu.f32(Buf::params);
    };
    cpu::Trainer<float> ref(task.prepared());
    ref.reset();
    ref.normalize();
    ref.epoch(0);
    for (int blocks : {16, 4}) {
        CAPTURE(blocks);
        CHECK(trained(blocks, 2, 2, false) == ref.parameters());
        const std::vector<float> poisoned = trained(blocks, 2, 2, true);
        CHECK(std::isnan(poisoned.front()));
        CHECK(std::isnan(poisoned.back()));
    }
    CHECK(trained(16, 1, 8, true) == ref.parameters());
}

TEST_CASE("fused: the units of a set go to the cluster's groups once each") {
    // unit_slots is the device loop's and the emulator's one mapping: every unit of a set to exactly
    // one group of one rank, whatever the cluster's shape.
    for (int blocks : {1, 3, 16})
        for (int groups : {1, 2, 4}) {
            std::vector<int> seen(70, 0);
            for (int rank = 0; rank < blocks; ++rank)
                for (int g = 0; g < groups; ++g) {
                    const fused::UnitSlots s = fused::unit_slots(rank, g, blocks, groups);
                    for (int u = s.first; u < 70; u += s.stride) ++seen[static_cast<std::size_t>(u)];
                }
            CAPTURE(blocks);
            CAPTURE(groups);
            CHECK(seen == std::vector<int>(70, 1));
        }
}

TEST_CASE("plan: the cluster launch is refused in one line where it does not run") {
    TaskConfig c;
    for (int bad : {-1, 17})
        CHECK_THROWS_WITH_AS(TaskPlan(c, 300, 70, Path::fused, bad), "fused: a cluster has 1 to 16 blocks", Error);
    CHECK_THROWS_WITH_AS(TaskPlan(c, 300, 70, Path::cublaslt, 8),
                         "plan: whole epochs in one cluster launch run cuda-fused's width-82 step only", Error);
    TaskConfig wide;
    wide.width = 90;
    CHECK_THROWS_WITH_AS(TaskPlan(wide, 300, 70, Path::fused, 8),
                         "cuda-fused: whole epochs in one cluster launch (cluster blocks 8) run the width-82 step "
                         "only, not width 90: set cluster blocks to 0 (--cluster-blocks 0, "
                         "configure_gpu(cluster_blocks=0)) for it",
                         Error);
    // Without clusters the epoch is the steps; with them, one launch that reaches every buffer a
    // step does (the plan's checker holds its accesses to the buffers' sizes).
    const TaskPlan steps(c, 300, 70, Path::fused), cluster(c, 300, 70, Path::fused, 16);
    CHECK(count_ops(steps.epoch(0)).launches() == 1 + 2 * 3);
    CHECK(count_ops(cluster.epoch(0)).launches() == 2);
    CHECK_NOTHROW(cluster.check(cluster.epoch(1)));
    CHECK(std::string(op_name(cluster.epoch_body().front())) == "fused_epochs");
}

TEST_CASE("fused emulator: a cluster launch's arguments are refused in one line") {
    TaskConfig c;
    const TaskPlan plan(c, 300, 70, Path::fused);
    Emulator emu(plan);
    for (int bad : {0, 17})
        CHECK_THROWS_WITH_AS(emu.fused_epochs(0, 1, bad), "fused: a cluster has 1 to 16 blocks", Error);
    for (int bad : {0, 3, 8})
        CHECK_THROWS_WITH_AS(emu.set_cluster_groups(bad), "fused: a cluster block has 1, 2 or 4 groups", Error);
    CHECK_THROWS_WITH_AS(emu.fused_epochs(1, 2, 4), "fused: epochs 1 to 2 asked of 2", Error);
    CHECK_THROWS_WITH_AS(emu.fused_epochs(-1, 1, 4), "fused: epochs -1 to -1 asked of 2", Error);
    const TaskPlan cublaslt(c, 300, 70, Path::cublaslt);
    Emulator other(cublaslt);
    CHECK_THROWS_WITH_AS(other.fused_epochs(0, 1, 4),
                         "plan: whole epochs in one cluster launch run cuda-fused's width-82 step only", Error);
    TaskConfig wide;
    wide.width = 90;
    const TaskPlan any(wide, 300, 70, Path::fused);
    Emulator any_emu(any);
    CHECK_THROWS_WITH_AS(any_emu.fused_epochs(0, 1, 4),
                         "plan: whole epochs in one cluster launch run cuda-fused's width-82 step only", Error);
}

namespace {

// A case that sets the runtime options leaves the defaults for the cases after it.
struct DefaultOptionsAfter {
    ~DefaultOptionsAfter() { Runtime::reset_for_tests(); }
};

std::unique_ptr<PreparedTask> emulated(const TaskInputs& inputs, const TaskConfig& c, const std::string& backend) {
    return std::make_unique<PreparedTask>(inputs, c,
                                          backend == "cpu" ? make_backend("cpu") : make_emulated_backend(backend));
}

}  // namespace

TEST_CASE("launch groups: tasks of one cluster shape train together, each with its own run()'s bits") {
    // With clusters, tasks whose launches have one shape are K clusters of one launch
    // (engine/cuda/cluster_tasks.hpp); emulated, each cluster's whole task from its resident
    // permutations in turn. Three rev88 tasks (other seeds, epochs and learning rates: one shape),
    // one at depth 1 (its own group), one on the CPU (none): each must end with the float32
    // trainer's bits, as cpu-reference gives them alone.
    const DefaultOptionsAfter restore;
    Runtime::reset_for_tests();
    RuntimeOptions options;
    options.fused_cluster_blocks = 4;
    Runtime::configure(options);
    const TaskInputs inputs = validate::synthetic_inputs(300, 40, 61);
    std::vector<TaskConfig> configs(5);
    configs[0].seed = 3;
    configs[1].seed = 4, configs[1].epochs = 2, configs[1].learning_rate = 0.05;
    configs[2].seed = 5, configs[2].epochs = 3;
    configs[3].seed = 6, configs[3].depth = 1;
    configs[4].seed = 7;
    const std::vector<std::string> backends = {"cuda-fused", "cuda-fused", "cuda-fused", "cuda-fused", "cpu"};
    std::vector<std::unique_ptr<PreparedTask>> tasks;
    std::vector<PreparedTask*> list;
    for (std::size_t k = 0; k < configs.size(); ++k) {
        tasks.push_back(emulated(inputs, configs[k], backends[k]));
        list.push_back(tasks.back().get());
    }
    const std::string rev88 = std::to_string(model::Layout(2).total()),
                      depth1 = std::to_string(model::Layout(1).total());
    const std::string group = tasks[0]->backend().launch_group();
    CHECK(group == "cuda-fused (emulated): clusters of 4 blocks, 2 groups, 2 rows a unit, " + rev88 +
                       " parameters staged, " + std::to_string(fused::kSumLanes) + " sum lanes");
    CHECK(tasks[1]->backend().launch_group() == group);
    CHECK(tasks[2]->backend().launch_group() == group);
    CHECK(tasks[3]->backend().launch_group().find(depth1 + " parameters") != std::string::npos);
    CHECK(tasks[4]->backend().launch_group().empty());

    std::vector<TaskOutputs> alone;
    for (std::size_t k = 0; k < configs.size(); ++k) {
        PreparedTask solo(inputs, configs[k], make_backend("cpu-reference"));
        solo.run();
        alone.push_back(solo.outputs());
    }
    const auto check_all = [&](std::size_t count) {
        for (std::size_t k = 0; k < count; ++k) {
            CAPTURE(k);
            const TaskOutputs out = tasks[k]->outputs();
            CHECK(out.state.parameters == alone[k].state.parameters);
            CHECK(out.state.velocity == alone[k].state.velocity);
            CHECK(out.state.scores == alone[k].state.scores);
            CHECK(out.state.predictions == alone[k].state.predictions);
        }
    };
    PreparedTask::run_together(list, 2);
    for (PreparedTask* t : list) CHECK(t->run_count() == 1);
    // Trained as groups: the three of one shape together, the others alone.
    const std::vector<int> group_sizes = {3, 3, 3, 1, 1};
    for (std::size_t k = 0; k < list.size(); ++k) CHECK(list[k]->last_run_group_size() == group_sizes[k]);
    check_all(configs.size() - 1);  // the CPU task: `cpu`'s own order, not the reference's
    // The group straight through its first member, from freshly reset members (so a run_group that
    // trained nothing would fail), twice over: the same bytes again.
    for (int round = 0; round < 2; ++round) {
        for (std::size_t k = 0; k < 3; ++k) tasks[k]->backend().reset();
        CHECK(tasks[1]->backend().read_state().parameters != alone[1].state.parameters);
        tasks[0]->backend().run_group({&tasks[0]->backend(), &tasks[1]->backend(), &tasks[2]->backend()});
        check_all(3);
    }

    // Refused, in one line, before anything runs: a member of another shape or kind, the lead not
    // first, a task twice, a backend without groups.
    auto& lead = tasks[0]->backend();
    const std::string other_shape = "given a task of another: cuda-fused " + tasks[3]->backend().launch_group();
    const std::vector<Backend*> unlike = {&lead, &tasks[3]->backend()};
    CHECK_THROWS_WITH_AS(lead.run_group(unlike), doctest::Contains(other_shape.c_str()), Error);
    CHECK_THROWS_WITH_AS(lead.run_group({&lead, &tasks[4]->backend()}),
                         doctest::Contains("given a task of another: cpu"), Error);
    CHECK_THROWS_WITH_AS(lead.run_group({&tasks[1]->backend(), &lead}),
                         "backend: a launch group is run by its first member", Error);
    CHECK_THROWS_WITH_AS(lead.run_group({&lead, &lead}),
                         "backend: a launch group lists a task twice (it would race with itself)", Error);
    CHECK_THROWS_WITH_AS(tasks[4]->backend().run_group({&tasks[4]->backend()}),
                         "backend: cpu trains no tasks together in one launch", Error);
    // Without clusters there are no groups.
    Runtime::reset_for_tests();
    CHECK(emulated(inputs, configs[0], "cuda-fused")->backend().launch_group().empty());
}
