#pragma once
// The fused kernels' load phases (engine/cuda/fused.hpp's phases read through these): read-only
// loads, 16-byte vector copies of contiguous blocks and column-pair copies of rows into shared
// memory. Apart from fused.hpp because it is a layer of its own: how bytes move, not what is
// computed; a copy changes no bits, and the emulator runs the very same items.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

using model::kFeatures;

// ---- load phases -------------------------------------------------------------------------------
// Every load phase is shaped for bandwidth: each item issues all its loads (up to kLoadBatch) before
// any store, the contiguous blocks (the parameters, the grads kernel's staged inputs) move as 16-byte
// vectors, and the index arithmetic has no division by a runtime value (one by a constant is a
// multiply). A copy changes no bits: the emulator runs the same items.
//
// Loads go through L2 (ld.global.cg), not the read-only path (ld.global.nc, __ldg): launched with
// Programmatic Dependent Launch a kernel starts while its predecessor still writes what it will read
// (the parameters, the stacks), so nothing it reads is read-only for the whole of its launch, which
// is what ld.global.nc requires. (No run has caught .nc misreading: a disagreement the first H200
// run reported at depth 3 / batch 37 was its test comparing NaNs; this follows the contract.) The
// loads are volatile asm, so the compiler keeps them after griddepcontrol.wait (kernels/fused.cuh)
// and never merges two.

inline constexpr int kLoadBatch = 8;  // loads one item has in flight

// Unrolled by nvcc (the loads of an item go out together); the host compiler needs no hint.
#if defined(__CUDACC__)
#define RG_UNROLL _Pragma("unroll")
#else
#define RG_UNROLL
#endif

#if defined(__CUDACC__)
using Vec4 = float4;
#else
struct alignas(16) Vec4 {
    float x, y, z, w;
};
#endif

RG_HD float load_l2(const float* p) {
#if defined(__CUDA_ARCH__)
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
#else
    return *p;
#endif
}
RG_HD std::int32_t load_l2(const std::int32_t* p) {
#if defined(__CUDA_ARCH__)
    std::int32_t v;
    asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
#else
    return *p;
#endif
}
RG_HD Vec4 load4_l2(const float* p) {  // p 16-byte aligned
#if defined(__CUDA_ARCH__)
    Vec4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
#else
    Vec4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
#endif
}
RG_HD void store4(float* p, const Vec4& v) {  // p 16-byte aligned
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<float4*>(p) = v;
#else
    std::memcpy(p, &v, sizeof v);
#endif
}

// n contiguous floats src -> dst as items: items [0, vec_items) move kLoadBatch 16-byte vectors each
// (item k takes vectors k, k + vec_items, ...: consecutive threads, consecutive vectors), the rest
// kLoadBatch of the scalars before the first aligned vector and after the last. Where src and dst
// sit differently in their 16-byte blocks, every float is a scalar.
struct ContiguousCopy {
    float* dst = nullptr;
    const float* src = nullptr;
    int head = 0, vecs = 0, scalars = 0;  // scalars: head + what follows the vectors
    int vec_items = 0, scalar_items = 0;
    RG_HD int items() const { return vec_items + scalar_items; }
};

RG_HD int float_phase(const void* p) { return static_cast<int>((reinterpret_cast<std::uintptr_t>(p) >> 2) & 3u); }

RG_HD ContiguousCopy contiguous_copy(float* dst, const float* src, int n) {
    ContiguousCopy c;
    c.dst = dst;
    c.src = src;
    if (float_phase(dst) == float_phase(src)) {
        c.head = (4 - float_phase(src)) & 3;
        if (c.head > n) c.head = n;
        c.vecs = (n - c.head) >> 2;
    } else {
        c.head = n;
    }
    c.scalars = n - 4 * c.vecs;
    c.vec_items = (c.vecs + kLoadBatch - 1) / kLoadBatch;
    c.scalar_items = (c.scalars + kLoadBatch - 1) / kLoadBatch;
    return c;
}

RG_HD void copy_item(const ContiguousCopy& c, int item) {
    if (item < c.vec_items) {
        const float* src = c.src + c.head;
        float* dst = c.dst + c.head;
        Vec4 v[kLoadBatch] = {};
        RG_UNROLL
        for (int u = 0; u < kLoadBatch; ++u) {
            const int k = item + u * c.vec_items;
            if (k < c.vecs) v[u] = load4_l2(src + 4 * k);
        }
        RG_UNROLL
        for (int u = 0; u < kLoadBatch; ++u) {
            const int k = item + u * c.vec_items;
            if (k < c.vecs) store4(dst + 4 * k, v[u]);
        }
    } else {
        const int j = item - c.vec_items;
        float x[kLoadBatch] = {};
        // Scalar k is float k of the head, or float 4·vecs + k (after the vectors).
        RG_UNROLL
        for (int u = 0; u < kLoadBatch; ++u) {
            const int k = j + u * c.scalar_items;
            if (k < c.scalars) x[u] = load_l2(c.src + (k < c.head ? k : 4 * c.vecs + k));
        }
        RG_UNROLL
        for (int u = 0; u < kLoadBatch; ++u) {
            const int k = j + u * c.scalar_items;
            if (k < c.scalars) c.dst[k < c.head ? k : 4 * c.vecs + k] = x[u];
        }
    }
}

// Rows of 82 floats to rows `ld` apart in shared memory, as items of one row's column pair (two
// loads, then two stores): item = row·41 + pair, split by a constant.
inline constexpr int kPairs = kFeatures / 2;
static_assert(kFeatures % 2 == 0, "rows are moved as column pairs");
RG_HD void row_pair_item(float* state, int ld, const float* row_src, unsigned int row, unsigned int pair) {
    const float x0 = load_l2(row_src + 2 * pair), x1 = load_l2(row_src + 2 * pair + 1);
    float* d = state + static_cast<std::size_t>(row) * ld + 2 * pair;
    d[0] = x0;
    d[1] = x1;
}

}  // namespace revgraph::cuda::fused
