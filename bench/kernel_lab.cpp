// revgraph_kernel_lab: the fused step's kernels at several launch shapes, each checked against the
// CPU, and timed where there is a GPU (in the spirit of llm.c's dev/cuda).
//
// What varies: threads per block of the rows, grads and predict kernels (up to each kernel's launch
// bound), and where a block stages the parameters (copied to shared memory, or read from global
// memory). Rows per block (fused::kRowsPerBlock) and the predict tile are compile-time constants
// of engine/cuda/fused.hpp and do not vary here.
//
// CPU (every build, a meson test): the whole task on the fused plan's CPU emulator (the kernels'
// own code, block by block, phase by phase), with the parameters staged and not, items in order and
// last to first, must end in the float reference trainer's bits (parameters, momentum, scores,
// predictions). GPU (CUDA build with a device): from the emulator's state at the start of an
// epoch, one step (rows + grads kernels) and the prediction at each launch shape must give the
// emulator's bits for that step; then the step and the prediction are timed at each shape.
// Exit 0 only when every check holds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/trainer.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/emulator.hpp"
#include "engine/data/synthetic.hpp"
#include "engine/task.hpp"
#if defined(REVGRAPH_HAVE_CUDA)
#include <cuda_runtime.h>

#include "engine/cuda/check.cuh"
#include "engine/cuda/executor.hpp"
#include "engine/cuda/kernels.hpp"
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

// The whole task on the emulator; true when it ends in the reference's bits.
bool emulated_task_matches(const cuda::TaskPlan& plan, const PreparedInputs& prepared, cpu::Trainer<float>& ref,
                           std::size_t shared_bytes, bool reverse) {
    cuda::Emulator emu(plan, shared_bytes);
    emu.set_reverse_order(reverse);
    emu.upload(prepared);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    for (int e = 0; e < plan.config().epochs; ++e) emu.execute(plan.epoch(e));
    emu.execute(plan.predict());
    return emu.f32(Buf::params) == ref.parameters() && emu.f32(Buf::velocity) == ref.velocity() &&
           emu.f32(Buf::query_scores) == ref.scores() && emu.i64(Buf::predictions) == ref.predictions();
}

#if defined(REVGRAPH_HAVE_CUDA)
struct Launch {
    unsigned int rows_threads, grads_threads, predict_threads;
    bool staged;  // parameters copied to shared memory (where they fit)
};

void upload_all(const cuda::DeviceMemory& mem, const cuda::TaskPlan& plan, const Snapshot& s) {
    for (int k = 0; k < cuda::kBufCount; ++k) {
        const Buf b = static_cast<Buf>(k);
        if (plan.bytes(b) == 0) continue;
        const void* src = cuda::buf_elem(b) == cuda::Elem::f32   ? static_cast<const void*>(s.f32[k].data())
                          : cuda::buf_elem(b) == cuda::Elem::i32 ? static_cast<const void*>(s.i32[k].data())
                                                                 : static_cast<const void*>(s.i64[k].data());
        cudaCheck(cudaMemcpy(mem.base(b), src, plan.bytes(b), cudaMemcpyHostToDevice));
    }
}

template <class T>
std::vector<T> download(const cuda::DeviceMemory& mem, const cuda::TaskPlan& plan, Buf b) {
    std::vector<T> out(plan.elements(b));
    cudaCheck(cudaMemcpy(out.data(), mem.base(b), plan.bytes(b), cudaMemcpyDeviceToHost));
    return out;
}

// One step (batch 0 of epoch 0) and the prediction on the GPU at each launch shape: checked against
// the emulator's step, then timed. Returns false when a shape gives other bits.
bool gpu_lab(const cuda::TaskPlan& plan, const PreparedInputs& prepared, int repeats) {
    const std::size_t shared_limit = cuda::kernels::prepare_fused_kernels();
    cuda::Emulator emu(plan, shared_limit);
    emu.upload(prepared);
    emu.execute(plan.reset());
    emu.execute(plan.normalize());
    emu.execute(plan.epoch_start(0));
    const Snapshot start(emu);
    emu.execute(plan.step(0));
    emu.execute(plan.predict());
    const Snapshot expect(emu);

    const cuda::DeviceMemory mem(plan);
    const cuda::Program step = plan.step(0), predict = plan.predict();
    const auto& rows_op = std::get<cuda::FusedStepOp>(step.at(0));
    const auto& predict_op = std::get<cuda::FusedPredictOp>(predict.at(0));
    const fused::StepArgs rows_args = cuda::ops::resolve(rows_op, mem);
    const fused::StepArgs grads_args = cuda::ops::resolve(std::get<cuda::FusedStepOp>(step.at(1)), mem);
    const fused::PredictArgs predict_args = cuda::ops::resolve(predict_op, mem);
    cudaStream_t stream = nullptr;
    cudaEvent_t t0 = nullptr, t1 = nullptr;
    cudaCheck(cudaStreamCreate(&stream));
    cudaCheck(cudaEventCreate(&t0));
    cudaCheck(cudaEventCreate(&t1));
    const auto timed = [&](auto&& launch) {
        cudaCheck(cudaEventRecord(t0, stream));
        for (int i = 0; i < repeats; ++i) launch();
        cudaCheck(cudaEventRecord(t1, stream));
        cudaCheck(cudaEventSynchronize(t1));
        float ms = 0;
        cudaCheck(cudaEventElapsedTime(&ms, t0, t1));
        return 1e3 * static_cast<double>(ms) / repeats;
    };

    bool all_equal = true;
    std::printf("gpu: %s, %d-row step, %lld query rows, shared limit %zu bytes\n", cuda::describe_device().c_str(),
                rows_op.rows, static_cast<long long>(predict_op.rows), shared_limit);
    std::printf("%-8s %-8s %-8s %-7s %-6s %12s %12s\n", "rows_thr", "grads_th", "pred_thr", "staged", "bits", "step_us",
                "predict_us");
    for (unsigned int rt : {64u, 128u, static_cast<unsigned int>(fused::kRowsThreads)})
        for (unsigned int gt : {64u, 128u, static_cast<unsigned int>(fused::kGradsThreads)})
            for (unsigned int pt : {64u, 128u, static_cast<unsigned int>(fused::kPredictThreads)})
                for (bool staged : {true, false}) {
                    const Launch l{rt, gt, pt, staged};
                    const bool rows_w =
                        l.staged && fused::weights_fit(fused::kRowsStateFloats, rows_args.param_count, shared_limit);
                    const bool pred_w = l.staged && fused::weights_fit(fused::kPredictStateFloats,
                                                                       predict_args.param_count, shared_limit);
                    upload_all(mem, plan, start);
                    cuda::kernels::launch_fused_rows(rows_args, rows_w, false, stream, l.rows_threads);
                    cuda::kernels::launch_fused_grads(grads_args, false, stream, l.grads_threads);
                    cuda::kernels::launch_fused_predict(predict_args, predict_op.rows, pred_w, false, stream,
                                                        l.predict_threads);
                    cudaCheck(cudaStreamSynchronize(stream));
                    const bool equal =
                        download<float>(mem, plan, Buf::params) == expect.f32[static_cast<int>(Buf::params)] &&
                        download<float>(mem, plan, Buf::velocity) == expect.f32[static_cast<int>(Buf::velocity)] &&
                        download<float>(mem, plan, Buf::query_scores) ==
                            expect.f32[static_cast<int>(Buf::query_scores)] &&
                        download<std::int64_t>(mem, plan, Buf::predictions) ==
                            expect.i64[static_cast<int>(Buf::predictions)];
                    all_equal = all_equal && equal;
                    const double step_us = timed([&] {
                        cuda::kernels::launch_fused_rows(rows_args, rows_w, false, stream, l.rows_threads);
                        cuda::kernels::launch_fused_grads(grads_args, false, stream, l.grads_threads);
                    });
                    const double predict_us = timed([&] {
                        cuda::kernels::launch_fused_predict(predict_args, predict_op.rows, pred_w, false, stream,
                                                            l.predict_threads);
                    });
                    std::printf("%-8u %-8u %-8u %-7s %-6s %12.2f %12.2f\n", l.rows_threads, l.grads_threads,
                                l.predict_threads, staged ? "yes" : "no", equal ? "equal" : "DIFFER", step_us,
                                predict_us);
                }
    (void)cudaEventDestroy(t0);
    (void)cudaEventDestroy(t1);
    (void)cudaStreamDestroy(stream);
    return all_equal;
}
#endif

}  // namespace
}  // namespace revgraph::bench

int main(int argc, char** argv) {
    using namespace revgraph;
    // Default: rev88 (depth 2, batch 128, 2 epochs) on 600 synthetic train and 200 query images:
    // several full batches, a short last one, several predict tiles. --repeats=N for the timings.
    int repeats = 50;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--repeats=", 10) == 0 && std::atoi(argv[i] + 10) > 0) {
            repeats = std::atoi(argv[i] + 10);
        } else {
            std::fprintf(stderr, "revgraph_kernel_lab: error: unknown option '%s' (usage: [--repeats=N])\n", argv[i]);
            return 2;
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
        bool ok = true;
        for (std::size_t shared : {cuda::kEmulatedSharedBytes, std::size_t{0}})
            for (bool reverse : {false, true}) {
                const bool equal = bench::emulated_task_matches(plan, prepared, ref, shared, reverse);
                std::printf("cpu: fused emulator, parameters %s, items %s: %s the float reference's bits\n",
                            shared ? "staged in shared memory" : "read from global memory",
                            reverse ? "last to first" : "in order", equal ? "equal to" : "DIFFER from");
                ok = ok && equal;
            }
#if defined(REVGRAPH_HAVE_CUDA)
        if (cuda::device_count() > 0)
            ok = bench::gpu_lab(plan, prepared, repeats) && ok;
        else
            std::printf("gpu: not run (%s)\n", cuda::describe_device().c_str());
#else
        (void)repeats;
        std::printf("gpu: not run (this build has no CUDA)\n");
#endif
        std::printf("revgraph_kernel_lab: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "revgraph_kernel_lab: error: %s\n", e.what());
        return 1;
    }
}
