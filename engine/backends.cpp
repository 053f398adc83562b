#include "engine/backends.hpp"

#include "engine/cpu/emulated_backend.hpp"
#include "engine/cpu/fast_backend.hpp"
#include "engine/cpu/reference_backend.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/task_plan.hpp"
#include "engine/error.hpp"
#include "engine/gpu_verified.hpp"
#include "engine/runtime_options.hpp"
#include "engine/version.hpp"
#include "engine/words.hpp"
#if defined(REVGRAPH_HAVE_CUDA)
#include "engine/cuda/cublaslt_loader.hpp"
#include "engine/cuda/cuda_backend.hpp"
#endif

namespace revgraph {
namespace {

std::string buildable_anywhere() { return ""; }

std::string no_cuda_device() {
    if (!cuda::compiled_in()) return "this build has no CUDA (" + cuda::describe_device() + ")";
    if (cuda::device_count() == 0) return cuda::describe_device();
    // A device this build has no kernels for (an A100 under the default -Dgpu_arch=90) is refused
    // here in one line, not at the first launch with the runtime's "no kernel image".
    return cuda::missing_device_code(Runtime::options().device);
}

std::unique_ptr<Backend> make_cuda([[maybe_unused]] bool fused) {
#if defined(REVGRAPH_HAVE_CUDA)
    return std::make_unique<cuda::CudaBackend>(fused);
#else
    throw Error("backend: cuda requested but this build has no CUDA");
#endif
}

std::string gpu_needs(cuda::Path path) {
    return cuda::path_uses_cublaslt(path)
               ? "a CUDA build, an NVIDIA GPU and cuBLASLt (libcublasLt, loaded on first use)"
               : "a CUDA build and an NVIDIA GPU (no cuBLASLt)";
}

// What `auto` builds: the fastest GPU backend this build's gpu-check verdict verifies
// (engine/gpu_verified.hpp) on the GPU its report ran on and that runs the task's width, else cpu.
std::string auto_pick(int width) {
    if (!no_cuda_device().empty()) return "cpu";
    // The report speaks for its GPU alone: another model, even of the same architecture, is unverified.
    if (cuda::describe_device(Runtime::options().device) != gpu_verification().device) return "cpu";
    for (const std::string& name : gpu_verification().backends)
        if (const BackendRow* row = find_backend(name);
            row && !row->alias && row->unbuildable().empty() && row->make()->runs_width(width))
            return name;
    return "cpu";
}

std::string auto_explained() {
    const GpuVerification& v = gpu_verification();
    if (v.backends.empty())
        return "cpu: no GPU backend has a passing gpu-check report current for this build (" + v.why + ")";
    std::string names;
    for (const std::string& b : v.backends) names += (names.empty() ? "" : ", then ") + b;
    return names + " on a " + v.device + " (verified there by " + v.report + ", at width 82), else cpu";
}

std::vector<BackendRow> make_table() {
    std::vector<BackendRow> rows;
    rows.push_back({"auto", auto_explained(), false, false, true,
                    "nothing: the fastest GPU backend with a passing gpu-check report current for this build, else cpu",
                    buildable_anywhere, [] { return make_backend(auto_pick(model::kFeatures)); }});
    rows.push_back({"cpu", "cpu", false, false, false, "nothing beyond this build", buildable_anywhere,
                    []() -> std::unique_ptr<Backend> { return std::make_unique<cpu::FastBackend>(); }});
    rows.push_back({"cpu-reference", "cpu-reference", false, false, false, "nothing beyond this build",
                    buildable_anywhere,
                    []() -> std::unique_ptr<Backend> { return std::make_unique<cpu::ReferenceBackend>(); }});
    rows.push_back({"cuda", "cuda", true, cuda::path_uses_cublaslt(cuda::Path::cublaslt), false,
                    gpu_needs(cuda::Path::cublaslt), no_cuda_device, [] { return make_cuda(false); },
                    []() -> std::unique_ptr<Backend> {
                        return std::make_unique<cpu::EmulatedCudaBackend>("cuda", cuda::Path::cublaslt);
                    }});
    rows.push_back({"cuda-fused", "cuda-fused", true, cuda::path_uses_cublaslt(cuda::Path::fused), false,
                    gpu_needs(cuda::Path::fused), no_cuda_device, [] { return make_cuda(true); },
                    []() -> std::unique_ptr<Backend> {
                        return std::make_unique<cpu::EmulatedCudaBackend>("cuda-fused", cuda::Path::fused);
                    }});
    return rows;
}

// Why a backend that was built for `requested` cannot run here: the device asked for does not
// exist, or the cuBLASLt it loads on first use is missing (else it would surface at the first prepare()).
std::string cannot_run(const BackendRow& built, const std::string& requested) {
    if (!built.gpu) return "";
    const int device = Runtime::options().device;
    if (device >= cuda::device_count())
        return "backend: " + requested + " requested but there is no CUDA device " + std::to_string(device);
#if defined(REVGRAPH_HAVE_CUDA)
    if (built.cublaslt) {
        const std::string problem = cuda::cublaslt_load_problem();
        if (!problem.empty()) return "cuBLASLt: " + problem;
    }
#endif
    return "";
}

}  // namespace

const std::vector<BackendRow>& backend_table() {
    static const std::vector<BackendRow> table = make_table();
    return table;
}

const BackendRow* find_backend(const std::string& requested) {
    for (const BackendRow& row : backend_table())
        if (row.requested == requested) return &row;
    return nullptr;
}

std::vector<std::string> backend_names() {
    std::vector<std::string> names;
    for (const BackendRow& row : backend_table()) names.push_back(row.requested);
    return names;
}

std::string backend_name_list() { return one_of(backend_names()); }

const BackendRow& backend_row(const std::string& name) {
    const BackendRow* row = find_backend(name);
    if (!row) throw Error("backend: unknown backend '" + name + "' (expected " + backend_name_list() + ")");
    return *row;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
    const BackendRow& row = backend_row(name);
    if (const std::string why = row.unbuildable(); !why.empty())
        throw Error("backend: " + name + " requested but " + why);
    return row.make();
}

std::unique_ptr<Backend> make_emulated_backend(const std::string& name, const std::string& what) {
    const BackendRow& row = backend_row(name);
    if (!row.emulate) {
        std::vector<std::string> gpu;  // the rows with a plan to emulate, as the table has them
        for (const BackendRow& r : backend_table())
            if (r.emulate) gpu.push_back(r.requested);
        throw Error("backend: " + what + " runs a GPU backend's launch plan on the CPU: the backend must be " +
                    one_of(gpu) + ", not " + name);
    }
    return row.emulate();
}

std::unique_ptr<Backend> make_backend(const std::string& name, const TaskConfig& config) {
    std::unique_ptr<Backend> backend = make_backend(name);
    if (find_backend(name)->alias && !backend->runs_width(config.width)) return make_backend(auto_pick(config.width));
    return backend;
}

void require_runs_width(const std::string& name, const TaskConfig& config) {
    if (const std::string why = width_refusal(*make_backend(name, config), config.width); !why.empty())
        throw Error(why);
}

std::vector<BackendAvailability> backend_availability() {
    std::vector<BackendAvailability> out;
    for (const BackendRow& row : backend_table()) {
        BackendAvailability a;
        a.requested = row.requested;
        a.gpu = row.gpu;
        a.needs = row.needs;
        try {
            const std::unique_ptr<Backend> backend = make_backend(row.requested);
            a.backend = backend->name();
            a.device = backend->device();
            const BackendRow* built = find_backend(a.backend);  // an alias's pick
            a.reason = built ? cannot_run(*built, row.requested) : "";
            a.usable = a.reason.empty();
        } catch (const Error& e) { a.reason = e.what(); }
        out.push_back(std::move(a));
    }
    return out;
}

nlohmann::ordered_json backend_availability_json(const std::vector<BackendAvailability>& all) {
    nlohmann::ordered_json j;
    j["version"] = version();
    j["git_commit"] = git_commit();
    j["backends"] = nlohmann::ordered_json::array();
    for (const auto& a : all) {
        nlohmann::ordered_json b;
        b["requested"] = a.requested;
        b["gpu"] = a.gpu;
        b["usable"] = a.usable;
        if (a.usable)
            b["backend"] = a.backend, b["device"] = a.device;
        else
            b["reason"] = a.reason;
        b["needs"] = a.needs;
        j["backends"].push_back(std::move(b));
    }
    // Why `auto` picks what it picks on a GPU: this build's gpu-check verdict.
    const GpuVerification& v = gpu_verification();
    j["gpu_verified"] = {{"backends", v.backends}, {"report", v.report},     {"why", v.why},
                         {"device", v.device},     {"gpu_arch", v.gpu_arch}, {"index", kGpuResultsIndex}};
    return j;
}

}  // namespace revgraph
