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
#include "engine/model/math.hpp"

namespace revgraph::cuda::fused {

// N terms at once: N is a compile-time length (41, 82, 10, or the grads kernel's block of rows).
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

// n terms (a run-time count): blocks of kBlock loaded at once, then the rest one by one.
template <int kBlock, class A, class B, class Term>
RG_HD float ordered_sum_n(float acc, int n, A a, B b, Term term) {
    int i0 = 0;
    for (; i0 + kBlock <= n; i0 += kBlock)
        acc = ordered_sum<kBlock>(
            acc, [&](int i) { return a(i0 + i); }, [&](int i) { return b(i0 + i); }, term);
    for (int i = i0; i < n; ++i) acc += term(a(i), b(i));
    return acc;
}

}  // namespace revgraph::cuda::fused
