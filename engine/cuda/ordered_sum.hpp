#pragma once
// How the fused kernels issue a sum: acc + term(a(0), b(0)) + term(a(1), b(1)) + ..., added in index
// order (so the bits are the reference's), with every operand of a block of terms loaded before the
// first add of that block.
//
// Why: a block's warps issue in order, and with one warp on each scheduler (the rows kernel's
// phases have 82 items, the grads kernel's up to 123) nothing hides a load that waits in front of
// an add. Written term by term and left to the compiler, the sums took several times an add's
// latency a term (bench/NOTES.md, "A cuda-fused step, phase by phase"). Loaded first, the loads of a
// block overlap one another and the chain of adds runs on registers. On the host (the CPU emulator)
// it is the plain loop: same operations, same order, same bits.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

#if defined(__CUDA_ARCH__)
#define RG_UNROLL_SUM _Pragma("unroll")
#else
#define RG_UNROLL_SUM
#endif

// N terms at once: N is a compile-time length (the 10 classes of dstate = dscores H; the longer sums
// read four terms a load where their layout allows, below).
template <int N, class A, class B, class Term>
RG_HD float ordered_sum(float acc, A a, B b, Term term) {
#if defined(__CUDA_ARCH__)
    float av[N], bv[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        av[i] = a(i);
        bv[i] = b(i);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) acc += term(av[i], bv[i]);
    return acc;
#else
    for (int i = 0; i < N; ++i) acc += term(a(i), b(i));
    return acc;
#endif
}

// ---- four terms a load ----------------------------------------------------------------------------
// The same sums where an operand's run sits on 16 bytes: one 16-byte load brings four terms'
// operands, so a sum issues a quarter of the loads (the fused kernels' layouts that allow it: the grads
// kernel's staged columns, engine/cuda/fused.hpp; the rows and predict kernels' state halves and
// staged weight rows, engine/cuda/fused_layout.hpp). Only the loads change; the adds are the same, one
// by one in index order, so the bits are the same. The body is the same code on the host (the
// emulator runs it, remainders and all); only a quad's load differs.

struct Quad {
    float v[4];
};

// A run of operands that starts on 16 bytes: operands 4k .. 4k+3 in one load. On the host the
// alignment is checked, so a layout that would fault on a GPU (a misaligned vector load) fails in
// the emulator's tests instead.
struct AlignedRun {
    const float* p;
    RG_HD AlignedRun from(int i) const { return {p + i}; }  // i a multiple of 4
    RG_HD float at(int i) const { return p[i]; }
    RG_HD Quad quad(int k) const {
#if defined(__CUDA_ARCH__)
        const float4 q = reinterpret_cast<const float4*>(p)[k];
        return {{q.x, q.y, q.z, q.w}};
#else
        if ((reinterpret_cast<std::uintptr_t>(p) & 15u) != 0) throw std::logic_error("AlignedRun: not on 16 bytes");
        Quad q;
        std::memcpy(q.v, p + 4 * k, sizeof q.v);
        return q;
#endif
    }
};

// A run of operands anywhere: four 4-byte loads a quad (the same sums on layouts that are not on 16
// bytes: the parameters where they stay in global memory, the labs' unpadded baseline).
struct ScalarRun {
    const float* p;
    RG_HD ScalarRun from(int i) const { return {p + i}; }
    RG_HD float at(int i) const { return p[i]; }
    RG_HD Quad quad(int k) const { return {{p[4 * k], p[4 * k + 1], p[4 * k + 2], p[4 * k + 3]}}; }
};

// Operands `stride` floats apart (a column of a row-major matrix): one 4-byte load each.
struct StridedRun {
    const float* p;
    int stride;
    RG_HD StridedRun from(int i) const { return {p + static_cast<std::ptrdiff_t>(i) * stride, stride}; }
    RG_HD float at(int i) const { return p[static_cast<std::ptrdiff_t>(i) * stride]; }
    RG_HD Quad quad(int k) const { return {{at(4 * k), at(4 * k + 1), at(4 * k + 2), at(4 * k + 3)}}; }
};

// N terms (a compile-time length), every operand loaded before the first add, four a load where
// the run allows.
template <int N, class A, class B, class Term>
RG_HD float ordered_sum4(float acc, A a, B b, Term term) {
    constexpr int kQuads = N / 4, kRest = N - 4 * kQuads;
    Quad aq[kQuads > 0 ? kQuads : 1], bq[kQuads > 0 ? kQuads : 1];
    float ar[kRest > 0 ? kRest : 1], br[kRest > 0 ? kRest : 1];
    RG_UNROLL_SUM
    for (int k = 0; k < kQuads; ++k) {
        aq[k] = a.quad(k);
        bq[k] = b.quad(k);
    }
    RG_UNROLL_SUM
    for (int i = 0; i < kRest; ++i) {
        ar[i] = a.at(4 * kQuads + i);
        br[i] = b.at(4 * kQuads + i);
    }
    RG_UNROLL_SUM
    for (int k = 0; k < kQuads; ++k) {
        RG_UNROLL_SUM
        for (int u = 0; u < 4; ++u) acc += term(aq[k].v[u], bq[k].v[u]);
    }
    RG_UNROLL_SUM
    for (int i = 0; i < kRest; ++i) acc += term(ar[i], br[i]);
    return acc;
}

// n terms (a run-time count): blocks of kBlock (a multiple of 4) loaded at once, then the remaining
// whole quads one at a time, then the last n mod 4 terms.
template <int kBlock, class A, class B, class Term>
RG_HD float ordered_sum4_n(float acc, int n, A a, B b, Term term) {
    static_assert(kBlock % 4 == 0, "a block is whole quads, so every block starts on 16 bytes");
    int i0 = 0;
    for (; i0 + kBlock <= n; i0 += kBlock) acc = ordered_sum4<kBlock>(acc, a.from(i0), b.from(i0), term);
    for (; i0 + 4 <= n; i0 += 4) acc = ordered_sum4<4>(acc, a.from(i0), b.from(i0), term);
    for (; i0 < n; ++i0) acc += term(a.at(i0), b.at(i0));
    return acc;
}

}  // namespace revgraph::cuda::fused
