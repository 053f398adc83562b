#pragma once
// Host-side questions about the GPU that any code may ask, CUDA build or not.
#include <string>

namespace revgraph::cuda {

// Whether this build contains the CUDA backend at all.
bool compiled_in();

// Number of usable devices; 0 where there is no driver or no GPU (never throws).
int device_count();

// "NVIDIA H200 (sm_90)", or a reason there is none ("no NVIDIA driver (libcuda.so.1 not found)",
// "no usable CUDA device: <the runtime's words>", "CUDA not built").
std::string describe_device(int ordinal = 0);

}  // namespace revgraph::cuda
