// The "GPU" of test_export.py's host-device test (host_device.py): an exported entry's CUDA text
// built as host code (exported_on_host.hpp) into a shared library, which runs a launch the entry
// makes as the device would run it — every block of the grid, each block's phases in turn — after
// the checks the device makes or the kernel's arithmetic needs: a known kernel, a 1-D block of at
// most 1,024 threads, and enough blocks and dynamic shared memory for what the Args ask (the
// engine's step.hpp's blocks_for and *_scratch, which the text leaves out: not the entry's own
// arithmetic). Built at test time as a module that the
// fake NVRTC makes from the entry's own compile options:
//   g++ -std=c++20 -O1 -ffp-contract=off -fPIC -shared -D__CUDACC_RTC__ -DEXPORTED_TEXT='"k.cuh"'
//       -DHALF=<the entry's RG_ENTRY_HALF> host_device.cpp -o k.so
// Pointers in the Args are host addresses here (the test's "device" tensors live in host memory).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/fused_any/step.hpp"
#include "test/export/exported_on_host.hpp"

namespace engine_fa = revgraph::cuda::fused_any;

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

// Runs kernel `name` on `grid` blocks of `block` threads with `smem_bytes` of dynamic shared memory
// and the launch's Args (the bytes the launch copied), blocks first to last or, with `reverse`, last
// to first with each phase's items last to first. 0, or 1 with a line in `error`.
extern "C" int rg_host_launch(const char* name, const void* args, int grid, int block, long long smem_bytes,
                              int reverse, char* error, int error_size) {
    if (!rg_host_has_kernel(name)) return fail(error, error_size, std::string("no kernel ") + name);
    if (block < 1 || block > 1024) return fail(error, error_size, "a block of " + std::to_string(block) + " threads");
    fa::Args a;
    std::memcpy(&a, args, sizeof a);
    const std::string k = name;
    if (a.half != HALF)
        return fail(error, error_size,
                    "Args.half " + std::to_string(a.half) + " for a build of " + std::to_string(HALF));
    const int ld = 2 * HALF + 1;
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
    const SequentialExec ex{reverse != 0};
    std::vector<float> smem;
    for (int i = 0; i < grid; ++i) {
        const int b = reverse ? grid - 1 - i : i;
        // Shared memory starts as garbage on the device: NaN here, so a read before a write shows.
        smem.assign(static_cast<std::size_t>(smem_bytes / 4) + 1, std::nanf(""));
        if (k == "rg_rows")
            fa::step_rows<HALF>(ex, a, b, smem.data());
        else if (k == "rg_grads")
            fa::step_grads<HALF>(ex, a, b);
        else
            fa::predict<HALF>(ex, a, b, smem.data());
    }
    return 0;
}
