#pragma once
// An L2 flush for timing a task that finds none of its data in L2, as one task per process would
// (the group's GPU board times both ways). CUDA builds only: bench/harness/gpu_hooks.cu (revgraph_bench
// --flush-l2, --energy) and test/cuda/gpu_validation_main.cpp (its cold replays) call it.
#include <string>

namespace revgraph::cuda {

// Writes a device buffer of twice the current device's L2 (cudaDevAttrL2CacheSize; 256 MiB where
// the device does not say) with cudaMemsetAsync, a different byte each call so no layer can skip
// it, and waits for it. Throws std::runtime_error with the CUDA error's words on failure.
// Between tasks, from one thread only (its callers are single-threaded drivers): it writes on the
// legacy default stream and waits for the whole device, which would end a graph capture running on
// another thread, and its buffer is process-wide state without a lock.
void flush_l2();
// What flush_l2() writes, in words ("cudaMemsetAsync of 120 MiB (2 x L2 of 60 MiB) on device 0
// before every task, untimed"), or why there is no device.
std::string flush_l2_description();
// Frees flush_l2's buffer; call before exit while the CUDA context is still alive.
void release_l2_flush();

}  // namespace revgraph::cuda
