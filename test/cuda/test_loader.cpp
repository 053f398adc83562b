// cuBLASLt is dlopen'd on first use rather than linked (engine/cuda/cublaslt_loader.hpp). The
// library is part of the toolkit, so this runs on machines without a GPU: every forwarded entry
// point must resolve, and the binary must not have cuBLASLt among its direct dependencies.
#include <doctest/doctest.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <cublasLt.h>

#include "engine/cuda/cublaslt_loader.hpp"

TEST_CASE("cublasLt: every entry point revgraph calls resolves in the toolkit's library") {
    CHECK(revgraph::cuda::cublaslt_entry_points().size() == 15);
    CHECK(revgraph::cuda::cublaslt_load_problem() == "");
}

TEST_CASE("cublasLt: looked for in the toolkit, then beside PyTorch's CUDA libraries") {
    namespace fs = std::filesystem;
    using revgraph::cuda::cublaslt_candidates;
    const std::string file = "libcublasLt.so.13";
    // A made-up venv holding PyTorch's nvidia-cublas package, and a prefix holding none.
    const fs::path root = fs::temp_directory_path() / ("revgraph-loader-" + std::to_string(::getpid()));
    fs::remove_all(root);
    const fs::path wheel = root / "venv/lib/python3.12/site-packages/nvidia/cu13/lib";
    fs::create_directories(wheel);
    fs::create_directories(root / "prefix/lib/python3.11/dist-packages");
    std::ofstream(wheel / file) << "not a library";
    const auto found =
        cublaslt_candidates(file, "", "/opt/cudart", {(root / "prefix").string(), (root / "venv").string()});
    REQUIRE(found.size() == 5);
    CHECK(found[0] == file);  // the loader's own search first
    CHECK(found[1] == "/opt/cudart/" + file);
    CHECK(found[2] == "/usr/local/cuda/lib64/" + file);
    CHECK(found[4] == (wheel / file).string());  // PyTorch's copy last, and only where it exists
    // An explicit REVGRAPH_CUBLASLT is the only place tried.
    CHECK(cublaslt_candidates(file, "/x/libcublasLt.so.13", "/opt/cudart", {(root / "venv").string()}) ==
          std::vector<std::string>{"/x/libcublasLt.so.13"});
    fs::remove_all(root);
}

TEST_CASE("cublasLt: the loaded file is reported") {
    const std::string path = revgraph::cuda::cublaslt_library_path();
    CHECK(path.find("libcublasLt.so") != std::string::npos);
    CHECK(std::filesystem::exists(path));
}

TEST_CASE("cublasLt: a forwarded call reaches the library (descriptors need no GPU)") {
    cublasLtMatrixLayout_t layout = nullptr;
    REQUIRE(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 41, 128, 82) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasLtMatrixLayoutDestroy(layout) == CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("cublasLt: not linked, so a process does not pay its initialisation at start-up") {
    // Before the first cublasLt call nothing has loaded it; the check above ran in this process
    // only if doctest ordered it first, so look for a link-time dependency instead.
    bool linked = false;
    for (const ElfW(Dyn)* d = _DYNAMIC; d->d_tag != DT_NULL; ++d)
        if (d->d_tag == DT_NEEDED) {
            // DT_NEEDED values are offsets into the string table; find it through DT_STRTAB.
            const char* strtab = nullptr;
            for (const ElfW(Dyn)* s = _DYNAMIC; s->d_tag != DT_NULL; ++s)
                if (s->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(s->d_un.d_ptr);
            REQUIRE(strtab != nullptr);
            linked = linked || std::string(strtab + d->d_un.d_val).find("cublasLt") != std::string::npos;
        }
    CHECK_FALSE(linked);
}
