// revgraph_kernel_lab: the fused step's kernels at several launch shapes, each checked against the
// CPU, and timed where there is a GPU (in the spirit of llm.c's dev/cuda).
//
// What varies: rows per block of the rows kernel and query rows per block (the tile) of the
// predict kernel, threads per block of the rows, grads and predict kernels (up to each kernel's
// launch bound), and where a block stages the parameters (copied to shared memory, or read from
// global memory). Rows per block and the tile are launch shapes, not arithmetic (every row's items
// are its own), so every shape must give the same bits.
// And the sum order (engine/model/sum_order.hpp: 1, 2, 4 or 8 lanes), which is arithmetic: each
// order must give the float reference trainer's bits at the same lane count (on the GPU, the
// emulator's in that order, also on batches of 135 and 60 rows), and the GPU's table of the orders
// (step and prediction time, and each order's phase table) is what the choice of fused::kSumLanes
// is made from.
//
// CPU (every build, a meson test): the whole task on the fused plan's CPU emulator (the kernels'
// own code, block by block, phase by phase) at each rows-per-block and tile, with the parameters
// staged and not, items in order and last to first, must end in the float reference trainer's
// bits (parameters, momentum, scores, predictions). GPU (CUDA build with a device): from the
// emulator's state at the start of an epoch, one step (rows + grads kernels) at each step shape
// and the prediction at each predict shape must give the emulator's bits; each is then timed (graph
// replays after >= 50 ms of warm-up, min and median of 7), and the fastest shape of each table by
// median is printed; then the whole task in one cluster launch (clusters of 2 to 16 blocks, and K
// tasks a launch) beside the same epochs as two kernels a step, each checked against the emulator.
// Exit 0 only when every check holds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/cpu/trainer.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/task.hpp"
#if defined(REVGRAPH_HAVE_CUDA)
#include <cuda_runtime.h>

#include "engine/cuda_util/check.hpp"
#include "engine/cuda_util/handles.hpp"
#include "engine/cuda/device_buffer.hpp"
#include "engine/cuda/executor.hpp"
#include "engine/cuda/cluster_tasks.hpp"
#include "bench/harness/energy.hpp"
#include "bench/labs/phase_stamps.hpp"
#include "engine/cuda/kernels.hpp"
#include "graphs/capture.hpp"
#endif

namespace revgraph::bench {
namespace {

using cuda::Buf;
namespace fused = cuda::fused;

// Every buffer of an emulator, copied (the state a GPU run starts from, or what it must end in).
struct Snapshot {
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<std::int32_t>> i32;
    std::vector<std::vector<std::int64_t>> i64;
    explicit Snapshot(cuda::Emulator& e) {
        for (int k = 0; k < cuda::kBufCount; ++k) {
            f32.push_back(e.f32(static_cast<Buf>(k)));
            i32.push_back(e.i32(static_cast<Buf>(k)));
            i64.push_back(e.i64(static_cast<Buf>(k)));
        }
    }
};

// Rows per block and predict tiles the lab tries (the defaults among them).
constexpr int kRowsPerBlockChoices[] = {1, 2, 4, 8, 16};
constexpr int kTileChoices[] = {16, 32, 64, 128};
#if defined(REVGRAPH_HAVE_CUDA)
// The phase table: steps captured back to back in one graph, replays before the one whose clocks it shows.
constexpr int kStampedSteps = 16;
constexpr int kStampReplays = 20;
#endif

// The whole task on the emulator at one launch shape; true when it ends in the reference's bits.
bool emulated_task_matches(const cuda::TaskPlan& plan, const PreparedInputs& prepared, cpu::Trainer<float>& ref,
                           std::size_t shared_bytes, bool reverse, int rows_per_block, int tile,
                           int lanes = fused::kSumLanes) {
    cuda::Emulator emu(plan, shared_bytes);
    emu.set_reverse_order(reverse);
    emu.set_launch_shape(rows_per_block, tile);
    emu.set_sum_lanes(lanes);
    emu.upload(prepared);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    for (int e = 0; e < plan.config().epochs; ++e) emu.execute(plan.epoch(e));
    emu.execute(plan.predict());
    return emu.f32(Buf::params) == ref.parameters() && emu.f32(Buf::velocity) == ref.velocity() &&
           emu.f32(Buf::query_scores) == ref.scores() && emu.i64(Buf::predictions) == ref.predictions();
}

// Every rows-per-block with the default tile, every tile with the default rows per block; each
// staged and not, in order and last to first.
bool cpu_lab(const cuda::TaskPlan& plan, const PreparedInputs& prepared, cpu::Trainer<float>& ref) {
    struct Shape {
        int rows_per_block, tile;
    };
    std::vector<Shape> shapes;
    for (int r : kRowsPerBlockChoices) shapes.push_back({r, fused::kPredictTile});
    for (int t : kTileChoices)
        if (t != fused::kPredictTile) shapes.push_back({fused::kRowsPerBlock, t});
    bool ok = true;
    std::printf("cpu: fused emulator against the float reference's bits (parameters, momentum, scores, predictions)\n");
    std::printf("%-9s %-5s %-18s %-14s %s\n", "rows/blk", "tile", "parameters", "items", "bits");
    for (const Shape& sh : shapes)
        for (std::size_t shared : {cuda::kEmulatedSharedBytes, std::size_t{0}})
            for (bool reverse : {false, true}) {
                const bool equal =
                    emulated_task_matches(plan, prepared, ref, shared, reverse, sh.rows_per_block, sh.tile);
                std::printf("%-9d %-5d %-18s %-14s %s\n", sh.rows_per_block, sh.tile,
                            shared ? "shared memory" : "global memory", reverse ? "last to first" : "in order",
                            equal ? "equal" : "DIFFER");
                ok = ok && equal;
            }
    return ok;
}

// Every sum order at the default shapes, staged and not, in order and last to first, against the
// float reference trained in that order (a trainer each).
bool cpu_lanes(const cuda::TaskPlan& plan, const PreparedInputs& prepared) {
    bool ok = true;
    std::printf("cpu: fused emulator in each sum order against the float reference in the same order\n");
    std::printf("%-6s %-18s %-14s %s\n", "lanes", "parameters", "items", "bits");
    for (int lanes : model::kSumLaneCounts) {
        cpu::Trainer<float> ref(prepared, lanes);
        ref.reset();
        ref.normalize();
        for (int e = 0; e < plan.config().epochs; ++e) ref.epoch(e);
        ref.predict();
        for (std::size_t shared : {cuda::kEmulatedSharedBytes, std::size_t{0}})
            for (bool reverse : {false, true}) {
                const bool equal = emulated_task_matches(plan, prepared, ref, shared, reverse, fused::kRowsPerBlock,
                                                         fused::kPredictTile, lanes);
                std::printf("%-6d %-18s %-14s %s\n", lanes, shared ? "shared memory" : "global memory",
                            reverse ? "last to first" : "in order", equal ? "equal" : "DIFFER");
                ok = ok && equal;
            }
    }
    return ok;
}

// The whole task in one cluster launch (engine/cuda/fused_cluster.hpp) on the emulator, at a
// cluster of 16 blocks and its default groups, of 5 blocks of one group (a step's units not a
// multiple) and of 3 of four groups, in order and last to first, against the float reference's bits.
bool cpu_clusters(const cuda::TaskPlan& plan, const PreparedInputs& prepared, cpu::Trainer<float>& ref) {
    bool ok = true;
    std::printf("cpu: the whole task in one cluster launch on the emulator against the float reference's bits\n");
    std::printf("%-9s %-7s %-14s %s\n", "blocks", "groups", "items", "bits");
    struct Shape {
        int blocks, groups;
    };
    for (const Shape& sh : {Shape{fused::kClusterBlocks, fused::kClusterGroups}, Shape{5, 1}, Shape{3, 4}})
        for (bool reverse : {false, true}) {
            cuda::Emulator emu(plan);
            emu.set_reverse_order(reverse);
            emu.set_cluster_groups(sh.groups);
            emu.upload(prepared);
            emu.execute(plan.reset());
            emu.execute(plan.normalize());
            emu.fused_epochs(0, plan.config().epochs, sh.blocks);
            emu.execute(plan.predict());
            const bool equal = emu.f32(Buf::params) == ref.parameters() && emu.f32(Buf::velocity) == ref.velocity() &&
                               emu.i64(Buf::predictions) == ref.predictions();
            std::printf("%-9d %-7d %-14s %s\n", sh.blocks, sh.groups, reverse ? "last to first" : "in order",
                        equal ? "equal" : "DIFFER");
            ok = ok && equal;
        }
    return ok;
}

#if defined(REVGRAPH_HAVE_CUDA)
// The pageable copies run on the legacy stream and may return before their DMA ends: wait for
// the device before the lab's (non-blocking) stream reads what they wrote.
void upload_all(const cuda::DeviceMemory& mem, const cuda::TaskPlan& plan, const Snapshot& s) {
    for (int k = 0; k < cuda::kBufCount; ++k) {
        const Buf b = static_cast<Buf>(k);
        if (plan.bytes(b) == 0) continue;
        const void* src = cuda::buf_elem(b) == cuda::Elem::f32   ? static_cast<const void*>(s.f32[k].data())
                          : cuda::buf_elem(b) == cuda::Elem::i32 ? static_cast<const void*>(s.i32[k].data())
                                                                 : static_cast<const void*>(s.i64[k].data());
        cudaCheck(cudaMemcpy(mem.base(b), src, plan.bytes(b), cudaMemcpyHostToDevice));
    }
    cudaCheck(cudaDeviceSynchronize());
}

template <class T>
std::vector<T> download(const cuda::DeviceMemory& mem, const cuda::TaskPlan& plan, Buf b) {
    std::vector<T> out(plan.elements(b));
    cudaCheck(cudaMemcpy(out.data(), mem.base(b), plan.bytes(b), cudaMemcpyDeviceToHost));
    return out;
}

bool f32_equal(const cuda::DeviceMemory& mem, const cuda::TaskPlan& plan, const Snapshot& want, Buf b) {
    return download<float>(mem, plan, b) == want.f32[static_cast<int>(b)];
}

// Microseconds per launch sequence, min and median.
struct Micros {
    double min = 0, median = 0;
};

// Microseconds per launch sequence as the engine runs it: `repeats` sequences captured into one
// graph (graphs/capture.hpp), so host launch cost does not hide the kernels; replayed for at least
// kWarmMs first, so the clocks are the loaded ones, then kTimedReplays replays each timed on its own.
class Timer {
public:
    static constexpr float kWarmMs = 50.0f;
    static constexpr int kTimedReplays = 7;

    Timer(cudaStream_t stream, int repeats) : stream_(stream), repeats_(repeats) {}
    template <class F>
    Micros us(F&& launch) {
        const graphs::GraphExec graph = graphs::capture(stream_, "kernel_lab", [&](cudaStream_t) {
            for (int i = 0; i < repeats_; ++i) launch();
        });
        graph.upload(stream_);
        // Warm: replays until kWarmMs of them have run back to back (at least one).
        cudaCheck(cudaEventRecord(t0_.e, stream_));
        for (float warm = 0; warm < kWarmMs;) {
            graph.launch(stream_);
            cudaCheck(cudaEventRecord(t1_.e, stream_));
            cudaCheck(cudaEventSynchronize(t1_.e));
            cudaCheck(cudaEventElapsedTime(&warm, t0_.e, t1_.e));
        }
        std::vector<double> per_sequence;
        for (int k = 0; k < kTimedReplays; ++k) {
            cudaCheck(cudaEventRecord(t0_.e, stream_));
            graph.launch(stream_);
            cudaCheck(cudaEventRecord(t1_.e, stream_));
            cudaCheck(cudaEventSynchronize(t1_.e));
            float ms = 0;
            cudaCheck(cudaEventElapsedTime(&ms, t0_.e, t1_.e));
            per_sequence.push_back(1e3 * static_cast<double>(ms) / repeats_);
        }
        std::sort(per_sequence.begin(), per_sequence.end());
        return {per_sequence.front(), per_sequence[per_sequence.size() / 2]};  // an odd count: the middle one
    }

private:
    cudaStream_t stream_;
    int repeats_;
    cuda::Event t0_, t1_;
};

// "yes", "no", or "no-fit" where staging was asked for but the parameters do not fit.
const char* staging(bool asked, bool fits) { return !asked ? "no" : fits ? "yes" : "no-fit"; }

// The fastest shape of a table among those that gave the right bits.
struct Fastest {
    double us = -1;
    std::string shape;
    void offer(bool equal, Micros t, std::string s) {
        if (equal && (us < 0 || t.median < us)) {
            us = t.median;
            shape = std::move(s);
        }
    }
    void print(const char* what, const std::string& defaults) const {
        if (us >= 0)
            std::printf("gpu: fastest %s %.2f us median (%s); defaults: %s\n", what, us, shape.c_str(),
                        defaults.c_str());
        else
            std::printf("gpu: no %s shape gave the emulator's bits\n", what);
    }
};

// Energy by rows per block (--energy-seconds=S): a task's net energy stayed about the same while its
// time fell by a third (bench/NOTES.md, "Energy"), as if it were set by the SMs a step keeps busy
// rather than by time, and rows per block is how many SMs the rows kernel takes. Each shape's step
// graph (rows and grads kernels, `repeats` steps) is replayed back to back for S seconds under NVML,
// the idle power sampled before it subtracted (bench/harness/energy.hpp); the learning rate is 0 so
// that seconds of steps on one batch stay finite (the same work: SGD still runs).
void print_step_energy(const cuda::TaskPlan& plan, const cuda::DeviceMemory& mem, const Snapshot& start,
                       const fused::StepArgs& rows_default, const fused::StepArgs& grads_default,
                       std::size_t shared_limit, int repeats, double seconds, cudaStream_t stream) {
    std::string why;
    const std::unique_ptr<Nvml> nvml = Nvml::open(&why);
    if (!nvml) {
        std::printf("energy: not run (%s)\n", why.c_str());
        return;
    }
    EnergyOptions o;
    o.settle_seconds = 2;
    o.idle_seconds = 3;
    o.idle_after_seconds = 0;
    o.min_seconds = seconds;
    o.min_tasks = 1;
    std::printf(
        "energy: NVML, %d steps a graph replayed back to back for >= %.0f s a shape, idle before "
        "subtracted, learning rate 0\n",
        repeats, seconds);
    std::printf("%-9s %-7s %10s %13s %8s %8s\n", "rows/blk", "blocks", "us/step", "mJ/step net", "W", "idle W");
    for (int rpb : {1, 2, 4, 8}) {
        fused::StepArgs rows_args = rows_default, grads_args = grads_default;
        rows_args.rows_per_block = rpb;
        rows_args.lr = grads_args.lr = 0.0f;
        const bool w = fused::weights_fit(fused::rows_state_floats(rpb), rows_args.param_count, shared_limit);
        upload_all(mem, plan, start);
        const graphs::GraphExec graph = graphs::capture(stream, "kernel_lab_energy", [&](cudaStream_t s) {
            for (int i = 0; i < repeats; ++i) {
                cuda::kernels::launch_fused_rows(rows_args, w, false, s);
                cuda::kernels::launch_fused_grads(grads_args, false, s);
            }
        });
        graph.upload(stream);
        const auto round = [&] {
            const auto t0 = std::chrono::steady_clock::now();
            graph.launch(stream);
            cudaCheck(cudaStreamSynchronize(stream));
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        };
        for (int k = 0; k < 3; ++k) (void)round();
        const EnergyReport r = measure_energy(*nvml, round, o);
        if (!r.available) {
            std::printf("%-9d energy: not run (%s)\n", rpb, r.reason.c_str());
            continue;
        }
        std::printf("%-9d %-7d %10.2f %13.4f %8.1f %8.1f\n", rpb, fused::rows_blocks(rows_args),
                    1e3 * r.task_ms_median / repeats, 1e3 * r.joules_per_task / repeats, r.average_watts, r.idle_watts);
    }
}

// An emulator in sum order `lanes` at epoch 0's start: inputs uploaded, parameters reset and
// normalised, the epoch's order in place.
cuda::Emulator emulator_at_epoch_start(const cuda::TaskPlan& plan, const PreparedInputs& prepared,
                                       std::size_t shared_limit, int lanes) {
    cuda::Emulator emu(plan, shared_limit);
    emu.set_sum_lanes(lanes);
    emu.upload(prepared);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    emu.execute(plan.epoch_start(0));
    return emu;
}

// The emulator's buffers at epoch 0's start, after its first step, and after a prediction from
// there, in sum order `lanes`: what the GPU's step and prediction must reproduce.
struct FirstStep {
    Snapshot start, stepped, predicted;
};
FirstStep emulate_first_step(const cuda::TaskPlan& plan, const PreparedInputs& prepared, std::size_t shared_limit,
                             int lanes) {
    cuda::Emulator emu = emulator_at_epoch_start(plan, prepared, shared_limit, lanes);
    Snapshot start(emu);
    emu.execute(plan.step(0));
    Snapshot stepped(emu);
    emu.execute(plan.predict());
    return {std::move(start), std::move(stepped), Snapshot(emu)};
}

// The sum orders' device-only paths the default task's first step does not reach: a batch of 135
// rows (a staging chunk of 128, then one of 7: the lanes carried between chunks in shared memory,
// then a short tail) and the epoch's last batch of 60. Each order's step on the GPU from the
// emulator's state before it must give the emulator's bits after it in that order.
bool gpu_orders_odd_batches(const TaskInputs& inputs, std::size_t shared_limit, cudaStream_t stream) {
    TaskConfig config;
    config.batch_size = 135;
    const PreparedInputs prepared = prepare_inputs(inputs, config);
    const cuda::TaskPlan plan(config, inputs.train_count(), inputs.test_count(), cuda::Path::fused);
    const cuda::DeviceMemory mem(plan);
    const int last = static_cast<int>(plan.batches().size()) - 1;
    bool ok = true;
    std::printf("gpu: sum orders on batches of %d and %d rows (epoch 0's first and last steps)\n",
                plan.batches().front().rows, plan.batches().back().rows);
    for (int lanes : model::kSumLaneCounts) {
        cuda::kernels::prepare_fused_kernels(lanes);
        cuda::Emulator emu = emulator_at_epoch_start(plan, prepared, shared_limit, lanes);
        for (int b = 0; b <= last; ++b) {
            const Snapshot before(emu);
            emu.execute(plan.step(b));
            if (b != 0 && b != last) continue;
            const Snapshot after(emu);
            const cuda::Program step = plan.step(b);
            fused::StepArgs rows_args = cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(0)), mem);
            fused::StepArgs grads_args = cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(1)), mem);
            rows_args.sum_lanes = grads_args.sum_lanes = lanes;
            const bool w = fused::weights_fit(fused::rows_state_floats(rows_args.rows_per_block), rows_args.param_count,
                                              shared_limit);
            upload_all(mem, plan, before);
            cuda::kernels::launch_fused_rows(rows_args, w, false, stream);
            cuda::kernels::launch_fused_grads(grads_args, false, stream);
            cudaCheck(cudaStreamSynchronize(stream));
            const bool equal = f32_equal(mem, plan, after, Buf::params) && f32_equal(mem, plan, after, Buf::velocity) &&
                               f32_equal(mem, plan, after, Buf::grads);
            std::printf("%-6d batch %-3d %4d rows  %s\n", lanes, b, rows_args.rows, equal ? "equal" : "DIFFER");
            ok = ok && equal;
        }
    }
    return ok;
}

// Whole epochs on a thread-block cluster (engine/cuda/fused_cluster.hpp) beside the two-kernel step:
// the task's every epoch in ONE launch (each epoch's order read from the resident permutations) at
// clusters of 2, 4, 8 and 16 blocks, at 16 also with 1 and 4 thread groups a block and 4 and 8 rows a
// rows unit, and K tasks in one launch (K clusters, a
// task each), each checked against the emulator's two-kernel epochs, then timed beside the same epochs as two kernels
// a step (Programmatic Dependent Launch where the build has sm_90 code, as the engine runs them).
// A task's time is the launch's over K. A cluster the device cannot place is said, not failed.
bool gpu_clusters(const cuda::TaskPlan& plan, const PreparedInputs& prepared, std::size_t shared_limit,
                  cudaStream_t stream) {
    // A device (or this build's code for it) without clusters: said, not failed.
    if (const std::string problem = cuda::kernels::fused_cluster_code_problem(); !problem.empty()) {
        std::printf("gpu: the whole task in one cluster launch: not run (%s)\n", problem.c_str());
        return true;
    }
    const int epochs = plan.config().epochs;
    const int steps = epochs * static_cast<int>(plan.batches().size());
    cuda::Emulator emu(plan, shared_limit);
    emu.upload(prepared);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    const Snapshot start(emu);
    for (int e = 0; e < epochs; ++e) emu.execute(plan.epoch(e));
    const Snapshot trained(emu);
    const auto trained_equal = [&](const cuda::DeviceMemory& m) {
        return f32_equal(m, plan, trained, Buf::params) && f32_equal(m, plan, trained, Buf::velocity) &&
               f32_equal(m, plan, trained, Buf::grads);
    };
    const std::size_t limit = cuda::kernels::prepare_fused_cluster_kernel();
    const cuda::DeviceMemory mem(plan);
    Timer timer(stream, 1);
    bool ok = true;
    std::printf("gpu: the whole task (%d epochs, %d steps) in one launch on a cluster, beside two kernels a step\n",
                epochs, steps);
    std::printf("%-42s %-6s %17s %10s\n", "launch", "bits", "task_us min/med", "us/step");
    const auto row = [&](const std::string& what, bool equal, Micros t, int tasks) {
        std::printf("%-42s %-6s %8.2f/%8.2f %10.2f\n", what.c_str(), equal ? "equal" : "DIFFER", t.min / tasks,
                    t.median / tasks, t.median / tasks / steps);
        ok = ok && equal;
    };
    {
        const bool pdl = cuda::kernels::fused_kernels_wait_programmatically();
        std::vector<fused::StepArgs> rows, grads;
        for (int e = 0; e < epochs; ++e)
            for (int b = 0; b < static_cast<int>(plan.batches().size()); ++b) {
                const cuda::Program step = plan.step(b);
                rows.push_back(cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(0)), mem));
                grads.push_back(cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(1)), mem));
                const cuda::Ref order{Buf::permutations, static_cast<std::size_t>(e * plan.train_count())};
                rows.back().order = grads.back().order = mem.i32(order);
            }
        const bool w =
            fused::weights_fit(fused::rows_state_floats(rows[0].rows_per_block), rows[0].param_count, shared_limit);
        const auto two_kernels = [&] {
            for (std::size_t k = 0; k < rows.size(); ++k) {
                cuda::kernels::launch_fused_rows(rows[k], w, pdl, stream);
                cuda::kernels::launch_fused_grads(grads[k], pdl, stream);
            }
        };
        upload_all(mem, plan, start);
        two_kernels();
        cudaCheck(cudaStreamSynchronize(stream));
        const bool equal = trained_equal(mem);
        row(std::string("two kernels a step") + (pdl ? " (PDL)" : ""), equal, timer.us(two_kernels), 1);
    }
    fused::EpochsArgs one = cuda::epochs_from_permutations(plan, mem, 0, epochs);
    one.weights_shared = fused::cluster_weights_fit(one.step.rows_per_block, one.step.param_count, one.groups, limit);
    const std::size_t smem = fused::cluster_shared_bytes(one, one.step.sum_lanes);
    // Cluster sizes at the default rows a unit and groups, then one and four groups a block (units a
    // block runs at once), then more rows a unit (fewer rows units a step, each longer: the two-kernel
    // step measured slower so, but a cluster runs its units in series).
    struct Shape {
        int blocks, rows_per_block, groups;
    };
    const int rpb = fused::kRowsPerBlock, groups = fused::kClusterGroups;
    for (const Shape& sh : {Shape{2, rpb, groups}, Shape{4, rpb, groups}, Shape{8, rpb, groups}, Shape{16, rpb, groups},
                            Shape{16, rpb, 1}, Shape{16, rpb, 4}, Shape{16, 4, groups}, Shape{16, 8, groups}}) {
        fused::EpochsArgs a = one;
        a.step.rows_per_block = sh.rows_per_block;
        a.groups = sh.groups;
        a.weights_shared = fused::cluster_weights_fit(sh.rows_per_block, a.step.param_count, sh.groups, limit);
        const std::string what = "cluster of " + std::to_string(sh.blocks) + ", " + std::to_string(sh.groups) +
                                 " groups, " + std::to_string(sh.rows_per_block) + " rows a unit";
        if (const std::string problem = cuda::kernels::fused_cluster_problem(
                sh.blocks, a.step.sum_lanes, fused::cluster_shared_bytes(a, a.step.sum_lanes));
            !problem.empty()) {
            std::printf("%-42s not run (%s)\n", what.c_str(), problem.c_str());
            continue;
        }
        const auto launch = [&] { cuda::kernels::launch_fused_cluster(a, sh.blocks, 1, nullptr, stream); };
        upload_all(mem, plan, start);
        launch();
        cudaCheck(cudaStreamSynchronize(stream));
        const bool equal = trained_equal(mem);
        row(what, equal, timer.us(launch), 1);
    }
    // K tasks at once: K clusters of one launch, each on buffers of its own.
    for (int blocks : {8, 16})
        for (int tasks : {4, 16}) {
            const std::string what = std::to_string(tasks) + " tasks, clusters of " + std::to_string(blocks);
            if (const std::string problem = cuda::kernels::fused_cluster_problem(blocks, one.step.sum_lanes, smem);
                !problem.empty()) {
                std::printf("%-42s not run (%s)\n", what.c_str(), problem.c_str());
                continue;
            }
            std::vector<cuda::DeviceMemory> mems;
            std::vector<fused::EpochsArgs> args;
            for (int t = 0; t < tasks; ++t) {
                mems.emplace_back(plan);
                upload_all(mems.back(), plan, start);
                args.push_back(cuda::epochs_from_permutations(plan, mems.back(), 0, epochs));
                args.back().weights_shared = one.weights_shared;
            }
            for (const fused::EpochsArgs& t : args)  // `one` sizes the launch (kernels.hpp)
                if (!fused::same_launch_shape(t, one)) throw Error("kernel lab: K tasks of unlike launch shapes");
            const cuda::DeviceBuffer device_args(args.size() * sizeof(fused::EpochsArgs));
            // On the lab's own stream, waited for: a pageable cudaMemcpy on the legacy stream may
            // return before its DMA ends, and the non-blocking stream would not wait for it.
            cudaCheck(
                cudaMemcpyAsync(device_args.get(), args.data(), device_args.bytes(), cudaMemcpyHostToDevice, stream));
            cudaCheck(cudaStreamSynchronize(stream));
            const auto* on_device = static_cast<const fused::EpochsArgs*>(device_args.get());
            const auto launch = [&] { cuda::kernels::launch_fused_cluster(args[0], blocks, tasks, on_device, stream); };
            launch();
            cudaCheck(cudaStreamSynchronize(stream));
            bool equal = true;
            for (const cuda::DeviceMemory& m : mems) equal = equal && trained_equal(m);
            row(what, equal, timer.us(launch), tasks);
        }
    return ok;
}

// One step (batch 0 of epoch 0) at each step shape and the prediction at each predict shape, on the
// GPU: checked against the emulator's bits at the default shape, then timed. Returns false when a
// shape gives other bits. Thread counts stop at the kernels' launch bounds (kRowsThreads,
// kGradsThreads, kPredictThreads), so the larger rows-per-block take more rounds of a phase.
bool gpu_lab(const cuda::TaskPlan& plan, const PreparedInputs& prepared, int repeats, double energy_seconds) {
    const std::size_t shared_limit = cuda::kernels::prepare_fused_kernels();
    const FirstStep first = emulate_first_step(plan, prepared, shared_limit, fused::kSumLanes);
    const Snapshot &start = first.start, &stepped = first.stepped, &predicted = first.predicted;

    const cuda::DeviceMemory mem(plan);
    // The task's state before the first timer: cudaMalloc leaves memory as it finds it, and the rows
    // kernel gathers through the order it reads (and the first timed row would otherwise gather
    // whatever row the leftovers name).
    upload_all(mem, plan, start);
    const cuda::Program step = plan.step(0), predict = plan.predict();
    const auto& rows_op = std::get<cuda::FusedStepOp>(step.at(0));
    const auto& predict_op = std::get<cuda::FusedPredictOp>(predict.at(0));
    const fused::StepArgs rows_default = cuda::ops::resolve(rows_op, mem);
    const fused::StepArgs grads_args = cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(1)), mem);
    const fused::PredictArgs predict_default = cuda::ops::resolve(predict_op, mem);
    const cuda::Stream stream_owner;
    const cudaStream_t stream = stream_owner.s;
    bool all_equal = true;
    {
        Timer timer(stream, repeats);
        std::printf(
            "gpu: %s, %d-row step, %lld query rows, shared limit %zu bytes, %d launches a graph, "
            "warmed %.0f ms, then min/median of %d replays (us per launch sequence)\n",
            cuda::describe_device().c_str(), rows_op.rows, static_cast<long long>(predict_op.rows), shared_limit,
            repeats, static_cast<double>(Timer::kWarmMs), Timer::kTimedReplays);
        const unsigned int rows_threads[] = {64u, 128u, static_cast<unsigned int>(fused::kRowsThreads)};
        const unsigned int grads_threads[] = {64u, 128u, static_cast<unsigned int>(fused::kGradsThreads)};
        const unsigned int predict_threads[] = {64u, 128u, static_cast<unsigned int>(fused::kPredictThreads)};

        // The grads kernel alone: it does not depend on the rows kernel's shape.
        std::printf("%-9s %15s\n", "grads_thr", "grads_us min/med");
        for (unsigned int gt : grads_threads) {
            const Micros t = timer.us([&] { cuda::kernels::launch_fused_grads(grads_args, false, stream, gt); });
            std::printf("%-9u %7.2f/%7.2f\n", gt, t.min, t.median);
        }

        // The step: rows per block x rows threads x grads threads x staging, each checked.
        std::printf("%-9s %-9s %-9s %-7s %-6s %15s %15s\n", "rows/blk", "rows_thr", "grads_thr", "staged", "bits",
                    "rows_us min/med", "step_us min/med");
        Fastest best_step;
        for (int rpb : kRowsPerBlockChoices)
            for (unsigned int rt : rows_threads)
                for (bool staged : {true, false}) {
                    fused::StepArgs rows_args = rows_default;
                    rows_args.rows_per_block = rpb;
                    const bool w = staged && fused::weights_fit(fused::rows_state_floats(rpb), rows_args.param_count,
                                                                shared_limit);
                    const auto rows = [&] { cuda::kernels::launch_fused_rows(rows_args, w, false, stream, rt); };
                    const Micros rows_us = timer.us(rows);
                    for (unsigned int gt : grads_threads) {
                        const auto grads = [&] { cuda::kernels::launch_fused_grads(grads_args, false, stream, gt); };
                        upload_all(mem, plan, start);
                        rows();
                        grads();
                        cudaCheck(cudaStreamSynchronize(stream));
                        const bool equal = f32_equal(mem, plan, stepped, Buf::params) &&
                                           f32_equal(mem, plan, stepped, Buf::velocity) &&
                                           f32_equal(mem, plan, stepped, Buf::grads);
                        all_equal = all_equal && equal;
                        const Micros step_us = timer.us([&] {
                            rows();
                            grads();
                        });
                        std::printf("%-9d %-9u %-9u %-7s %-6s %7.2f/%7.2f %7.2f/%7.2f\n", rpb, rt, gt,
                                    staging(staged, w), equal ? "equal" : "DIFFER", rows_us.min, rows_us.median,
                                    step_us.min, step_us.median);
                        best_step.offer(equal, step_us,
                                        "rows/blk " + std::to_string(rpb) + ", rows_thr " + std::to_string(rt) +
                                            ", grads_thr " + std::to_string(gt) + ", staged " + staging(staged, w));
                    }
                }

        // The prediction: tile x threads x staging, from the stepped state.
        std::printf("%-9s %-9s %-7s %-6s %18s\n", "tile", "pred_thr", "staged", "bits", "predict_us min/med");
        Fastest best_predict;
        for (int tile : kTileChoices)
            for (unsigned int pt : predict_threads)
                for (bool staged : {true, false}) {
                    fused::PredictArgs args = predict_default;
                    args.tile = tile;
                    const bool w =
                        staged && fused::weights_fit(fused::predict_state_floats(tile), args.param_count, shared_limit);
                    const auto run = [&] {
                        cuda::kernels::launch_fused_predict(args, predict_op.rows, w, false, stream, pt);
                    };
                    upload_all(mem, plan, stepped);
                    run();
                    cudaCheck(cudaStreamSynchronize(stream));
                    const bool equal = f32_equal(mem, plan, predicted, Buf::query_scores) &&
                                       download<std::int64_t>(mem, plan, Buf::predictions) ==
                                           predicted.i64[static_cast<int>(Buf::predictions)];
                    all_equal = all_equal && equal;
                    const Micros us = timer.us(run);
                    std::printf("%-9d %-9u %-7s %-6s %7.2f/%7.2f\n", tile, pt, staging(staged, w),
                                equal ? "equal" : "DIFFER", us.min, us.median);
                    best_predict.offer(equal, us,
                                       "tile " + std::to_string(tile) + ", pred_thr " + std::to_string(pt) +
                                           ", staged " + staging(staged, w));
                }
        best_step.print("step", "rows/blk " + std::to_string(fused::kRowsPerBlock) + ", rows_thr " +
                                    std::to_string(fused::kRowsThreads) + ", grads_thr " +
                                    std::to_string(fused::kGradsThreads));
        best_predict.print("prediction", "tile " + std::to_string(fused::kPredictTile) + ", pred_thr " +
                                             std::to_string(fused::kPredictThreads));
    }
    // The sum orders at the default shapes: each order's step and prediction checked against the
    // emulator in that order, then timed; then each order's phase table (the default order's is the
    // one below). What fused::kSumLanes is chosen from.
    {
        Timer timer(stream, repeats);
        std::printf("gpu: sum orders (engine/model/sum_order.hpp) at the default shapes, us per launch sequence\n");
        std::printf("%-6s %-6s %15s %15s %15s %18s\n", "lanes", "bits", "rows_us min/med", "grads_us min/med",
                    "step_us min/med", "predict_us min/med");
        Fastest best_order;
        const bool w = fused::weights_fit(fused::rows_state_floats(rows_default.rows_per_block),
                                          rows_default.param_count, shared_limit);
        const bool pw = fused::weights_fit(fused::predict_state_floats(predict_default.tile),
                                           predict_default.param_count, shared_limit);
        for (int lanes : model::kSumLaneCounts) {
            cuda::kernels::prepare_fused_kernels(lanes);
            const FirstStep order = emulate_first_step(plan, prepared, shared_limit, lanes);
            const Snapshot &order_start = order.start, &order_stepped = order.stepped,
                           &order_predicted = order.predicted;

            fused::StepArgs rows_args = rows_default, grads_l = grads_args;
            fused::PredictArgs predict_args = predict_default;
            rows_args.sum_lanes = grads_l.sum_lanes = predict_args.sum_lanes = lanes;
            const auto rows = [&] { cuda::kernels::launch_fused_rows(rows_args, w, false, stream); };
            const auto grads = [&] { cuda::kernels::launch_fused_grads(grads_l, false, stream); };
            const auto predict = [&] {
                cuda::kernels::launch_fused_predict(predict_args, predict_op.rows, pw, false, stream);
            };
            upload_all(mem, plan, order_start);
            rows();
            grads();
            cudaCheck(cudaStreamSynchronize(stream));
            bool equal = f32_equal(mem, plan, order_stepped, Buf::params) &&
                         f32_equal(mem, plan, order_stepped, Buf::velocity) &&
                         f32_equal(mem, plan, order_stepped, Buf::grads);
            upload_all(mem, plan, order_stepped);
            predict();
            cudaCheck(cudaStreamSynchronize(stream));
            equal = equal && f32_equal(mem, plan, order_predicted, Buf::query_scores) &&
                    download<std::int64_t>(mem, plan, Buf::predictions) ==
                        order_predicted.i64[static_cast<int>(Buf::predictions)];
            all_equal = all_equal && equal;
            upload_all(mem, plan, order_start);
            const Micros rows_us = timer.us(rows), grads_us = timer.us(grads);
            const Micros step_us = timer.us([&] {
                rows();
                grads();
            });
            const Micros predict_us = timer.us(predict);
            std::printf("%-6d %-6s %7.2f/%7.2f %7.2f/%7.2f %7.2f/%7.2f %9.2f/%8.2f\n", lanes,
                        equal ? "equal" : "DIFFER", rows_us.min, rows_us.median, grads_us.min, grads_us.median,
                        step_us.min, step_us.median, predict_us.min, predict_us.median);
            best_order.offer(equal, step_us, std::to_string(lanes) + " lanes");
        }
        best_order.print("step's sum order", std::to_string(fused::kSumLanes) + " lanes");
        all_equal = gpu_orders_odd_batches(*prepared.inputs, shared_limit, stream) && all_equal;
        for (int lanes : model::kSumLaneCounts) {
            if (lanes == fused::kSumLanes) continue;  // the table below
            fused::StepArgs rows_args = rows_default;
            rows_args.sum_lanes = lanes;
            upload_all(mem, plan, start);
            std::printf("phases in %d lanes:\n", lanes);
            print_step_stamps(stamp_steps(rows_args, w, kStampedSteps, kStampReplays, stream), rows_args.depth,
                              rows_args.rows);
        }
    }
    // Where the default shapes' time goes: the clock at every phase barrier (bench/labs/phase_stamps.hpp).
    {
        upload_all(mem, plan, start);
        const bool w = fused::weights_fit(fused::rows_state_floats(rows_default.rows_per_block),
                                          rows_default.param_count, shared_limit);
        print_step_stamps(stamp_steps(rows_default, w, kStampedSteps, kStampReplays, stream), rows_default.depth,
                          rows_default.rows);
        const bool pw = fused::weights_fit(fused::predict_state_floats(predict_default.tile),
                                           predict_default.param_count, shared_limit);
        print_predict_stamps(stamp_predict(predict_default, predict_op.rows, pw, kStampReplays, stream),
                             predict_default.depth);
        print_couple_repeats(1, stream);  // once: its first pass fetches code the lab has not run
    }
    all_equal = gpu_clusters(plan, prepared, shared_limit, stream) && all_equal;
    if (energy_seconds > 0)
        print_step_energy(plan, mem, start, rows_default, grads_args, shared_limit, repeats, energy_seconds, stream);
    return all_equal;
}
#endif

}  // namespace
}  // namespace revgraph::bench

int main(int argc, char** argv) {
    // A line at a time into a log file too: a run stopped at its time limit keeps every table line
    // printed before the stop (fully buffered, up to the last 4 KB would be lost).
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    using namespace revgraph;
    // Default: rev88 (depth 2, batch 128, 2 epochs) on 600 synthetic train and 200 query images:
    // several full batches, a short last one, several predict tiles. --repeats=N for the timings.
    // --energy-seconds=S: also NVML energy by rows per block, S seconds of steps a shape (GPU only).
    int repeats = 50;
    double energy_seconds = 0;
    constexpr const char* kUsage = "usage: revgraph_kernel_lab [--repeats=N] [--energy-seconds=S]";
    const auto bad = [&](const char* what, const char* value) {
        std::fprintf(stderr, "revgraph_kernel_lab: error: %s, got '%s' (%s)\n", what, value, kUsage);
        return 2;
    };
    for (int i = 1; i < argc; ++i) {
        char* end = nullptr;
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("%s\n", kUsage);
            return 0;
        } else if (std::strncmp(argv[i], "--repeats=", 10) == 0) {
            const long v = std::strtol(argv[i] + 10, &end, 10);
            if (argv[i][10] == '\0' || *end != '\0' || v < 1 || v > 1000000)
                return bad("--repeats: expected an integer in 1..1000000", argv[i] + 10);
            repeats = static_cast<int>(v);
        } else if (std::strncmp(argv[i], "--energy-seconds=", 17) == 0) {
            const double v = std::strtod(argv[i] + 17, &end);
            if (argv[i][17] == '\0' || *end != '\0' || !(v > 0) || v > 3600)
                return bad("--energy-seconds: expected seconds above 0, at most 3600", argv[i] + 17);
            energy_seconds = v;
        } else {
            return bad("unknown option", argv[i]);
        }
    }
    try {
        const TaskConfig config;
        const data::TaskData d = data::synthetic_task(600, 200, 2026);
        const TaskInputs inputs{d.train_images, d.train_labels, d.test_images};
        const PreparedInputs prepared = prepare_inputs(inputs, config);
        cpu::Trainer<float> ref(prepared);
        ref.reset();
        ref.normalize();
        for (int e = 0; e < config.epochs; ++e) ref.epoch(e);
        ref.predict();
        const cuda::TaskPlan plan(config, inputs.train_count(), inputs.test_count(), cuda::Path::fused);
        bool ok = bench::cpu_lab(plan, prepared, ref);
        ok = bench::cpu_lanes(plan, prepared) && ok;
        ok = bench::cpu_clusters(plan, prepared, ref) && ok;
#if defined(REVGRAPH_HAVE_CUDA)
        if (cuda::device_count() > 0)
            ok = bench::gpu_lab(plan, prepared, repeats, energy_seconds) && ok;
        else
            std::printf("gpu: not run (%s)\n", cuda::describe_device().c_str());
#else
        (void)repeats, (void)energy_seconds;
        std::printf("gpu: not run (this build has no CUDA)\n");
#endif
        std::printf("revgraph_kernel_lab: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "revgraph_kernel_lab: error: %s\n", e.what());
        return 1;
    }
}
