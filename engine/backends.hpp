#pragma once
// Backend names a user can ask for, and the factory behind `--backend`.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.hpp"

namespace revgraph {

// "cpu" (the fast CPU backend where built, else the reference), "cpu-reference", "cuda" (cuBLASLt
// products), "cuda-fused" (two fused kernels per SGD step),
// "auto" (cuda where a GPU is usable, else cpu). Unknown or unavailable names throw Error.
std::unique_ptr<Backend> make_backend(const std::string& name);
std::vector<std::string> backend_names();

// Whether a backend name can be used in this process, and why not: what `revgraph backends`
// prints, so that a user can see why `auto` chose what it chose. Touches no GPU state beyond
// counting devices (and, where the cuBLASLt path would run, loading cuBLASLt), so GPU options
// can still be set later.
struct BackendAvailability {
    std::string requested;  // the name asked for: "cpu", "cuda-fused", ...
    bool usable = false;
    std::string backend;  // Backend::name() of what it builds, e.g. "cuda-graphs"
    std::string device;   // Backend::device() where usable
    std::string reason;   // why not, where not usable
    std::string needs;    // what the name needs to be usable, usable or not (backend_needs)
};
// What a backend name needs from the build and the machine, in words: the GPU names say whether
// cuBLASLt is among it (cuda::path_uses_cublaslt, so cuda-fused does not). Unknown names throw Error.
std::string backend_needs(const std::string& name);
std::vector<BackendAvailability> backend_availability();  // every name of backend_names(), in order

// `revgraph backends --json` (and Python's revgraph.backends()): version, git_commit, and one object
// per name (requested, usable, backend and device or reason, needs).
nlohmann::ordered_json backend_availability_json(const std::vector<BackendAvailability>& all);

}  // namespace revgraph
