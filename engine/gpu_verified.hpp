#pragma once
// Which GPU backends this build may pick by itself (`auto`): those that the newest gpu-check report
// under bench/results speaks for — passed, and current for the GPU path as it was built (what
// engine/cuda/ and graphs/ compile, tools/gpu_check/gpu_path.py) —
// fastest first by that report's median task time. Computed at build time by
// tools/gpu_check/verified.py (the same rule as `tools/gpu-check current`); a GPU path whose sources
// changed after its report is unverified again, and `auto` stays on the CPU. A GPU backend asked for
// by name runs whether verified or not.
#include <string>
#include <vector>

namespace revgraph {

struct GpuVerification {
    std::vector<std::string> backends;  // fastest first; empty where none is verified
    std::string report;                 // the report it was read from (relative to the source root), or ""
    std::string why;                    // the verdict, in one line
    std::string device;                 // the GPU the report ran on, "NVIDIA H200 (sm_90)", or ""
    std::string gpu_arch;               // this build's SM architectures, "90" ("" without CUDA)
};

// Every GPU run, passing or not, with what it measured (written by `tools/gpu-check index`), and how
// to make one: named by `revgraph backends` and README.md.
inline constexpr const char* kGpuResultsIndex = "bench/results/INDEX.md";
inline constexpr const char* kGpuCheckGuide = "docs/gpu.md";

const char* gpu_verified_tag();  // the build's line (engine/gpu_verified_tag.cpp.in)
// "<a,b>;<report>;<why>;<device>;<gpu_arch>" (tools/gpu_check/verified.py's line)
GpuVerification parse_gpu_verified(const std::string& tag);
const GpuVerification& gpu_verification();  // this build's, parsed once

}  // namespace revgraph
