#include "engine/backends.hpp"

#include "engine/cpu/fast_backend.hpp"
#include "engine/cpu/reference_backend.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/program.hpp"
#include "engine/error.hpp"
#include "engine/runtime_options.hpp"
#include "engine/version.hpp"
#if defined(REVGRAPH_HAVE_CUDA)
#include "engine/cuda/cublaslt_loader.hpp"
#include "engine/cuda/cuda_backend.hpp"
#endif

namespace revgraph {

std::vector<std::string> backend_names() { return {"auto", "cpu", "cpu-reference", "cuda", "cuda-fused"}; }

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return std::make_unique<cpu::FastBackend>();
    if (name == "cpu-reference") return std::make_unique<cpu::ReferenceBackend>();
    if (name == "cuda" || name == "cuda-fused" || name == "auto") {
        if (!cuda::compiled_in()) {
            if (name == "auto") return make_backend("cpu");
            throw Error("backend: " + name + " requested but this build has no CUDA (" + cuda::describe_device() + ")");
        }
        if (cuda::device_count() == 0) {
            if (name == "auto") return make_backend("cpu");
            throw Error("backend: " + name + " requested but " + cuda::describe_device());
        }
#if defined(REVGRAPH_HAVE_CUDA)
        return std::make_unique<cuda::CudaBackend>(name == "cuda-fused");
#else
        throw Error("backend: cuda requested but this build has no CUDA");
#endif
    }
    throw Error("backend: unknown backend '" + name + "' (expected auto, cpu, cpu-reference, cuda or cuda-fused)");
}

std::string backend_needs(const std::string& name) {
    const auto gpu = [](cuda::Path path) -> std::string {
        return cuda::path_uses_cublaslt(path)
                   ? "a CUDA build, an NVIDIA GPU and cuBLASLt (libcublasLt, loaded on first use)"
                   : "a CUDA build and an NVIDIA GPU (no cuBLASLt)";
    };
    if (name == "cpu" || name == "cpu-reference") return "nothing beyond this build";
    if (name == "cuda") return gpu(cuda::Path::cublaslt);
    if (name == "cuda-fused") return gpu(cuda::Path::fused);
    if (name == "auto") return "nothing: cuda where that is usable, else cpu";
    throw Error("backend: unknown backend '" + name + "'");
}

std::vector<BackendAvailability> backend_availability() {
    std::vector<BackendAvailability> out;
    for (const std::string& name : backend_names()) {
        BackendAvailability a;
        a.requested = name;
        a.needs = backend_needs(name);
        try {
            const std::unique_ptr<Backend> backend = make_backend(name);
            a.backend = backend->name();
            a.device = backend->device();
            a.usable = true;
#if defined(REVGRAPH_HAVE_CUDA)
            // A GPU backend is built whenever some device exists; the one asked for must too.
            const int device = Runtime::options().device;
            if (a.backend != "cpu" && a.backend != "cpu-reference" && device >= cuda::device_count())
                a.usable = false,
                a.reason = "backend: " + name + " requested but there is no CUDA device " + std::to_string(device);
            // Only the cuBLASLt path ("cuda", and "auto" on a GPU) needs the library; a missing one
            // would otherwise surface at the first prepare(). cuda-fused never loads it.
            if (a.usable && a.backend == "cuda-graphs") {
                const std::string problem = cuda::cublaslt_load_problem();
                if (!problem.empty()) a.usable = false, a.reason = "cuBLASLt: " + problem;
            }
#endif
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
        b["usable"] = a.usable;
        if (a.usable)
            b["backend"] = a.backend, b["device"] = a.device;
        else
            b["reason"] = a.reason;
        b["needs"] = a.needs;
        j["backends"].push_back(std::move(b));
    }
    return j;
}

}  // namespace revgraph
