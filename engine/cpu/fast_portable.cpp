// The fast backend's two portable kernel sets, for processors without AVX2+FMA (and run by the
// tests on every machine): the same kernels with GCC/Clang generic vectors of 4 floats (SSE2 on
// any x86-64, NEON on ARM), 16 partial sums per reduction, added in AVX-512's tree.
//   portable_fma  fused multiply-adds (std::fma per lane, one rounding) and the AVX kernels'
//                 exponential, step for step: the very bits of the AVX2 and AVX-512 kernel sets,
//                 so an ARM machine gives what an x86 one does. Exact everywhere, but fast only
//                 where std::fma is an instruction (FP_FAST_FMAF: ARMv8); elsewhere it is a call
//                 into the C library, and the set serves the tests only.
//   portable      plain multiply, then add (two roundings) and model::exp_f32: bits of its own,
//                 the same on every machine without FMA.
// On a compiler without vector extensions, one float per "vector" and the plain set only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/cpu/fast_kernels.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

namespace revgraph::cpu::fast {
namespace {

#if defined(__GNUC__) || defined(__clang__)
#include "engine/cpu/cephes_exp.inl"

// One float at a time with fused multiply-adds: the AVX kernels' exponential, lane by lane.
struct ScalarFma {
    using V = float;
    static float set1(float c) { return c; }
    static float fmadd(float a, float b, float c) { return std::fma(a, b, c); }
    static float mul(float a, float b) { return a * b; }
    static float add(float a, float b) { return a + b; }
};

template <bool Fused>
struct PortableSimd {
    typedef float V __attribute__((vector_size(16)));
    static constexpr int W = 4;
    static constexpr int k1_mr = 4, k1_nr = 3;  // 12 accumulators + 4 + 1 of 16 SSE registers
    static constexpr int k2_mr = 2, k2_nr = 2;  // 2 x 2 outputs x 4 sub-vectors = 16 accumulators
    static constexpr int kLanes = 16;           // as AVX2 and AVX-512
    static V zero() { return V{0.0f, 0.0f, 0.0f, 0.0f}; }
    static V set1(float x) { return V{x, x, x, x}; }
    static V bcast(const float* p) { return set1(*p); }
    static V load(const float* p) {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    static void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
    static V loadn(const float* p, int n) {
        V v = zero();
        std::memcpy(&v, p, static_cast<std::size_t>(n) * sizeof(float));
        return v;
    }
    static void storen(float* p, V v, int n) { std::memcpy(p, &v, static_cast<std::size_t>(n) * sizeof(float)); }
    static V fmadd(V a, V b, V c) {
        if constexpr (Fused) {
            for (int i = 0; i < W; ++i) c[i] = std::fma(a[i], b[i], c[i]);
            return c;
        } else {
            return a * b + c;  // two roundings: the build has -ffp-contract=off
        }
    }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V mul(V a, V b) { return a * b; }
    static V div(V a, V b) { return a / b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V relu(V v) { return v > zero() ? v : zero(); }
    static V pos_select(V m, V v) { return m > zero() ? v : zero(); }
    static V onehot(V lab, float j) { return lab == set1(j) ? set1(1.0f) : zero(); }
    // Fused: the AVX kernels' Cephes expf, operation for operation (fnmadd(n, c, x) is
    // fma(-n, c, x): the negation is exact). Plain: model::exp_f32, the same polynomial unfused.
    static float exp1(float x) {
        if constexpr (Fused) {
            using namespace model::cephes_expf;
            x = std::min(std::max(x, -87.0f), 88.0f);
            const float n = std::floor(std::fma(x, kLog2e, 0.5f));
            x = std::fma(-n, kLn2Hi, x);
            x = std::fma(-n, kLn2Lo, x);
            const float y = cephes_exp_reduced<ScalarFma>(x);
            return y * model::float_from_bits(static_cast<std::uint32_t>(static_cast<int>(n) + 127) << 23);
        } else {
            return model::exp_f32(x);
        }
    }
    static V exp(V x) {
        for (int i = 0; i < W; ++i) x[i] = exp1(x[i]);
        return x;
    }
    // out[i] = the sum of the 16 lanes in v[4i .. 4i+3] (lanes 4g .. 4g+3 in v[4i+g]), i < 4, by
    // AVX-512's tree: quads q_g = (l[4g] + l[4g+2]) + (l[4g+1] + l[4g+3]), then (q0 + q1) + (q2 + q3).
    static constexpr int kGroup = 4;
    static void hsum_group(const V* v, float* out) {
        for (int i = 0; i < kGroup; ++i) {
            float q[4];
            for (int g = 0; g < 4; ++g) {
                const V& l = v[4 * i + g];
                q[g] = (l[0] + l[2]) + (l[1] + l[3]);
            }
            out[i] = (q[0] + q[1]) + (q[2] + q[3]);
        }
    }
    static void transpose(V* r) {
        for (int i = 0; i < W; ++i)
            for (int j = i + 1; j < W; ++j) {
                const float t = r[i][j];
                r[i][j] = r[j][i];
                r[j][i] = t;
            }
    }
};

namespace fused {
using Simd = PortableSimd<true>;
#include "engine/cpu/fast_kernels.inl"
}  // namespace fused

namespace plain {
using Simd = PortableSimd<false>;
#include "engine/cpu/fast_kernels.inl"
}  // namespace plain

#else
namespace plain {
struct Simd {
    using V = float;
    static constexpr int W = 1;
    static constexpr int k1_mr = 4, k1_nr = 4;
    static constexpr int k2_mr = 4, k2_nr = 4;
    static constexpr int kLanes = W;
    static V zero() { return 0.0f; }
    static V set1(float x) { return x; }
    static V bcast(const float* p) { return *p; }
    static V load(const float* p) { return *p; }
    static void store(float* p, V v) { *p = v; }
    static V loadn(const float* p, int n) { return n > 0 ? *p : 0.0f; }
    static void storen(float* p, V v, int n) {
        if (n > 0) *p = v;
    }
    static V fmadd(V a, V b, V c) { return a * b + c; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V mul(V a, V b) { return a * b; }
    static V div(V a, V b) { return a / b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V relu(V v) { return v > 0.0f ? v : 0.0f; }
    static V pos_select(V m, V v) { return m > 0.0f ? v : 0.0f; }
    static V onehot(V lab, float j) { return lab == j ? 1.0f : 0.0f; }
    static V exp(V x) { return model::exp_f32(x); }
    static constexpr int kGroup = 1;
    static void hsum_group(const V* v, float* out) { out[0] = v[0]; }
    static void transpose(V*) {}
};
#include "engine/cpu/fast_kernels.inl"
}  // namespace plain
#endif

}  // namespace

const Ops* ops_portable() { return &plain::kOps; }
#if defined(__GNUC__) || defined(__clang__)
const Ops* ops_portable_fma() { return &fused::kOps; }
#else
const Ops* ops_portable_fma() { return nullptr; }
#endif

}  // namespace revgraph::cpu::fast
