// The fast backend's portable fallback, used where AVX2+FMA is missing (and run by the tests as
// a third implementation of the same schedule): the same kernels with GCC/Clang generic vectors
// of 4 floats (SSE2 on any x86-64, NEON on ARM), plain multiply and add (no FMA); one float per
// "vector" on a compiler without vector extensions.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/cpu/fast_kernels.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cpu::fast {
namespace {

#if defined(__GNUC__) || defined(__clang__)
struct Simd {
    typedef float V __attribute__((vector_size(16)));
    static constexpr int W = 4;
    static constexpr int k1_mr = 4, k1_nr = 3;  // 12 accumulators + 4 + 1 of 16 SSE registers
    static constexpr int k2_mr = 4, k2_nr = 2;
    static constexpr int kLanes = W;
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
    static V fmadd(V a, V b, V c) { return a * b + c; }
    static V add(V a, V b) { return a + b; }
    static V sub(V a, V b) { return a - b; }
    static V mul(V a, V b) { return a * b; }
    static V div(V a, V b) { return a / b; }
    static V max(V a, V b) { return a > b ? a : b; }
    static V relu(V v) { return v > zero() ? v : zero(); }
    static V pos_select(V m, V v) { return m > zero() ? v : zero(); }
    static V onehot(V lab, float j) { return lab == set1(j) ? set1(1.0f) : zero(); }
    static V exp(V x) {
        for (int i = 0; i < W; ++i) x[i] = std::exp(x[i]);
        return x;
    }
    static constexpr int kGroup = 4;
    static void hsum_group(const V* v, float* out) {
        for (int i = 0; i < kGroup; ++i) out[i] = (v[i][0] + v[i][1]) + (v[i][2] + v[i][3]);
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
#else
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
    static V exp(V x) { return std::exp(x); }
    static constexpr int kGroup = 1;
    static void hsum_group(const V* v, float* out) { out[0] = v[0]; }
    static void transpose(V*) {}
};
#endif

#include "engine/cpu/fast_kernels.inl"

}  // namespace

const Ops* ops_portable() { return &kOps; }

}  // namespace revgraph::cpu::fast
