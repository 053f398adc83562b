#pragma once
// How cuda-fused launches the any-width step (engine/cuda/fused_any/step.hpp) at every width but
// rev88's 82: its launch shapes and the one rule that decides whether a block copies the parameters
// to shared memory. The executor (on a GPU) and the emulator (on the CPU) both ask here, so the
// emulated blocks carve their shared memory exactly as the device's do.
//
// Why the half width is read at run time (fused_any's kH = 0) at every such width, not compiled per
// width: the widths are 472 values; a handful of compiled instantiations would each add an nvcc pass
// over the step to every build and to the GPU path's binaries, for what a constant half buys (its
// divisions become multiplies) at widths nobody has timed yet. Width 82, the timed one, keeps its own
// tuned kernels (engine/cuda/fused.hpp). A width that turns out to matter gets its instantiation
// when a GPU report shows the gain.
#include <cstddef>
#include <string>

#include "engine/cuda/fused_any/step.hpp"
#include "engine/error.hpp"
#include "engine/model/sum_order.hpp"

namespace revgraph::cuda::fused_any {

// The any-width step's default order (fused_any::kSumLanes, in step.hpp: the exported race entry is
// that file's text and carries no other) must be the engine's: a change of model::kEngineSumLanes
// changes both, or stops here.
static_assert(kSumLanes == model::kEngineSumLanes, "cuda-fused at every width sums in the engine's order");
static_assert(model::valid_sum_lanes(kSumLanes) && 16 % kSumLanes == 0, "dot()'s 16-term blocks are whole rounds");

// Launch shapes: any values give the same bits (every item is its own: test/cuda/test_fused_any.cpp
// runs others), so these are plain defaults. Threads cover a row pair's widest phase in a few rounds
// (2 x h items, h up to 512); the grads kernel has a thread per parameter of its block.
inline constexpr int kRowsPerBlock = 2;  // batch rows a rows block
inline constexpr int kPredictRows = 16;  // query rows a predict block
inline constexpr int kRowsThreads = 256;
inline constexpr int kGradsThreads = kGradsItems;
inline constexpr int kPredictThreads = 256;

// Floats a block needs besides the parameters: rows_scratch / predict_scratch over ld = width + 1.
inline std::size_t rows_scratch_floats(int half, int rows_per_block) {
    return static_cast<std::size_t>(rows_scratch(2 * half + 1, rows_per_block));
}
inline std::size_t predict_scratch_floats(int half, int rows_per_block) {
    return static_cast<std::size_t>(predict_scratch(2 * half + 1, rows_per_block));
}

// The rule, written once: a block stages the parameters in shared memory where they and its scratch
// fit the device's per-block opt-in limit; otherwise it reads them from global memory (L1/L2-cached)
// and asks only for its scratch. Staged or not, the bits are the same (each item reads the same
// values in the same order); only the speed differs.
inline bool stages_parameters(std::size_t scratch_floats, std::size_t params, std::size_t limit_bytes) {
    return (scratch_floats + params) * sizeof(float) <= limit_bytes;
}
inline std::size_t block_bytes(std::size_t scratch_floats, std::size_t params, bool staged) {
    return (scratch_floats + (staged ? params : 0)) * sizeof(float);
}

// Query rows a predict block: kPredictRows, fewer where that many rows' scratch alone passes the
// device's limit (16 rows at width 1024 need 65,600 bytes; a Turing block gets 65,536). A launch
// shape, so the bits do not change; 1 row where even that does not fit, which block_bytes_within
// then refuses.
inline int predict_rows(int half, std::size_t limit_bytes) {
    const std::size_t row_bytes = predict_scratch_floats(half, 1) * sizeof(float);
    const std::size_t fit = limit_bytes / row_bytes;
    return fit >= static_cast<std::size_t>(kPredictRows) ? kPredictRows : (fit > 0 ? static_cast<int>(fit) : 1);
}

// block_bytes where they are within the device's limit; else one line naming the width, the bytes
// and the limit (the device's launcher and the emulator refuse a block alike).
inline std::size_t block_bytes_within(std::size_t scratch_floats, std::size_t params, bool staged, int half,
                                      std::size_t limit_bytes) {
    const std::size_t bytes = block_bytes(scratch_floats, params, staged);
    if (bytes > limit_bytes)
        throw Error("cuda-fused: a block at width " + std::to_string(2 * half) + " needs " + std::to_string(bytes) +
                    " bytes of shared memory, over this device's " + std::to_string(limit_bytes));
    return bytes;
}

}  // namespace revgraph::cuda::fused_any
