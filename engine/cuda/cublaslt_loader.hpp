#pragma once
// cuBLASLt is loaded on first use, not at process start. Linking it costs every process of a
// CUDA build ~0.4 s of library initialisation (540 MB), even a CPU run or `--help`; so
// cublaslt_loader.cpp defines the handful of cublasLt* entry points revgraph calls as forwarders
// that dlopen the library the first time one of them is called.
#include <string>
#include <vector>

namespace revgraph::cuda {

// The cublasLt functions revgraph calls (each is forwarded by cublaslt_loader.cpp).
const std::vector<std::string>& cublaslt_entry_points();

// Where the library is looked for, in order: `explicit_path` alone where given (REVGRAPH_CUBLASLT);
// else `file` through the loader's own search, beside the CUDA runtime in use (`cudart_dir`), the
// toolkit's usual folders, and PyTorch's CUDA libraries (the nvidia-cublas Python package) under
// each of `homes` (venvs and prefixes: lib/python3*/{site,dist}-packages/nvidia/{cublas,cu13}/lib),
// those only where the file exists. Pure, so tests can point it at a made-up tree.
std::vector<std::string> cublaslt_candidates(const std::string& file, const std::string& explicit_path,
                                             const std::string& cudart_dir, const std::vector<std::string>& homes);

// The file that was loaded ("" where none could be); loads it if nothing has yet.
std::string cublaslt_library_path();

// Loads the library (once) and resolves every entry point; returns "" on success, else why not.
// Needs no GPU: tests use it to check the forwarding on machines without one.
std::string cublaslt_load_problem();

}  // namespace revgraph::cuda
