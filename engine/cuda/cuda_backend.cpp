#include "engine/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cuda_util/check.hpp"
#include "engine/cuda/cluster_tasks.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/executor.hpp"
#include "engine/cuda/kernels.hpp"
#include "engine/cuda/staged_inputs.hpp"
#include "engine/cuda_util/handles.hpp"
#include "engine/cuda_util/nvtx.hpp"
#include "engine/error.hpp"
#include "engine/runtime_options.hpp"
#include "graphs/task_graphs.hpp"

namespace revgraph::cuda {
namespace {

// A task's first touch of the GPU: selects the configured device and fixes the process-wide
// options (device, workspace, programmatic launch) from here on.
int initialise_device() {
    return Runtime::initialize([](const RuntimeOptions& o) { cudaCheck(cudaSetDevice(o.device)); }).device;
}

}  // namespace

// Members are declared in the order they are built, so they are destroyed in reverse: graphs and
// compiled launches before the matmuls they call, buffers before the stream, the stream (which
// synchronises first) last.
struct CudaBackend::Impl {
    int device;
    std::string device_name;
    Stream stream;
    Event start, stop;
    // The second stream of `cuda`'s products off the chain (GemmOp::beside), forked and joined by
    // events that only order (no timing); unused on the fused path, which has no products.
    Stream side_stream;
    Event fork{cudaEventDisableTiming}, join{cudaEventDisableTiming};
    TaskPlan plan;
    bool programmatic;  // fused kernels with Programmatic Dependent Launch: asked for, and sm_90+ code
    DeviceMemory memory;
    // The cuBLASLt handle and its workspaces exist only on the path with products: cuda-fused never
    // loads the library nor spends the workspace's device memory.
    std::unique_ptr<DeviceBuffer> workspace, side_workspace;
    std::unique_ptr<LtMatmuls> matmuls;
    CompiledProgram reset, normalize, predict;
    std::vector<CompiledProgram> epoch_start, steps;
    CompiledProgram epoch_body;  // what the epoch graph captures (TaskPlan::epoch_body)
    graphs::TaskGraphs graphs;
    bool has_run = false;
    // With clusters: the whole task's arguments for a launch group (every epoch from the resident
    // permutations, fitted to this device), and, on the group's first member, the group's arguments
    // (host copy kept alive until the next group's run, device copy read by the launch) and the
    // events that join the members' streams to the launch and back.
    std::optional<fused::EpochsArgs> whole_task;
    std::vector<fused::EpochsArgs> group_host_args;
    std::unique_ptr<DeviceBuffer> group_args;
    Event members_ready{cudaEventDisableTiming}, group_done{cudaEventDisableTiming};
    // Last, so destroyed first, also where the constructor throws after enqueueing work (a refused
    // launch in the warm-up, a failed upload), when no destructor body runs: both streams drained
    // before any buffer, workspace or argument copy above is freed.
    struct Drain {
        cudaStream_t main, side;
        ~Drain() {
            (void)cudaStreamSynchronize(side);
            (void)cudaStreamSynchronize(main);
        }
    } drain{stream.s, side_stream.s};

    Impl(const PreparedInputs& p, Path path)
        : device(initialise_device()),
          device_name(describe_device(device)),
          plan(p.config, p.inputs->train_count(), p.inputs->test_count(), path,
               Runtime::options().fused_cluster_blocks),
          programmatic(Runtime::options().programmatic_launch && path == Path::fused &&
                       (plan.any_width() ? kernels::fused_any_kernels_wait_programmatically()
                                         : kernels::fused_kernels_wait_programmatically())),
          memory(plan) {
        if (path_uses_cublaslt(path)) {
            const std::size_t bytes = Runtime::options().cublaslt_workspace_bytes;
            workspace = std::make_unique<DeviceBuffer>(bytes);
            side_workspace = std::make_unique<DeviceBuffer>(bytes);
            matmuls = std::make_unique<LtMatmuls>(workspace->get(), workspace->bytes());
            matmuls->add_side_workspace(side_workspace->get());
        }
        nvtxNameCudaStreamA(stream.s, "revgraph-cuda");
        nvtxNameCudaStreamA(side_stream.s, "revgraph-cuda-side");
        upload(p);
        const SideLane side{side_stream.s, fork.e, join.e};
        const auto build = [&](const Program& program) {
            return compile(plan, program, memory, matmuls.get(), programmatic, &side);
        };
        reset = build(plan.reset());
        normalize = build(plan.normalize());
        for (int e = 0; e < plan.config().epochs; ++e) epoch_start.push_back(build(plan.epoch_start(e)));
        for (std::size_t b = 0; b < plan.batches().size(); ++b) steps.push_back(build(plan.step(static_cast<int>(b))));
        predict = build(plan.predict());
        // graphs/ sees only launchers; the compiled programs they call stay here, alive as long as
        // the graphs, and also serve the eager step().
        const auto launcher = [](const CompiledProgram& program) {
            return [&program](cudaStream_t s) { program.launch(s); };
        };
        graphs::LaunchPlan launches{launcher(reset), launcher(normalize), {}, {}, launcher(predict)};
        for (const auto& start : epoch_start) launches.epoch_start.push_back(launcher(start));
        // The epoch graph is the plan's epoch body: the steps, cuda's with each SGD and the next
        // gather one launch, or with clusters one launch for them all; `steps` serve the eager
        // step(), with the same bits.
        epoch_body = build(plan.epoch_body());
        launches.steps.push_back(launcher(epoch_body));
        if (plan.cluster_blocks() != 0)
            whole_task = kernels::fit_fused_cluster(epochs_from_permutations(plan, memory, 0, plan.config().epochs),
                                                    plan.cluster_blocks());
        graphs = graphs::TaskGraphs(stream.s, launches, [this](cudaStream_t s) { clear_outputs(s); });
    }

    // Throws unless epochs first .. first+count-1 were captured: the one range check of the
    // backend's entry points, before anything is enqueued.
    void require_epochs(int first, int count) const {
        const int captured_epochs = graphs.captured_epochs();
        if (first >= 0 && count >= 0 && first + count <= captured_epochs) return;
        const std::string captured = " (" + std::to_string(captured_epochs) + " captured)";
        if (count < 0) throw Error("cuda: " + std::to_string(count) + " epochs asked");
        if (count == 1) throw Error("cuda: no epoch " + std::to_string(first) + captured);
        throw Error("cuda: epochs " + std::to_string(first) + " to " + std::to_string(first + count - 1) + " asked" +
                    captured);
    }

    // The body runs before the members' destructors (`drain` first), so they free on the task's own
    // device.
    ~Impl() { (void)cudaSetDevice(device); }

    // After the warm-up: every buffer the programs write back to zeros (inputs are never written),
    // so the captured graphs start from the state upload() left.
    void clear_outputs(cudaStream_t s) {
        for (int k = 0; k < kBufCount; ++k) {
            const Buf b = static_cast<Buf>(k);
            if (!buf_is_input(b) && memory.bytes(b) > 0)
                cudaCheck(cudaMemsetAsync(memory.base(b), 0, memory.bytes(b), s));
        }
    }

    void upload(const PreparedInputs& p) {
        // Every check and host copy first (the emulator's upload stages the same way): nothing is
        // enqueued until nothing more can throw, so no copy is left reading a host vector that an
        // exception frees.
        const StagedInputs in = stage_inputs(plan, p);
        // Every buffer starts as zeros, so a read-back before the first run is deterministic too.
        const cudaStream_t s = stream.s;
        for (int k = 0; k < kBufCount; ++k) memory.zero_async(static_cast<Buf>(k), s);
        memory.upload_async(Buf::initial, in.initial.data(), plan.bytes(Buf::initial), s);
        memory.upload_async(Buf::train_raw, in.train_raw.data(), plan.bytes(Buf::train_raw), s);
        memory.upload_async(Buf::query_raw, in.query_raw.data(), plan.bytes(Buf::query_raw), s);
        memory.upload_async(Buf::train_labels, in.train_labels.data(), plan.bytes(Buf::train_labels), s);
        memory.upload_async(Buf::permutations, in.permutations.data(), plan.bytes(Buf::permutations), s);
        // All on the task's own stream, then that stream alone waited for: the staged labels and
        // permutations live until here, and a cudaDeviceSynchronize would break a graph another
        // thread is capturing (a Python thread may prepare a task while another prepares its own).
        cudaCheck(cudaStreamSynchronize(s));
    }
};

CudaBackend::CudaBackend(bool fused) : fused_(fused) {}
CudaBackend::~CudaBackend() = default;

CudaBackend::Impl& CudaBackend::impl() const {
    if (!impl_) throw Error("cuda: backend used before prepare()");
    // The current device is per host thread, and a task prepared on one thread may be run, read
    // or destroyed from another (Python thread pools, run_together's callers): every entry point
    // comes through here and selects the task's own device first (cheap when it is current).
    cudaCheck(cudaSetDevice(impl_->device));
    return *impl_;
}

std::string CudaBackend::device() const {
    return impl_ ? impl_->device_name : describe_device(Runtime::options().device);
}

void CudaBackend::prepare(const PreparedInputs& prepared) {
    NVTX_RANGE("prepare");
    if (prepared.inputs == nullptr) throw Error("cuda: prepare() without inputs");
    impl_.reset();  // a second prepare() replaces the first task's state entirely
    impl_ = std::make_unique<Impl>(prepared, fused_ ? Path::fused : Path::cublaslt);
}

void CudaBackend::run(int epochs, const EpochHook& after_epoch) {
    Impl& im = impl();
    im.require_epochs(0, epochs);  // before anything is enqueued
    NVTX_RANGE("run");
    im.has_run = false;  // a run that fails halfway must not pair its start with an older stop
    cudaCheck(cudaEventRecord(im.start.e, im.stream.s));
    Backend::run(epochs, after_epoch);  // reset, normalise, each epoch, predict: each a graph launch
    cudaCheck(cudaEventRecord(im.stop.e, im.stream.s));
    im.has_run = true;
}

void CudaBackend::reset() {
    NVTX_RANGE("reset");
    impl().graphs.reset(impl().stream.s);
}

void CudaBackend::normalize() {
    NVTX_RANGE("normalize");
    impl().graphs.normalize(impl().stream.s);
}

void CudaBackend::epoch(int e) {
    NVTX_RANGE("epoch");
    Impl& im = impl();
    im.require_epochs(e, 1);
    im.graphs.epoch(im.stream.s, e);
}

void CudaBackend::predict() {
    NVTX_RANGE("predict");
    impl().graphs.predict(impl().stream.s);
}

// Eager, for step-by-step comparison: the very launches the graphs captured, outside any graph.
void CudaBackend::step(int e, int b) {
    NVTX_RANGE("step");
    Impl& im = impl();
    im.require_epochs(e, 1);
    if (b < 0 || b >= static_cast<int>(im.steps.size())) throw Error("cuda: no batch " + std::to_string(b));
    im.epoch_start[static_cast<std::size_t>(e)].launch(im.stream.s);
    im.steps[static_cast<std::size_t>(b)].launch(im.stream.s);
}

// The program's stream alone: the second stream's work always rejoins it, on a throw too
// (CompiledProgram::launch).
void CudaBackend::synchronize() { cudaCheck(cudaStreamSynchronize(impl().stream.s)); }

std::string CudaBackend::launch_group() const {
    if (!impl_ || !impl_->whole_task) return {};
    return "cuda-fused on GPU " + std::to_string(impl_->device) + ": " +
           launch_group_key(*impl_->whole_task, impl_->plan.cluster_blocks());
}

void CudaBackend::run_group(const std::vector<Backend*>& members) {
    const std::vector<CudaBackend*> group = launch_group_members(*this, members);
    Impl& lead = impl();
    NVTX_RANGE("run_group");
    // The arguments first, outside every member's events: the previous group's launch done with
    // them, then a copy ordered on the lead's stream (the host copy lives until the next group).
    cudaCheck(cudaStreamSynchronize(lead.stream.s));
    lead.group_host_args.clear();
    for (CudaBackend* m : group) lead.group_host_args.push_back(*m->impl().whole_task);
    const std::size_t bytes = lead.group_host_args.size() * sizeof(fused::EpochsArgs);
    // Grown, never shrunk: a cudaMalloc or cudaFree may wait for the device, and run_together may
    // have other tasks' work queued already.
    if (!lead.group_args || lead.group_args->bytes() < bytes) lead.group_args = std::make_unique<DeviceBuffer>(bytes);
    cudaCheck(cudaMemcpyAsync(lead.group_args->get(), lead.group_host_args.data(), bytes, cudaMemcpyHostToDevice,
                              lead.stream.s));
    // Each member: its start, reset and normalise on its own stream; the launch waits for them all.
    for (CudaBackend* m : group) {
        Impl& im = m->impl();
        im.has_run = false;
        cudaCheck(cudaEventRecord(im.start.e, im.stream.s));
        im.graphs.reset(im.stream.s);
        im.graphs.normalize(im.stream.s);
        if (&im != &lead) {
            cudaCheck(cudaEventRecord(im.members_ready.e, im.stream.s));
            cudaCheck(cudaStreamWaitEvent(lead.stream.s, im.members_ready.e));
        }
    }
    kernels::launch_fused_cluster(lead.group_host_args.front(), lead.plan.cluster_blocks(),
                                  static_cast<int>(group.size()),
                                  static_cast<const fused::EpochsArgs*>(lead.group_args->get()), lead.stream.s);
    cudaCheck(cudaEventRecord(lead.group_done.e, lead.stream.s));
    // Every member's stream waits for the launch before any member's predictions go: were a wait
    // made beside the predictions and one of those throw, the members after it would be left
    // unordered after a kernel still writing their parameters (a later read_state() or run() would
    // race with it).
    for (CudaBackend* m : group)
        if (&m->impl() != &lead) cudaCheck(cudaStreamWaitEvent(m->impl().stream.s, lead.group_done.e));
    // Then each member's predictions on its own stream, and its stop.
    for (CudaBackend* m : group) {
        Impl& im = m->impl();
        im.graphs.predict(im.stream.s);
        cudaCheck(cudaEventRecord(im.stop.e, im.stream.s));
        im.has_run = true;
    }
}

TaskState CudaBackend::read_state() {
    Impl& im = impl();
    synchronize();
    TaskState s;
    s.parameters.resize(im.plan.elements(Buf::params));
    s.velocity.resize(im.plan.elements(Buf::velocity));
    s.gradients.resize(im.plan.elements(Buf::grads));
    s.scores.resize(im.plan.elements(Buf::query_scores));
    s.predictions.resize(im.plan.elements(Buf::predictions));
    im.memory.download(Buf::params, s.parameters.data(), im.plan.bytes(Buf::params));
    im.memory.download(Buf::velocity, s.velocity.data(), im.plan.bytes(Buf::velocity));
    im.memory.download(Buf::grads, s.gradients.data(), im.plan.bytes(Buf::grads));
    im.memory.download(Buf::query_scores, s.scores.data(), im.plan.bytes(Buf::query_scores));
    im.memory.download(Buf::predictions, s.predictions.data(), im.plan.bytes(Buf::predictions));
    return s;
}

std::size_t CudaBackend::retained_core_bytes() const {
    // The real allocation of the one state the forward hands to the backward.
    return impl_ ? impl_->memory.bytes(Buf::state) : 0;
}

std::optional<double> CudaBackend::last_run_device_seconds() const {
    if (!impl_ || !impl_->has_run) return std::nullopt;
    cudaCheck(cudaEventSynchronize(impl_->stop.e));
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, impl_->start.e, impl_->stop.e));
    return static_cast<double>(ms) * 1e-3;
}

nlohmann::ordered_json CudaBackend::diagnostics() const {
    const Impl& im = impl();
    nlohmann::ordered_json j;
    j["backend"] = name();
    j["device"] = im.device_name;
    // Two workspaces of the configured size on the path with products: the chain's and the second stream's.
    const std::size_t workspace_bytes = im.workspace ? im.workspace->bytes() : 0;
    j["cublaslt_workspace_bytes"] = workspace_bytes;
    j["cublaslt_workspaces"] = im.workspace ? 2 : 0;
    j["device_bytes"] = im.memory.total_bytes() + 2 * workspace_bytes;
    j["retained_core_bytes"] = im.memory.bytes(Buf::state);
    const auto counts = [](const CompiledProgram& p) {
        nlohmann::ordered_json c;
        c["matmuls"] = p.counts.gemms;
        c["kernels"] = p.counts.kernels;
        c["copies"] = p.counts.copies;
        c["launches"] = p.counts.launches();
        return c;
    };
    j["path"] = path_name(im.plan.path());
    // A step alone (the eager step()'s programs), and what the epoch graph runs: the steps, on `cuda`
    // with each SGD and the next gather one launch (B - 1 fewer), or with clusters one launch.
    j["launches_per_step"] = {{"first_batch", counts(im.steps.front())}, {"last_batch", counts(im.steps.back())}};
    j["launches_per_epoch"] = counts(im.epoch_body);
    j["programmatic_dependent_launch"] = im.programmatic;
    // 0: two kernels a step; else each epoch one launch of a cluster.
    j["cluster_blocks"] = im.plan.cluster_blocks();
    // Tasks that share this text train together in one launch (run_together); "" where none.
    j["launch_group"] = launch_group();
    const bool cluster = im.plan.cluster_blocks() != 0;
    if (im.plan.path() == Path::fused) {
        const CompiledProgram& training = cluster ? im.epoch_body : im.steps.front();
        j["fused_weights_in_shared_memory"] = {{"step", static_cast<bool>(training.fused_weights_shared.at(0))},
                                               {"predict", static_cast<bool>(im.predict.fused_weights_shared.at(0))}};
    }
    j["graph_nodes"] = im.graphs.nodes();
    j["matmul_shapes"] = im.matmuls ? im.matmuls->describe() : nlohmann::ordered_json::array();
    // Strided batches the library had no deterministic algorithm for, run product by product
    // (each adds batch-1 launches to the counts above).
    j["matmul_batches_split"] = im.matmuls ? im.matmuls->split_batches() : 0;
    // Products cuBLASLt had no deterministic FP32 algorithm for at all, on the hand-written kernel.
    j["matmuls_on_hand_kernel"] =
        im.matmuls ? nlohmann::ordered_json(im.matmuls->hand_kernel_products()) : nlohmann::ordered_json::array();
    return j;
}

}  // namespace revgraph::cuda
