#pragma once
// How the fused kernels issue a sum: term(a(0), b(0)) + term(a(1), b(1)) + ..., added in the trainer's
// order (engine/model/sum_order.hpp: L lanes joined by a fixed tree; L = 1, index order), so the bits
// are the reference's at the same L, with every operand of a block of terms loaded before the first
// add of that block.
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
#include "engine/model/sum_order.hpp"

namespace revgraph::cuda::fused {

#if defined(__CUDA_ARCH__)
#define RG_UNROLL_SUM _Pragma("unroll")
#else
#define RG_UNROLL_SUM
#endif

// The running sums of one output in the trainer's order (engine/model/sum_order.hpp): L lanes, term
// i of the sum into lane i mod L, each lane from +0, joined at the end by the rule's pairwise tree.
// L = 1 is one chain in index order. L is a compile-time constant and so is every lane index below
// (the loops unrolled), so on a GPU the lanes are registers.
template <int L>
struct LaneSums {
    static_assert(model::valid_sum_lanes(L), "sum lanes: 1, 2, 4 or 8");
    float v[L];
    RG_HD LaneSums() {
        RG_UNROLL_SUM
        for (int l = 0; l < L; ++l) v[l] = 0.0f;
    }
    // The sum: the lanes joined (model::join_lanes' tree).
    RG_HD float join() const {
        float t[L];
        RG_UNROLL_SUM
        for (int l = 0; l < L; ++l) t[l] = v[l];
        model::join_lanes<L>(t);
        return t[0];
    }
};

// N terms at once, terms kFirst .. kFirst+N-1 of the sum (so term i goes to lane (kFirst + i) mod L):
// N and kFirst are compile-time (the 10 classes of dstate = dscores H and of the softmax's row sum;
// the longer sums read four terms a load where their layout allows, below).
template <int N, int L, int kFirst = 0, class A, class B, class Term>
RG_HD void ordered_sum(LaneSums<L>& acc, A a, B b, Term term) {
#if defined(__CUDA_ARCH__)
    float av[N], bv[N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        av[i] = a(i);
        bv[i] = b(i);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) acc.v[(kFirst + i) % L] += term(av[i], bv[i]);
#else
    for (int i = 0; i < N; ++i) acc.v[(kFirst + i) % L] += term(a(i), b(i));
#endif
}

// ---- four terms a load ----------------------------------------------------------------------------
// The same sums where an operand's run sits on 16 bytes: one 16-byte load brings four terms'
// operands, so a sum issues a quarter of the loads (the fused kernels' layouts that allow it: the grads
// kernel's staged columns, engine/cuda/fused.hpp; the rows and predict kernels' state halves and
// staged weight rows, engine/cuda/fused_layout.hpp). Only the loads change; the adds are the same, one
// by one into the same lanes in the same order, so the bits are the same. The body is the same code on the host (the
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

// N terms (a compile-time length), terms kFirst .. kFirst+N-1 of the sum, every operand loaded
// before the first add, four a load where the run allows.
template <int N, int L, int kFirst = 0, class A, class B, class Term>
RG_HD void ordered_sum4(LaneSums<L>& acc, A a, B b, Term term) {
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
        for (int u = 0; u < 4; ++u) acc.v[(kFirst + 4 * k + u) % L] += term(aq[k].v[u], bq[k].v[u]);
    }
    RG_UNROLL_SUM
    for (int i = 0; i < kRest; ++i) acc.v[(kFirst + 4 * kQuads + i) % L] += term(ar[i], br[i]);
}

// n terms (a run-time count), the sum's terms from one whose index is a multiple of L (every grads
// chunk starts so): blocks of kBlock (whole quads, whole rounds of the lanes) loaded at once, then
// whole groups of kGroup = max(4, L) terms (each starting at lane 0, read a quad a load), then the
// last terms one by one (fewer than kGroup: unrolled, each with its lane a constant).
template <int kBlock, int L, class A, class B, class Term>
RG_HD void ordered_sum4_n(LaneSums<L>& acc, int n, A a, B b, Term term) {
    constexpr int kGroup = L > 4 ? L : 4;
    static_assert(kBlock % kGroup == 0, "a block is whole quads and whole rounds of the lanes");
    int i0 = 0;
    for (; i0 + kBlock <= n; i0 += kBlock) ordered_sum4<kBlock, L>(acc, a.from(i0), b.from(i0), term);
    for (; i0 + kGroup <= n; i0 += kGroup) ordered_sum4<kGroup, L>(acc, a.from(i0), b.from(i0), term);
    RG_UNROLL_SUM
    for (int u = 0; u < kGroup - 1; ++u)
        if (i0 + u < n) acc.v[u % L] += term(a.at(i0 + u), b.at(i0 + u));
}

}  // namespace revgraph::cuda::fused
