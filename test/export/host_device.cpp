// The "GPU" of test_export.py's host-device test (host_device.py): an exported entry's CUDA text
// built as host code (exported_on_host.hpp) into a shared library, which runs a launch the entry
// makes as the device would run it, after the checks the device makes or the kernel's arithmetic
// needs: a known kernel, a 1-D block of at most 1,024 threads, and enough blocks and dynamic shared
// memory for what the Args ask (the engine's step.hpp's blocks_for and *_scratch, which the text
// leaves out: not the entry's own arithmetic). In order, a launch calls the text's own kernels
// (rg_rows, rg_grads, rg_predict: their shared memory, their block index) block after block, each a
// block of one thread; reversed, it runs the step functions they call with every grid's blocks and
// every phase's items last to first. Built at test time by the host device's NVRTC, with the
// defines the entry passes to NVRTC (RG_ENTRY_HALF among them):
//   <the build's C++ compiler> -std=c++20 -O1 -ffp-contract=off -fPIC -shared -Wno-unknown-pragmas
//       -D__CUDACC_RTC__ -I<source root> -DEXPORTED_TEXT='"k.cuh"' <the entry's -D options> host_device.cpp
// (C++20 for the engine header below; that the text compiles as the C++17 NVRTC is given is
// test_export.py's NVRTC test). Pointers in the Args are host addresses here.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "engine/cuda/fused_any/step.hpp"
#include "test/export/exported_on_host.hpp"

namespace engine_fa = revgraph::cuda::fused_any;

#ifndef RG_ENTRY_HALF
#error "host_device.cpp: built with the entry's -DRG_ENTRY_HALF=N"
#endif

// The kernels' `extern __shared__ float smem[]`: the most shared memory a block can opt in to on
// the GPUs the entry targets (227 KB on sm_90; 163 KB on sm_80). Declared first inside the text's
// extern "C" kernels, it has C linkage (the symbol `smem`; host_device.py links with -Bsymbolic).
namespace exported {
float smem[227 * 1024 / 4];
}  // namespace exported

namespace {

int fail(char* error, int size, const std::string& what) {
    std::snprintf(error, static_cast<std::size_t>(size), "%s", what.c_str());
    return 1;
}

}  // namespace

extern "C" int rg_host_args_size() { return static_cast<int>(sizeof(fa::Args)); }

extern "C" int rg_host_has_kernel(const char* name) {
    const std::string k = name;
    return k == "rg_rows" || k == "rg_grads" || k == "rg_predict";
}

// The Args' device pointers, in field order, into out[0 .. count): how many. The list is written
// out; the assertion fails the build when Args gains or loses a field, so that it is kept whole.
static_assert(sizeof(fa::Args) == 12 * sizeof(int) + 12 * sizeof(void*), "Args changed: update rg_host_pointers");
extern "C" int rg_host_pointers(const void* args, unsigned long long* out, int count) {
    fa::Args a;
    std::memcpy(&a, args, sizeof a);
    const void* p[] = {a.order,       a.pixels,  a.labels, a.param, a.velocity, a.grads,
                       a.final_state, a.dscores, a.act,    a.grad,  a.scores,   a.predictions};
    const int n = static_cast<int>(sizeof p / sizeof p[0]);
    for (int i = 0; i < n && i < count; ++i) out[i] = reinterpret_cast<unsigned long long>(p[i]);
    return n;
}

// Runs kernel `name` on `grid` blocks of `block` threads with `smem_bytes` of dynamic shared memory
// and the launch's Args (the bytes the launch copied), in order or, with `reverse`, last to first.
// 0, or 1 with a line in `error`.
extern "C" int rg_host_launch(const char* name, const void* args, int grid, int block, long long smem_bytes,
                              int reverse, char* error, int error_size) {
    if (!rg_host_has_kernel(name)) return fail(error, error_size, std::string("no kernel ") + name);
    if (block < 1 || block > 1024) return fail(error, error_size, "a block of " + std::to_string(block) + " threads");
    if (smem_bytes < 0 || smem_bytes > static_cast<long long>(sizeof exported::smem))
        return fail(error, error_size, std::to_string(smem_bytes) + " bytes of shared memory");
    fa::Args a;
    std::memcpy(&a, args, sizeof a);
    const std::string k = name;
    if (a.half != RG_ENTRY_HALF)
        return fail(error, error_size,
                    "Args.half " + std::to_string(a.half) + " for kernels built at " + std::to_string(RG_ENTRY_HALF));
    const int ld = 2 * RG_ENTRY_HALF + 1;
    long long need = 0;
    int blocks = 0;
    if (k == "rg_grads") {
        blocks = engine_fa::blocks_for(a.params, engine_fa::kGradsItems);
    } else {
        if (a.rows_per_block < 1)
            return fail(error, error_size, k + ": rows_per_block " + std::to_string(a.rows_per_block));
        blocks = engine_fa::blocks_for(a.rows, a.rows_per_block);
        const int scratch = k == "rg_rows" ? engine_fa::rows_scratch(ld, a.rows_per_block)
                                           : engine_fa::predict_scratch(ld, a.rows_per_block);
        need = 4LL * ((a.staged ? a.params : 0) + scratch);
    }
    if (grid < blocks)
        return fail(error, error_size,
                    k + ": " + std::to_string(grid) + " blocks for " + std::to_string(blocks) + " blocks of work");
    if (smem_bytes < need)
        return fail(
            error, error_size,
            k + ": " + std::to_string(smem_bytes) + " bytes of shared memory, the block needs " + std::to_string(need));
    exported_cuda_shim::gridDim.x = static_cast<unsigned>(grid);
    exported_cuda_shim::blockDim.x = 1;
    exported_cuda_shim::threadIdx.x = 0;
    for (int i = 0; i < grid; ++i) {
        const int b = reverse ? grid - 1 - i : i;
        // Shared memory starts as garbage on the device: NaN here, all of it, so a read before a
        // write or past the request shows.
        std::fill(std::begin(exported::smem), std::end(exported::smem), std::nanf(""));
        exported_cuda_shim::blockIdx.x = static_cast<unsigned>(b);
        if (!reverse) {
            if (k == "rg_rows")
                exported::rg_rows(a);
            else if (k == "rg_grads")
                exported::rg_grads(a);
            else
                exported::rg_predict(a);
            continue;
        }
        const SequentialExec ex{true};
        if (k == "rg_rows")
            fa::step_rows<RG_ENTRY_HALF>(ex, a, b, exported::smem);
        else if (k == "rg_grads")
            fa::step_grads<RG_ENTRY_HALF>(ex, a, b);
        else
            fa::predict<RG_ENTRY_HALF>(ex, a, b, exported::smem);
    }
    return 0;
}
