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

// Loads the library (once) and resolves every entry point; returns "" on success, else why not.
// Needs no GPU: tests use it to check the forwarding on machines without one.
std::string cublaslt_load_problem();

}  // namespace revgraph::cuda
