// Stand-ins for engine/cuda/device.hpp in a build without CUDA (-Dcuda=disabled). Kept outside
// engine/cuda/ on purpose: the GPU path (tools/gpu_check/gpu_path.py) is what a CUDA build compiles
// there, and this file is compiled only where none is.
#include "engine/cuda/device.hpp"

namespace revgraph::cuda {

bool compiled_in() { return false; }
int device_count() { return 0; }
std::string describe_device(int) { return "CUDA not built (meson -Dcuda=disabled or no nvcc)"; }
std::string missing_device_code(int) { return ""; }

}  // namespace revgraph::cuda
