#pragma once
// Host-side questions about the GPU that any code may ask, CUDA build or not.
#include <string>
#include <vector>

namespace revgraph::cuda {

// Whether this build contains the CUDA backend at all.
bool compiled_in();

// Number of usable devices; 0 where there is no driver or no GPU (never throws), and in a child of
// fork() whose parent had initialised CUDA (describe_device says so).
int device_count();

// "NVIDIA H200 (sm_90)", or a reason there is none ("no NVIDIA driver (libcuda.so.1 not found)",
// "no usable CUDA device: <the runtime's words>", "CUDA not built", kForkedAfterInit).
std::string describe_device(int ordinal = 0);
// A forked child's reason: its parent had initialised CUDA, which a child of fork() cannot use.
extern const char* const kForkedAfterInit;

// Why device `ordinal` cannot run this build's kernels, in words that end with the rebuild that
// fixes it (an A100 under the default -Dgpu_arch=90: "this build has device code for sm_90, not
// for NVIDIA A100-SXM4-40GB (sm_80): rebuild with -Dgpu_arch=80,90"); "" where it can, or where
// there is no such device (describe_device says that). Reads device attributes only: no context.
std::string missing_device_code(int ordinal = 0);

// The rule behind it, for a device of compute capability `device_arch` (80 for sm_80) and a build
// with machine code for each of `built_archs` and PTX for the highest (meson.build's gencode):
// machine code runs on its own major version at that minor or above (sm_80's on an sm_86), and the
// driver compiles the PTX for any newer device at load. `device_words` names the device.
// A device older than kOldestBuildableArch is named as such: no rebuild gives it code.
std::string device_code_gap(int device_arch, const std::vector<int>& built_archs, const std::string& device_words);
// The oldest architecture `-Dgpu_arch` offers (meson_options.txt's choices: what nvcc 13 builds).
inline constexpr int kOldestBuildableArch = 75;

}  // namespace revgraph::cuda
