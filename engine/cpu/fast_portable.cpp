// The fast backend's portable fallback: the same kernels and loop order with one float per
// "vector", plain multiply and add (no FMA). Runs on any processor; used where AVX2+FMA is
// missing, and by the tests as a second implementation of the same schedule.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/cpu/fast_kernels.hpp"
#include "engine/model/layout.hpp"

namespace revgraph::cpu::fast {
namespace {

struct Simd {
    using V = float;
    static constexpr int W = 1;
    static constexpr int k1_mr = 4, k1_nr = 4;
    static constexpr int k2_mr = 4, k2_nr = 4;
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

#include "engine/cpu/fast_kernels.inl"

}  // namespace

const Ops* ops_portable() { return &kOps; }

}  // namespace revgraph::cpu::fast
