#pragma once
// Backend names a user can ask for, and the factory behind `--backend`.
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.hpp"

namespace revgraph {

// "cpu" (the fast CPU backend where built, else the reference), "cpu-reference", "cuda" (cuBLASLt
// products), "cuda-fused" (two fused kernels per SGD step),
// "auto" (cuda where a GPU is usable, else cpu). Unknown or unavailable names throw Error.
std::unique_ptr<Backend> make_backend(const std::string& name);
std::vector<std::string> backend_names();

}  // namespace revgraph
