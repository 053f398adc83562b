// The fast backend's AVX2+FMA kernels: 8 floats per vector, explicit fused multiply-adds.
// Everything after the target pragma is compiled for AVX2+FMA and has internal linkage, so no
// AVX2 code can leak into functions that run before the processor check (fast_isa.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/fast_kernels.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace revgraph::cpu::fast {
namespace {

#include "engine/cpu/cephes_exp.inl"

struct Simd {
    using V = __m256;
    static constexpr int W = 8;
    // 3 rows x 4 vectors = 12 accumulators: a 128-row batch is 16 vectors, 4 blocks across.
    static constexpr int k1_mr = 3, k1_nr = 4;
    // Reductions keep 16 partial sums, as AVX-512's do, in two vectors: 3 x 2 outputs x 2 halves =
    // 12 accumulators + 3 rows of g + 1 of p.
    static constexpr int kLanes = 16;
    static constexpr int k2_mr = 3, k2_nr = 2;
    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static __m256i lanes(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static V loadn(const float* p, int n) { return _mm256_maskload_ps(p, lanes(n)); }
    static void storen(float* p, V v, int n) { _mm256_maskstore_ps(p, lanes(n), v); }
    static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V relu(V v) { return _mm256_max_ps(v, _mm256_setzero_ps()); }
    static V pos_select(V m, V v) { return _mm256_and_ps(v, _mm256_cmp_ps(m, _mm256_setzero_ps(), _CMP_GT_OQ)); }
    static V onehot(V lab, float j) {
        return _mm256_and_ps(_mm256_cmp_ps(lab, _mm256_set1_ps(j), _CMP_EQ_OQ), _mm256_set1_ps(1.0f));
    }
    // Cephes expf: 2^n · e^r with |r| <= ln2/2, a degree-5 polynomial; ~1 ulp. Arguments are
    // s - max(s) <= 0 here; below -87 the result would be subnormal and is clamped there.
    static V exp(V x) {
        using namespace model::cephes_expf;
        x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
        const V n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
        x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
        x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), x);
        const V y = cephes_exp_reduced<Simd>(x);
        const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    }
    // out[i] = the sum of the 16 lanes in v[2i] (lanes 0-7) and v[2i+1] (8-15), i < 4, by AVX-512's
    // tree: quads q_L = (l[4L] + l[4L+2]) + (l[4L+1] + l[4L+3]), then (q0 + q1) + (q2 + q3).
    static constexpr int kGroup = 4;
    static V pairs(V a, V b) { return _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b)); }
    static V quads(V a, V b) {  // 128-bit half H: the quad sums of its lanes for the 4 vectors
        const __m256d x = _mm256_castps_pd(a), y = _mm256_castps_pd(b);
        return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)), _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
    }
    static void hsum_group(const V* v, float* out) {
        const V lo = quads(pairs(v[0], v[2]), pairs(v[4], v[6]));  // q0 | q1 of the four sums
        const V hi = quads(pairs(v[1], v[3]), pairs(v[5], v[7]));  // q2 | q3
        const __m128 q01 = _mm_add_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
        const __m128 q23 = _mm_add_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
        _mm_storeu_ps(out, _mm_add_ps(q01, q23));
    }
    // In-place 8x8 transpose: r[i][j] <- r[j][i].
    static void transpose(V* r) {
        V t[8], u[8];
        for (int i = 0; i < 4; ++i) {
            t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // u[4i+j], 128-bit lane L: column 4L+j of rows 4i..4i+3.
        for (int i = 0; i < 2; ++i) {
            u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
            u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
            u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
            u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
        }
        for (int j = 0; j < 4; ++j) {
            r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
            r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
        }
    }
};

#include "engine/cpu/fast_kernels.inl"

}  // namespace
}  // namespace revgraph::cpu::fast

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

namespace revgraph::cpu::fast {
const Ops* ops_avx2() { return &kOps; }
}  // namespace revgraph::cpu::fast

#else
namespace revgraph::cpu::fast {
const Ops* ops_avx2() { return nullptr; }
}  // namespace revgraph::cpu::fast
#endif
