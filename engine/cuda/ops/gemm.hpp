#pragma once
// A matrix product (engine/cuda/gemm_spec.hpp). On the GPU it is a cuBLASLt matmul with a pinned
// algorithm, bound by LtMatmuls (engine/cuda/lt_matmul.hpp) rather than launched by a kernel of ours;
// the emulator computes it as column-major BLAS exactly as cuBLASLt is asked for it.
#include "engine/cuda/gemm_spec.hpp"
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct GemmOp {
    GemmSpec spec;
    Ref a, b, d;
};

namespace ops {

inline std::vector<Access> accesses(const GemmOp& g, std::size_t) {
    return {
        {g.a, g.spec.a_extent(), Elem::f32}, {g.b, g.spec.b_extent(), Elem::f32}, {g.d, g.spec.d_extent(), Elem::f32}};
}

inline Info info(const GemmOp&) { return {"gemm", Kind::product}; }

struct GemmArgs {
    GemmSpec spec;
    const float* a;
    const float* b;
    float* d;
};
template <class Memory>
GemmArgs resolve(const GemmOp& g, const Memory& m) {
    return {g.spec, m.f32(g.a), m.f32(g.b), m.f32(g.d)};
}

// D = alpha op(A) op(B), column-major, accumulated in index order of k; every product of a batch.
inline void host_gemm(const GemmSpec& s, const float* a0, const float* b0, float* d0) {
    for (int q = 0; q < s.batch; ++q) {
        const float* a = a0 + q * s.stride_a;
        const float* b = b0 + q * s.stride_b;
        float* d = d0 + q * s.stride_d;
        const auto at_a = [&](int i, int p) {
            return s.trans_a ? a[static_cast<std::size_t>(i) * s.lda + p] : a[static_cast<std::size_t>(p) * s.lda + i];
        };
        const auto at_b = [&](int p, int j) {
            return s.trans_b ? b[static_cast<std::size_t>(p) * s.ldb + j] : b[static_cast<std::size_t>(j) * s.ldb + p];
        };
        for (int j = 0; j < s.n; ++j)
            for (int i = 0; i < s.m; ++i) {
                float acc = 0.0f;
                for (int p = 0; p < s.k; ++p) acc += at_a(i, p) * at_b(p, j);
                d[static_cast<std::size_t>(j) * s.ldd + i] = s.alpha * acc;
            }
    }
}

inline void run_host(const GemmArgs& a) { host_gemm(a.spec, a.a, a.b, a.d); }

}  // namespace ops

using ops::host_gemm;

}  // namespace revgraph::cuda
