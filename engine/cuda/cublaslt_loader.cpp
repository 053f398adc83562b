#include "engine/cuda/cublaslt_loader.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "engine/error.hpp"

namespace revgraph::cuda {
namespace {

struct Library {
    void* handle = nullptr;
    std::string path;     // the file that was loaded
    std::string problem;  // why none was, naming every place tried
};

// Where the runtime came from is where the toolkit's cuBLASLt lives, when the loader's own search
// (LD_LIBRARY_PATH, the ld.so cache) does not know it.
std::string cudart_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 || info.dli_fname == nullptr) return {};
    return std::filesystem::path(info.dli_fname).parent_path().string();
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// The path of the file behind a dlopen handle.
std::string loaded_path(void* handle, const std::string& fallback) {
    struct link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name)
        return map->l_name;
    return fallback;
}

const Library& library() {
    static const Library lib = [] {
        Library l;
        const std::string file = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
        const std::vector<std::string> home = {env("VIRTUAL_ENV"), "/opt/torch/.venv", "/usr/local", "/usr",
                                               env("HOME").empty() ? "" : env("HOME") + "/.local"};
        std::string tried;
        for (const std::string& candidate :
             cublaslt_candidates(file, env("REVGRAPH_CUBLASLT"), cudart_directory(), home)) {
            if ((l.handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
                l.path = loaded_path(l.handle, candidate);
                return l;
            }
            const char* why = dlerror();
            if (l.problem.empty()) l.problem = "cannot load " + file + ": " + (why ? why : "unknown reason");
            tried += (tried.empty() ? "" : ", ") + candidate;
        }
        l.problem += " (tried " + tried + ")";
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

std::vector<std::string> cublaslt_candidates(const std::string& file, const std::string& explicit_path,
                                             const std::string& cudart_dir, const std::vector<std::string>& homes) {
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    if (!explicit_path.empty()) return {explicit_path};  // asked for: that file or nothing
    out.push_back(file);                                 // the loader's own search
    if (!cudart_dir.empty()) out.push_back((fs::path(cudart_dir) / file).string());
    for (const char* dir : {"/usr/local/cuda/lib64/", "/usr/local/cuda/targets/x86_64-linux/lib/"})
        out.push_back(dir + file);
    // PyTorch's wheels bring cuBLASLt as a Python package (nvidia-cublas): lib/pythonX.Y/
    // {site,dist}-packages/nvidia/{cublas,cu13}/lib/ under a venv or prefix. Sorted, so the
    // order (and so the file chosen) does not depend on the directory listing's.
    for (const std::string& home : homes) {
        if (home.empty()) continue;
        std::error_code ec;
        std::vector<fs::path> pythons;
        for (const auto& entry : fs::directory_iterator(fs::path(home) / "lib", ec))
            if (entry.path().filename().string().rfind("python3", 0) == 0) pythons.push_back(entry.path());
        std::sort(pythons.begin(), pythons.end());
        for (const fs::path& py : pythons)
            for (const char* packages : {"site-packages", "dist-packages"})
                for (const std::string& sub : {std::string("cublas"), "cu" + std::to_string(CUBLAS_VER_MAJOR)}) {
                    const fs::path f = py / packages / "nvidia" / sub / "lib" / file;
                    if (fs::exists(f, ec)) out.push_back(f.string());
                }
    }
    return out;
}

std::string cublaslt_library_path() {
    const Library& lib = library();
    return lib.handle ? lib.path : "";
}

const std::vector<std::string>& cublaslt_entry_points() {
    static const std::vector<std::string> names = {"cublasLtCreate",
                                                   "cublasLtDestroy",
                                                   "cublasLtMatmul",
                                                   "cublasLtMatmulAlgoCapGetAttribute",
                                                   "cublasLtMatmulAlgoConfigGetAttribute",
                                                   "cublasLtMatmulAlgoGetHeuristic",
                                                   "cublasLtMatmulDescCreate",
                                                   "cublasLtMatmulDescDestroy",
                                                   "cublasLtMatmulDescSetAttribute",
                                                   "cublasLtMatmulPreferenceCreate",
                                                   "cublasLtMatmulPreferenceDestroy",
                                                   "cublasLtMatmulPreferenceSetAttribute",
                                                   "cublasLtMatrixLayoutCreate",
                                                   "cublasLtMatrixLayoutDestroy",
                                                   "cublasLtMatrixLayoutSetAttribute"};
    return names;
}

std::string cublaslt_load_problem() {
    try {
        for (const auto& name : cublaslt_entry_points()) (void)symbol(name.c_str());
    } catch (const Error& e) { return e.what(); }
    return {};
}

}  // namespace revgraph::cuda

// The forwarders: same names and signatures as cublasLt.h declares, resolved on first call.
#define RG_FORWARD(name, params, args)                                                               \
    extern "C" cublasStatus_t CUBLASWINAPI name params {                                             \
        static const auto fn = reinterpret_cast<decltype(&name)>(revgraph::cuda::symbol_for(#name)); \
        return fn args;                                                                              \
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
           (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspace_bytes,
            stream))
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
