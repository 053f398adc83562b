#pragma once
// The two texts an exported entry is made of, written into the build by engine/export/kernel_text.py
// from the engine's own sources: the CUDA that NVRTC compiles (engine/cuda/fused_any/kernels.cuh and
// what it includes) and the Python around it (engine/export/entry.py.in).
namespace revgraph::exporter {

const char* kernel_text();
const char* entry_template();

}  // namespace revgraph::exporter
