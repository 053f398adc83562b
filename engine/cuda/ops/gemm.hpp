#pragma once
// A matrix product (engine/cuda/gemm_spec.hpp). On the GPU it is a cuBLASLt matmul with a pinned
// algorithm, bound by LtMatmuls (engine/cuda/lt_matmul.hpp) rather than launched by the executor;
// the emulator computes it as column-major BLAS exactly as cuBLASLt is asked for it. Where cuBLASLt
// has no deterministic FP32 algorithm for a product, LtMatmuls launches the kernel below instead:
// one thread an output element, the emulator's very sum (gemm_element), so deterministic and, on a
// GPU, the emulator's bits.
#include "engine/cuda/gemm_spec.hpp"
#include "engine/cuda/ops/op.hpp"

namespace revgraph::cuda {

struct GemmOp {
    GemmSpec spec;
    Ref a, b, d;
    // Off the chain: on the GPU this product runs on a second stream beside the next `beside`
    // operations of its program (its companions), forked where it stands and joined before the
    // operation after them. The companions must be products, and none may write what this one
    // reads or read or write what it writes (TaskPlan::check refuses it otherwise): then every
    // order of them gives the same bits, and the emulator runs them in program order. 0: on the chain.
    int beside = 0;
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

// One element (row i, column j) of D = alpha op(A) op(B), column-major: k summed in index order, each
// multiply and add rounded on its own (-ffp-contract=off on the host, --fmad=false in nvcc).
RG_HD float gemm_element(const GemmSpec& s, const float* a, const float* b, int i, int j) {
    float acc = 0.0f;
    for (int p = 0; p < s.k; ++p) {
        const float x =
            s.trans_a ? a[static_cast<std::size_t>(i) * s.lda + p] : a[static_cast<std::size_t>(p) * s.lda + i];
        const float y =
            s.trans_b ? b[static_cast<std::size_t>(p) * s.ldb + j] : b[static_cast<std::size_t>(j) * s.ldb + p];
        acc += x * y;
    }
    return s.alpha * acc;
}

// Every element of every product of a batch.
inline void host_gemm(const GemmSpec& s, const float* a0, const float* b0, float* d0) {
    for (int q = 0; q < s.batch; ++q) {
        const float* a = a0 + q * s.stride_a;
        const float* b = b0 + q * s.stride_b;
        float* d = d0 + q * s.stride_d;
        for (int j = 0; j < s.n; ++j)
            for (int i = 0; i < s.m; ++i) d[static_cast<std::size_t>(j) * s.ldd + i] = gemm_element(s, a, b, i, j);
    }
}

inline void run_host(const GemmArgs& a) { host_gemm(a.spec, a.a, a.b, a.d); }

// The hand-written product (LtMatmuls' way on where cuBLASLt pins nothing).
void launch(const GemmArgs& a, Stream stream);

#if defined(REVGRAPH_DEFINE_KERNELS)
// Thread t takes element t of the batch's outputs, row fastest: consecutive threads write
// consecutive elements of a column of D and read consecutive elements of A where A is not transposed.
__global__ void __launch_bounds__(kernels::kThreads)
    gemm_kernel(GemmSpec s, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ d) {
    const std::int64_t per = static_cast<std::int64_t>(s.m) * s.n, count = per * s.batch;
    for (std::int64_t t = kernels::first_index(); t < count; t += kernels::grid_stride()) {
        const auto q = static_cast<int>(t / per);
        const std::int64_t e = t - q * per;
        const auto j = static_cast<int>(e / s.m), i = static_cast<int>(e - static_cast<std::int64_t>(j) * s.m);
        d[q * s.stride_d + static_cast<std::int64_t>(j) * s.ldd + i] =
            gemm_element(s, a + q * s.stride_a, b + q * s.stride_b, i, j);
    }
}

void launch(const GemmArgs& a, Stream stream) {
    NVTX_RANGE("gemm (hand-written)");
    const std::int64_t count = static_cast<std::int64_t>(a.spec.m) * a.spec.n * a.spec.batch;
    gemm_kernel<<<kernels::blocks_for(count), kernels::kThreads, 0, stream>>>(a.spec, a.a, a.b, a.d);
    cudaCheck(cudaGetLastError());
}
#endif

}  // namespace ops

using ops::host_gemm;

}  // namespace revgraph::cuda
