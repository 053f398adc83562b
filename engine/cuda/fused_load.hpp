#pragma once
// The fused kernels' load phases (engine/cuda/fused.hpp's phases read through these): read-only
// loads, 16-byte vector copies of columns, and copies of rows and of the parameters to their padded
// places in shared memory (engine/cuda/fused_layout.hpp). Apart from fused.hpp because it is a layer of its own: how
// bytes move, not what is computed; a copy changes no bits, and the emulator runs the very same items.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "engine/cuda/fused_layout.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

using model::kFeatures;

// ---- load phases -------------------------------------------------------------------------------
// Every load phase is shaped for latency: its copies into shared memory are asynchronous (cp.async,
// sm_80+), so an item issues them and moves on without waiting for any, a thread's items all have
// their bytes in flight at once, and the phase's end (end_block_phase) waits once for the lot. The
// grads kernel's staged columns move as 16-byte vectors, the parameters as 4-byte copies to their
// padded places (PaddedCopy says why), and the index arithmetic has no division by a runtime value
// (one by a constant is a multiply). A copy changes no bits: the emulator runs the same items with
// memcpy.
//
// Why: with loads into registers and stores after them, a thread's items one after the other, every
// copy waited for its load in turn, and the load phases were the longest of the rows and grads
// kernels (bench/NOTES.md, "A cuda-fused step, phase by phase", and the copies' lever under "Levers
// tried, and what each gave").
//
// Vectors go through L2 only (.cg); 4-byte copies can only be .ca. Launched with Programmatic
// Dependent Launch a kernel starts while its predecessor still writes what it will read (the
// parameters, the stacks), so nothing it reads is read-only for the whole of its launch and no copy
// uses the read-only path (ld.global.nc). A copy of anything the previous kernel writes is issued
// after griddepcontrol.wait (kernels/fused.cuh), and every asm here is volatile with a memory
// clobber; where a step follows a step, the rows kernel issues the copies of its rows and labels
// (the task's inputs and the epoch's order, which no step writes) before its wait
// (fused::step_rows_as, StepArgs::gather_before_wait); else after it.

inline constexpr int kLoadBatch = 8;  // copies one item issues

// Unrolled by nvcc (the copies of an item go out together); the host compiler needs no hint.
#if defined(__CUDA_ARCH__)
#define RG_UNROLL _Pragma("unroll")
#else
#define RG_UNROLL
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define RG_ASYNC_COPY 1
#endif

// A load the kernel needs in a register (an index): through L2, as the copies.
RG_HD std::int32_t load_l2(const std::int32_t* p) {
#if defined(__CUDA_ARCH__)
    std::int32_t v;
    asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
#else
    return *p;
#endif
}

RG_HD float load_l2(const float* p) {
#if defined(__CUDA_ARCH__)
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
#else
    return *p;
#endif
}

// 4 bytes global -> shared, asynchronously (landed at the end of the phase).
template <class T>
RG_HD void copy_async4(T* dst, const T* src) {
    static_assert(sizeof(T) == 4, "4-byte copies");
#if defined(RG_ASYNC_COPY)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))),
                 "l"(src)
                 : "memory");
#else
    std::memcpy(dst, src, 4);
#endif
}

// 16 bytes global -> shared, both 16-byte aligned, asynchronously through L2 only.
RG_HD void copy_async16(float* dst, const float* src) {
#if defined(RG_ASYNC_COPY)
    asm volatile(
        "cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))),
        "l"(src)
        : "memory");
#else
#if !defined(__CUDA_ARCH__)
    // The emulator's buffers start on 16 bytes as the device's do: a copy off them would fault there.
    if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15u) != 0)
        throw std::logic_error("copy_async16: not on 16 bytes");
#endif
    std::memcpy(dst, src, 16);
#endif
}

#if defined(__CUDACC__)
// This thread's async copies have landed (a no-op when it issued none): what a phase's end waits
// for before its barrier.
__device__ __forceinline__ void wait_async_copies() {
#if defined(RG_ASYNC_COPY)
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// The end of a phase on a GPU block: this thread's async copies have landed, then the barrier that
// shows every thread's writes to the whole block.
__device__ __forceinline__ void end_block_phase() {
    wait_async_copies();
    __syncthreads();
}
#endif

// Where p sits in its 16 bytes, in floats (0: on 16 bytes).
RG_HD int float_phase(const void* p) { return static_cast<int>((reinterpret_cast<std::uintptr_t>(p) >> 2) & 3u); }

// `cols` columns of `rows` floats (at most kRows), column k at src + k·ld in global memory, to
// columns kStride floats apart from dst (on 16 bytes) in shared memory: the grads kernel's staging of
// the column-major stacks (engine/cuda/fused.hpp). Item = column·kItemsPerColumn + q (split by a
// constant) issues the column's 4-row units q, q + kItemsPerColumn, ... (kLoadBatch of them): a warp's
// items take 8 columns, 4 neighbouring units of each at a time. A unit is one 16-byte copy where its
// source is on 16 bytes (every unit when ld is a multiple of 4 and the buffer on 16 bytes), else
// 4-byte ones; no row past `rows` is read.
template <int kRows, int kStride>
struct ColumnCopy {
    static constexpr int kItemsPerColumn = kRows / 4 / kLoadBatch;
    static_assert(kItemsPerColumn * 4 * kLoadBatch == kRows, "a column is whole items of whole 4-row units");
    static_assert(kStride % 4 == 0 && kStride >= kRows, "columns on 16 bytes, none overlapping the next");
    float* dst = nullptr;
    const float* src = nullptr;
    std::size_t ld = 0;
    int rows = 0, cols = 0;
    RG_HD int items() const { return cols * kItemsPerColumn; }
};

template <int kRows, int kStride>
RG_HD void copy_item(const ColumnCopy<kRows, kStride>& c, int item) {
    constexpr int per_column = ColumnCopy<kRows, kStride>::kItemsPerColumn;
    const int col = item / per_column, q = item - col * per_column;
    const float* s = c.src + static_cast<std::size_t>(col) * c.ld;
    float* d = c.dst + col * kStride;
    RG_UNROLL
    for (int u = 0; u < kLoadBatch; ++u) {
        const int r = 4 * (q + u * per_column);
        if (r + 4 <= c.rows && float_phase(s + r) == 0) {
            copy_async16(d + r, s + r);
        } else {
            RG_UNROLL
            for (int k = 0; k < 4; ++k)
                if (r + k < c.rows) copy_async4(d + r + k, s + r + k);
        }
    }
}

// Rows of 82 floats to padded state rows `ld` apart in shared memory (each column where
// fused_layout.hpp's padded_column puts it), as items of one row's column pair: item = row·41 +
// pair, split by a constant.
inline constexpr int kPairs = kFeatures / 2;
static_assert(kFeatures % 2 == 0, "rows are moved as column pairs");
RG_HD void row_pair_item(float* state, int ld, const float* row_src, unsigned int row, unsigned int pair) {
    float* d = state + static_cast<std::size_t>(row) * ld;
    const int c = 2 * static_cast<int>(pair);
    copy_async4(d + padded_column(c), row_src + c);
    copy_async4(d + padded_column(c + 1), row_src + c + 1);
}

// The flat parameters (model::Layout) to their padded copy in shared memory (fused_layout.hpp:
// weight rows on 16 bytes), as items of kLoadBatch floats (item k: floats k, k + items, ...:
// consecutive threads, consecutive floats), each float a 4-byte copy to padded_index(q).
// Why 4-byte copies: a weight row is 41 floats, so the flat rows start in every 16-byte phase while
// their padded copies all start on 16 bytes; a 16-byte copy needs both on the same phase. The other
// way, a second copy of the parameters kept padded in global memory (written by the grads kernel
// beside the flat one) would make this one aligned block of 16-byte copies again, at the price of a
// buffer and the grads kernel's second stores: worth it only if this phase grows by more than the
// couples save (bench/NOTES.md, "Landed on main, unmeasured": item 3, and the lost item 6 under it; the
// kernel lab's phase table says). The bytes read are the same either way; what grows is the copy
// instructions (4 a vector).
struct PaddedCopy {
    float* dst = nullptr;
    const float* src = nullptr;
    int n = 0, branch_runs = 0, batch_items = 0;
    RG_HD int items() const { return batch_items; }
};

RG_HD PaddedCopy padded_copy(float* dst, const float* src, int param_count) {
    return {dst, src, param_count, branches_of(param_count) * kHalf, (param_count + kLoadBatch - 1) / kLoadBatch};
}

RG_HD void copy_item(const PaddedCopy& c, int item) {
    RG_UNROLL
    for (int u = 0; u < kLoadBatch; ++u) {
        const int q = item + u * c.batch_items;
        if (q < c.n) copy_async4(c.dst + padded_index(q, c.branch_runs), c.src + q);
    }
}

}  // namespace revgraph::cuda::fused
