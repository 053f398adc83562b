#include "engine/cuda/cublaslt_loader.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "engine/error.hpp"

namespace revgraph::cuda {
namespace {

struct Library {
    void* handle = nullptr;
    std::string problem;
};

// Where the runtime came from is where the toolkit's cuBLASLt lives, when the loader's own search
// (LD_LIBRARY_PATH, the ld.so cache) does not know it.
std::string beside_cudart(const std::string& file) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return {};
    return (std::filesystem::path(info.dli_fname).parent_path() / file).string();
}

const Library& library() {
    static const Library lib = [] {
        Library l;
        const std::string file = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
        for (const std::string& candidate : {file, beside_cudart(file), "/usr/local/cuda/lib64/" + file}) {
            if (candidate.empty()) continue;
            if ((l.handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) return l;
            const char* why = dlerror();
            if (l.problem.empty()) l.problem = "cannot load " + file + ": " + (why ? why : "unknown reason");
        }
        return l;
    }();
    return lib;
}

void* symbol(const char* name) {
    const Library& lib = library();
    if (lib.handle == nullptr) throw Error("cublasLt: " + lib.problem);
    void* p = dlsym(lib.handle, name);
    if (p == nullptr) throw Error(std::string("cublasLt: ") + name + " not found in the loaded library");
    return p;
}

}  // namespace

const std::vector<std::string>& cublaslt_entry_points() {
    static const std::vector<std::string> names = {
        "cublasLtCreate", "cublasLtDestroy", "cublasLtMatmul", "cublasLtMatmulAlgoCapGetAttribute",
        "cublasLtMatmulAlgoConfigGetAttribute", "cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmulDescCreate",
        "cublasLtMatmulDescDestroy", "cublasLtMatmulDescSetAttribute", "cublasLtMatmulPreferenceCreate",
        "cublasLtMatmulPreferenceDestroy", "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatrixLayoutCreate",
        "cublasLtMatrixLayoutDestroy", "cublasLtMatrixLayoutSetAttribute"};
    return names;
}

std::string cublaslt_load_problem() {
    try {
        for (const auto& name : cublaslt_entry_points()) (void)symbol(name.c_str());
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace revgraph::cuda

// The forwarders: same names and signatures as cublasLt.h declares, resolved on first call.
#define RG_FORWARD(name, params, args)                                                             \
    extern "C" cublasStatus_t CUBLASWINAPI name params {                                           \
        static const auto fn = reinterpret_cast<decltype(&name)>(revgraph::cuda::symbol_for(#name)); \
        return fn args;                                                                            \
    }

namespace revgraph::cuda {
void* symbol_for(const char* name);
void* symbol_for(const char* name) { return symbol(name); }
}  // namespace revgraph::cuda

RG_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
RG_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
RG_FORWARD(cublasLtMatmul,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
            cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
            cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
            void* workspace, size_t workspace_bytes, cudaStream_t stream),
           (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes, stream))
RG_FORWARD(cublasLtMatmulAlgoCapGetAttribute,
           (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoCapAttributes_t attr, void* buf, size_t size,
            size_t* written),
           (algo, attr, buf, size, written))
RG_FORWARD(cublasLtMatmulAlgoConfigGetAttribute,
           (const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf, size_t size,
            size_t* written),
           (algo, attr, buf, size, written))
RG_FORWARD(cublasLtMatmulAlgoGetHeuristic,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
            cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
            cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[], int* returned),
           (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))
RG_FORWARD(cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
           (desc, compute, scale))
RG_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
RG_FORWARD(cublasLtMatmulDescSetAttribute,
           (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
           (desc, attr, buf, size))
RG_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
RG_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
RG_FORWARD(cublasLtMatmulPreferenceSetAttribute,
           (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t size),
           (pref, attr, buf, size))
RG_FORWARD(cublasLtMatrixLayoutCreate,
           (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
           (layout, type, rows, cols, ld))
RG_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
RG_FORWARD(cublasLtMatrixLayoutSetAttribute,
           (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t size),
           (layout, attr, buf, size))
