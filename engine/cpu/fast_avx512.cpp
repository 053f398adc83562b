// The fast backend's AVX-512 kernels: 16 floats per vector, 32 registers, masked tails.
// Everything after the target pragma is compiled for AVX-512F and has internal linkage, so no
// AVX-512 code can leak into functions that run before the processor check (fast_isa.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/fast_kernels.hpp"
#include "engine/model/layout.hpp"
#include "engine/model/math.hpp"

// Left out (ops_avx512() null: the processor check then picks AVX2) off x86, and where the build
// says so (-Dcpu_avx512=false: tools/asan-check on a processor that could not run it).
#if (defined(__x86_64__) || defined(__i386__)) && !defined(REVGRAPH_NO_AVX512)
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
// GCC 12's own _mm512_undefined_ps() (x = x) trips -Wuninitialized once inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace revgraph::cpu::fast {
namespace {

#include "engine/cpu/cephes_exp.inl"

struct Simd {
    using V = __m512;
    static constexpr int W = 16;
    // 6 rows x 4 vectors = 24 accumulators: a 128-row batch is 8 vectors, 2 blocks across.
    static constexpr int k1_mr = 6, k1_nr = 4;
    static constexpr int k2_mr = 4, k2_nr = 4;
    static constexpr int kLanes = 16;  // one vector of partial sums per reduction
    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V bcast(const float* p) { return _mm512_set1_ps(*p); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static __mmask16 lanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
    static V loadn(const float* p, int n) { return _mm512_maskz_loadu_ps(lanes(n), p); }
    static void storen(float* p, V v, int n) { _mm512_mask_storeu_ps(p, lanes(n), v); }
    static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V relu(V v) { return _mm512_max_ps(v, _mm512_setzero_ps()); }
    static V pos_select(V m, V v) {
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, _mm512_setzero_ps(), _CMP_GT_OQ), v);
    }
    static V onehot(V lab, float j) {
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(lab, _mm512_set1_ps(j), _CMP_EQ_OQ), _mm512_set1_ps(1.0f));
    }
    // Cephes expf, as in the AVX2 kernels.
    static V exp(V x) {
        using namespace model::cephes_expf;
        x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
        const V n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                                         _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
        x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), x);
        const V y = cephes_exp_reduced<Simd>(x);
        const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
        return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
    }
    // out[i] = sum of the lanes of v[i], i < 16: a transposing tree, 45 shuffles and adds.
    static constexpr int kGroup = 16;
    static void hsum_group(const V* v, float* out) {
        V s2[8], s4[4], s8[2];
        // Pairs: each 128-bit lane holds partial sums of v[2i] (positions 0, 2) and v[2i+1] (1, 3).
        for (int i = 0; i < 8; ++i)
            s2[i] =
                _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
        // Quads: 128-bit lane L holds [v4i, v4i+1, v4i+2, v4i+3] partial sums of their lane L.
        for (int i = 0; i < 4; ++i) {
            const __m512d a = _mm512_castps_pd(s2[2 * i]), b = _mm512_castps_pd(s2[2 * i + 1]);
            s4[i] =
                _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
        }
        // Add the four 128-bit lanes together, two levels of lane shuffles.
        for (int i = 0; i < 2; ++i)
            s8[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s4[2 * i], s4[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(s4[2 * i], s4[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_f32x4(s8[0], s8[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                            _mm512_shuffle_f32x4(s8[0], s8[1], _MM_SHUFFLE(3, 1, 3, 1))));
    }
    // In-place 16x16 transpose: r[i][j] <- r[j][i].
    static void transpose(V* r) {
        V t[16], u[16];
        for (int i = 0; i < 8; ++i) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // u[4i+j], 128-bit lane L: column 4L+j of rows 4i..4i+3.
        for (int i = 0; i < 4; ++i) {
            u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
            u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
            u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
            u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
        }
        // Column 4L+j = lane L of u[j], u[4+j], u[8+j], u[12+j]: a 4x4 transpose of lanes.
        for (int j = 0; j < 4; ++j) {
            const V p0 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
            const V p1 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
            const V p2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
            const V p3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 2, 3, 2));
            r[j] = _mm512_shuffle_f32x4(p0, p2, _MM_SHUFFLE(2, 0, 2, 0));
            r[4 + j] = _mm512_shuffle_f32x4(p0, p2, _MM_SHUFFLE(3, 1, 3, 1));
            r[8 + j] = _mm512_shuffle_f32x4(p1, p3, _MM_SHUFFLE(2, 0, 2, 0));
            r[12 + j] = _mm512_shuffle_f32x4(p1, p3, _MM_SHUFFLE(3, 1, 3, 1));
        }
    }
};

#include "engine/cpu/fast_kernels.inl"

}  // namespace
}  // namespace revgraph::cpu::fast

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

namespace revgraph::cpu::fast {
const Ops* ops_avx512() { return &kOps; }
}  // namespace revgraph::cpu::fast

#else
namespace revgraph::cpu::fast {
const Ops* ops_avx512() { return nullptr; }
}  // namespace revgraph::cpu::fast
#endif
